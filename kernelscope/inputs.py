"""``kernelscope.open``: one profiler output, sniffed once, each view decoded on first use and kept.

Commands that need several views of one file (``report``: the gap table and the op shapes of a trace;
the source page and the launches of an ``.ncu-rep``) take a handle, so no file is decoded twice.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

from kernelscope import readers
from kernelscope.model import Profile
from kernelscope.model.ncu import NcuSource
from kernelscope.model.ops import OpCall


class Input:
    """One profiler output. ``format`` is sniffed once (unless given); ``profile`` holds every record
    (for a Kineto trace, with its ops and their shapes: one decode serves the gap table and the roofline)."""

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
        if self.format == "kineto":
            from kernelscope.readers import kineto

            return kineto.read(self.path, view="shapes")
        if self.format == "ncu-rep":
            from kernelscope.readers import ncu_rep

            return ncu_rep.read(self.path, report=self._ncu_report)
        return readers.read(self.path, fmt=self.format)

    def decoded(self) -> Profile | None:
        """``profile`` if something already decoded it, else None (then stream a cheaper view instead)."""
        return self.__dict__.get("profile")

    @property
    def ops(self) -> list[OpCall]:
        """The op calls that launched kernels, with their recorded shapes (Kineto traces only, else none)."""
        return self.profile.ops if self.format == "kineto" else []

    @property
    def gpu(self) -> str | None:
        """The GPU the input names, if any."""
        return next((d.name for d in self.profile.devices if d.name), None)

    @cached_property
    def ncu(self) -> NcuSource:
        """The Nsight Compute source page (an ``.ncu-rep``, or its source-page CSV export)."""
        from kernelscope.readers import ncu_source, ncu_source_csv

        if ncu_source.is_report(self.path):
            return ncu_source.read(self.path, report=self._ncu_report)
        return ncu_source_csv.read(self.path)

    @cached_property
    def _ncu_report(self) -> Any:
        """The loaded ``.ncu-rep`` (the slow part), shared by ``profile`` and ``ncu``."""
        from kernelscope.readers import ncu_rep

        return ncu_rep.open_report(self.path)


def open(path: str | Path | Input, *, fmt: str | None = None) -> Input:
    """A handle on one profiler output; a handle passes through unchanged."""
    return path if isinstance(path, Input) else Input(path, fmt=fmt)
