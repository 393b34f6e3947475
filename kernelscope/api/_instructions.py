"""Instruction-level traces: ``kscope ncu`` (Nsight Compute) and ``kscope att`` (AMD ATT)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from kernelscope.analyses.att import analyze as analyze_att
from kernelscope.analyses.ncu import selector, summarize
from kernelscope.errors import InputError
from kernelscope.inputs import open_profile
from kernelscope.model.att import AttReport
from kernelscope.model.ncu import NcuResult, NcuSource
from kernelscope.readers import att as att_reader
from kernelscope.readers import ncu_source, ncu_source_csv


def ncu(path: str | Path, *, kernel: str | None = None, top: int = 10, context: int = 2) -> NcuResult:
    """``kscope ncu``: per kernel of an ``.ncu-rep`` (or its source-page CSV), the stall breakdown, the
    ``top`` SASS hotspots with ``context`` neighbours, and the top source lines; ``kernel`` is a regex."""
    where = open_profile(path).path  # also the folder kscope profile --tracer ncu wrote
    return summarize(source_page(where, kernel), kernel=kernel, top=top, context=context)


def source_page(path: Path, kernel: str | None = None) -> NcuSource:
    """The source page of an ``.ncu-rep`` (only kernels matching ``kernel``) or of its CSV export."""
    return ncu_source.read(path, select=selector(kernel)) if ncu_source.is_report(path) else ncu_source_csv.read(path)


def att(
    paths: Sequence[str | Path],
    *,
    top: int = 10,
    context: int = 3,
    bins: int = 200,
    arch: str | None = None,
    code_only: bool = False,
    workers: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> AttReport:
    """``kscope att``: stall hotspots, wave states, occupancy and the code.json cross-check of decoded ATT
    folders (each path a ``ui_output_agent_*`` folder or a folder holding them).

    ``top`` hotspots and source lines (0: all), ``context`` instructions around each hotspot, ``bins``
    points of the wave-state timeline, ``arch`` the occupancy rules (default: from the capture),
    ``code_only`` reads code.json alone (no wave states, measured occupancy or cross-check), ``workers``
    processes for large folders; ``progress(folder, wave files read, wave files)``.
    """
    if not paths:
        raise InputError("no ATT folders given")
    if top < 0 or context < 0 or bins < 1 or (workers is not None and workers < 1):
        raise InputError(
            f"--top {top}, --context {context}, --bins {bins}, --workers {workers}: "
            "need top and context >= 0, bins and workers >= 1"
        )
    folders = [f for p in paths for f in att_reader.find_captures(Path(p))]  # every path checked before reading
    captures = []
    for folder in folders:
        tick = (lambda done, total, f=str(folder): progress(f, done, total)) if progress else None
        capture = att_reader.read(folder, waves=not code_only, workers=workers, progress=tick)
        captures.append(analyze_att(capture, top=top, context=context, bins=bins, arch=arch))
    return AttReport(captures=captures)
