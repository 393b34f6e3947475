"""What Nsight Compute's source page says about one kernel: per-SASS-instruction counters and stall samples.

Both source readers (``readers/ncu_source.py`` for the ``.ncu-rep``, ``readers/ncu_source_csv.py`` for the
``--page source --csv --print-source sass`` export) produce these records; ``analyses/ncu.py`` summarizes
them into an ``NcuResult`` (``kscope ncu``, schema ``kernelscope.ncu.v1``). Stall samples are counts of PC
samples: every sampling interval each SM sub-partition records one warp's PC and why it could not issue
(``smsp__pcsamp_warps_issue_stalled_<reason>``). Counts absent from the input are ``None``, never 0.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kernelscope.model.frames import Tabular, flat, uniform
from kernelscope.model.hotspots import Hotspot, SourceLine
from kernelscope.model.source import SourceLocation

# ncu's stall reason (the suffix of smsp__pcsamp_warps_issue_stalled_<reason>) -> (short label, meaning).
# Meanings paraphrase the Nsight Compute Profiling Guide ("Warp Stall Reasons"); docs/ncu.md lists them.
# A reason missing here (a newer GPU's) keeps its ncu name and gets no meaning, see ``stall_label``.
STALL_REASONS: dict[str, tuple[str, str]] = {
    "barrier": ("Barrier", "waiting for sibling warps at a CTA barrier (__syncthreads)"),
    "branch_resolving": ("Branch resolving", "waiting for a branch target to be computed and the PC updated"),
    "dispatch_stall": ("Dispatch stall", "ready, but the dispatcher held the instruction back (a pipeline conflict)"),
    "drain": ("Drain", "after EXIT, waiting for the warp's outstanding memory writes to finish"),
    "imc_miss": ("IMC miss", "waiting for an immediate-constant cache miss (c[bank][offset] operands)"),
    "lg_throttle": ("LG throttle", "the local/global memory instruction queue is full"),
    "long_scoreboard": ("Long scoreboard", "waiting for an L1TEX result: global, local, texture or surface memory"),
    "math_pipe_throttle": ("Math pipe throttle", "the execution pipe the next instruction needs is busy"),
    "membar": ("Memory barrier", "waiting on a memory barrier (fence)"),
    "mio_throttle": ("MIO throttle", "the MIO queue (shared memory, special math, dynamic branches) is full"),
    "misc": ("Misc", "a miscellaneous hardware reason"),
    "no_instructions": ("No instruction", "waiting for an instruction fetch or an instruction-cache miss"),
    "not_selected": ("Not selected", "eligible, but the scheduler issued another warp (latency is hidden)"),
    "selected": ("Selected", "issued an instruction: not a stall"),
    "short_scoreboard": ("Short scoreboard", "waiting for an MIO result: shared memory, MUFU special math, BRX"),
    "sleeping": ("Sleeping", "all threads blocked, yielded or in NANOSLEEP"),
    "tex_throttle": ("TEX throttle", "the texture/L1 instruction queue is full"),
    "wait": ("Wait", "a fixed-latency dependency (the compiler's wait count)"),
    "warpgroup_arrive": ("Warpgroup arrive", "waiting on WARPGROUP.ARRIVES / WARPGROUP.WAIT (Hopper wgmma)"),
}


def stall_label(reason: str) -> str:
    """The short human label of an ncu stall reason; unknown reasons keep their own name."""
    known = STALL_REASONS.get(reason)
    return known[0] if known else reason.replace("_", " ").capitalize()


class SassInstruction(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One SASS instruction of a kernel with its source counters.

    ``samples`` is ``smsp__pcsamp_sample_count`` (all samples at this PC, issued or not); ``reasons``
    splits them by stall reason (zero counts left out); ``not_issued`` counts the samples taken when no
    warp issued on the sub-partition. ``executed`` is warp-level ``inst_executed``, ``thread_executed``
    the thread-level ``thread_inst_executed``.
    """

    address: int
    sass: str
    samples: int = 0
    not_issued: int = 0
    reasons: dict[str, int] = msgspec.field(default_factory=dict)
    not_issued_reasons: dict[str, int] = msgspec.field(default_factory=dict)
    executed: int | None = None
    thread_executed: int | None = None
    source: SourceLocation | None = None


class NcuHeadline(msgspec.Struct, kw_only=True):
    """The throughput and occupancy a kernel's SpeedOfLight, Occupancy and LaunchStats sections report."""

    sm_throughput_pct: float | None = None  # Compute (SM) Throughput, % of peak
    memory_throughput_pct: float | None = None  # Memory Throughput: the busiest memory unit, % of peak
    dram_throughput_pct: float | None = None
    achieved_occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    registers: int | None = None  # per thread
    bound: str | None = None  # the SOLBottleneck rule's verdict, e.g. "Memory is more heavily utilized than Compute"


class NcuKernelSource(msgspec.Struct, kw_only=True):
    """One profiled kernel: its headline and, when the SourceCounters section was collected, its instructions.

    ``instructions`` are in address order; ``has_counters`` is False when the input holds no source
    counters for this kernel (then ``instructions`` may still list the SASS). ``source_text`` maps a file to
    its lines where the report imported the source (``--import-source yes``).
    """

    index: int  # position in the input, from 0
    name: str
    mangled: str | None = None
    duration_ns: int | None = None
    headline: NcuHeadline = msgspec.field(default_factory=NcuHeadline)
    function_start: int | None = None  # address of the kernel's first instruction
    instructions: list[SassInstruction] = msgspec.field(default_factory=list)
    has_counters: bool = False
    has_line_info: bool = False
    source_text: dict[str, list[str]] = msgspec.field(default_factory=dict)


class NcuSource(msgspec.Struct, kw_only=True):
    """The source page of every kernel in one input, and what the input could not tell."""

    path: str
    format: str  # "ncu-rep" | "ncu-source-csv"
    kernels: list[NcuKernelSource]
    notes: list[str] = msgspec.field(default_factory=list)


# --- analysis results: kernelscope.ncu.v1 --------------------------------------------------------


class StallShare(msgspec.Struct, kw_only=True):
    reason: str  # ncu's name: smsp__pcsamp_warps_issue_stalled_<reason>
    label: str
    samples: int
    pct: float  # of the kernel's samples
    not_issued: int


class KernelSummary(msgspec.Struct, kw_only=True):
    index: int
    name: str
    mangled: str | None
    duration_ns: int | None
    headline: NcuHeadline
    stall_samples: int | None  # null: no source counters for this kernel
    not_issued_samples: int | None
    executed: int | None
    instructions: int
    stall_breakdown: list[StallShare]
    hotspots: list[Hotspot]
    lines: list[SourceLine]  # empty when the input has no line table (see notes)
    notes: list[str]


class NcuResult(msgspec.Struct, Tabular, kw_only=True):
    source: str
    format: str
    kernels: list[KernelSummary]
    notes: list[str]
    schema: str = "kernelscope.ncu.v1"

    def _rows(self) -> list[dict[str, Any]]:
        """The SASS hotspots of every kernel, each with its kernel's name."""
        return uniform([flat(h, kernel=k.name) for k in self.kernels for h in k.hotspots])
