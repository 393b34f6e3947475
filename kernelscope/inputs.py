"""``kernelscope.open``: one profiler output, sniffed once, each view decoded on first use and kept
(``profile``, ``ops``, ``ncu``, ``att``, ``code``).

Commands that need several views of one file (``report``: the gap table and the op shapes of a trace;
the source page and the launches of an ``.ncu-rep``) take a handle, so no file is decoded twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelscope import readers
from kernelscope.errors import FormatError, InputError
from kernelscope.model import Profile
from kernelscope.model.columns import LaunchColumns
from kernelscope.model.ncu import NcuSource
from kernelscope.model.ops import OpCall
from kernelscope.readers import folder

if TYPE_CHECKING:
    from kernelscope.model.att import AttReport
    from kernelscope.model.codeobj import CodeObject


class Input:
    """One profiler output. ``format`` is sniffed once (unless given); each view is decoded on first use.
    A Kineto trace's ``ops`` come from the decode that also gives its gap table's columns (``columns``)."""

    def __init__(self, path: str | Path, *, fmt: str | None = None) -> None:
        self.path = Path(path)
        self._given, self._fmt = str(path), fmt

    def __str__(self) -> str:
        return self._given  # as the caller spelled it ("./t.json"), which outputs echo

    def __repr__(self) -> str:
        return f"kernelscope.open({self._given!r})"

    @cached_property
    def format(self) -> str:
        return self._fmt or readers.detect(self.path)

    @cached_property
    def profile(self) -> Profile:
        """Every record (launches linked to their API calls, annotations): what step windows need."""
        if self.format == "ncu-rep":
            from kernelscope.readers import ncu_rep

            return ncu_rep.read(self.path, report=self._ncu_report)
        return readers.read(self.path, fmt=self.format)

    @cached_property
    def _shapes(self) -> tuple[Profile, list[LaunchColumns]]:
        from kernelscope.readers import kineto

        return kineto.read_ops(self.path)

    @property
    def ops(self) -> list[OpCall]:
        """The workload's op calls that launched kernels, with their recorded shapes (those of benchmark
        and tuning bursts set aside, as the gap table sets them aside); only a Kineto trace has them."""
        return self._workload_ops

    @property
    def all_ops(self) -> list[OpCall]:
        """Every op call that launched kernels, the harness's included."""
        if self.format != "kineto":
            raise FormatError(
                self, "a PyTorch profiler (Kineto) trace, which records op shapes", f"a {self.format} file"
            )
        return self._shapes[0].ops

    @cached_property
    def _workload_ops(self) -> list[OpCall]:
        from kernelscope.analyses.gap import GapAccumulator
        from kernelscope.analyses.harness import workload_calls

        calls = self.all_ops
        if not any(c.input_dims for c in calls):  # profiled without record_shapes: no op has its inputs
            return []
        acc = GapAccumulator()
        for cols in self._shapes[1]:
            acc.add_columns(cols)
        return workload_calls(calls, acc.harness())

    def columns(self) -> list[LaunchColumns] | None:
        """The kernel and memory-op columns if a decode already made them (``ops``), else None."""
        done = self.__dict__.get("_shapes")
        return None if done is None else done[1]

    @property
    def gpu(self) -> str | None:
        """The GPU the input names, or the one its device properties identify (``DeviceInfo.label``), if any."""
        head = self._shapes[0] if self.format == "kineto" else self.profile
        return next((d.label for d in head.devices if d.label), None)

    @cached_property
    def ncu(self) -> NcuSource:
        """The Nsight Compute source page (an ``.ncu-rep``, or its source-page CSV export)."""
        from kernelscope.readers import ncu_source, ncu_source_csv

        if ncu_source.is_report(self.path):
            return ncu_source.read(self.path, report=self._ncu_report)
        return ncu_source_csv.read(self.path)

    @cached_property
    def att(self) -> AttReport:
        """The decoded ATT capture(s) of a ``ui_output_agent_*`` folder or a folder holding them, analysed
        with ``kscope att``'s defaults."""
        from kernelscope.api import att

        return att([self.path])

    @cached_property
    def code(self) -> list[CodeObject]:
        """The kernels of a code object, or of every code object in a folder (``kscope isa``'s defaults)."""
        from kernelscope.api import isa

        return isa([self.path])

    @cached_property
    def _ncu_report(self) -> Any:
        """The loaded ``.ncu-rep`` (the slow part), shared by ``profile`` and ``ncu``."""
        from kernelscope.readers import ncu_rep

        return ncu_rep.open_report(self.path)


def open(path: str | Path | Input, *, fmt: str | None = None) -> Input:
    """A handle on one input (a profiler output, an ATT folder, a code object); a handle passes through."""
    return path if isinstance(path, Input) else Input(path, fmt=fmt)


def open_profile(path: str | Path | Input, *, fmt: str | None = None) -> Input:
    """A handle on one profiler output, also given as the folder holding it (``kscope profile --out``, a
    rocprofv3 output folder of one process); a folder of several ranks is an error naming them."""
    handles = open_all([path], fmt=fmt)
    if len(handles) > 1:
        listed = ", ".join(str(h) for h in handles)
        raise InputError(f"{path}: holds {len(handles)} ranks ({listed}); this command reads one, pass it")
    return handles[0]


def open_all(paths: Iterable[str | Path | Input], *, fmt: str | None = None) -> list[Input]:
    """Handles on the profiler outputs ``paths`` name: a folder gives every rank of the one run it holds."""
    out: list[Input] = []
    for p in paths:
        out += [p] if isinstance(p, Input) else [Input(f, fmt=fmt) for f in folder.files(p)]
    return out
