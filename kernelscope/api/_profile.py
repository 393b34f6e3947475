"""``kscope profile``: run a workload under the vendor tracer, then analyse what it traced."""

from __future__ import annotations

from pathlib import Path

import msgspec

from kernelscope.api._gap import Progress, gap_report
from kernelscope.api._instructions import att, ncu
from kernelscope.model.att import AttReport
from kernelscope.model.gap import GapResult
from kernelscope.model.ncu import NcuResult
from kernelscope.profiling import ProfileConfig, ProfileRun
from kernelscope.profiling import run as run_profiled


class ProfileResult(msgspec.Struct, kw_only=True):
    """``kscope profile``: the run, the gap table of the traces it produced, and for the per-kernel
    tracers their instruction-level analysis (``ncu``: Nsight Compute source counters; ``att``: ATT)."""

    run: ProfileRun
    gap: GapResult | None
    ncu: NcuResult | None = None
    att: AttReport | None = None
    schema: str = "kernelscope.profile-run.v1"


def profile(
    config: ProfileConfig, *, window: str | None = None, quiet_stdout: bool = False, progress: Progress | None = None
) -> ProfileResult:
    """Run ``config.command`` under the vendor tracer, then rank the kernels of what it traced.

    ``quiet_stdout`` sends the workload's stdout to stderr (for callers that print JSON on stdout).
    """
    done = run_profiled(config, quiet_stdout=quiet_stdout)
    ranked: list[str] = done.traces
    result = ProfileResult(run=done, gap=None)
    if done.tracer == "ncu" and done.traces:
        result.ncu = ncu(done.traces[0])
    if done.tracer == "att":  # the traces are ATT folders; the kernel trace beside them has the timings
        result.att = att(done.traces) if done.traces else None
        ranked = sorted(str(p) for p in Path(done.out_dir).glob("**/*kernel_trace.csv"))
    if ranked:
        result.gap = gap_report(ranked, window=window, phase_by=config.phase_by, progress=progress)
    return result
