"""The gap table of ``kscope gap`` (``analyses/gap.py`` and ``docs/gap.md`` define its totals)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from kernelscope.model.frames import Tabular, records
from kernelscope.model.records import Dim3, KernelLaunch

GroupBy = Literal["name", "function", "category", "kind", "variant"]


class GapOptions(msgspec.Struct, frozen=True, kw_only=True):
    include_memory: bool = False
    group_by: GroupBy = "name"
    per_rank: bool = False  # one row per (rank, kernel) instead of merging ranks
    include_harness: bool = False  # keep benchmark/tuning bursts in the rows and totals


class Variant(msgspec.Struct, kw_only=True, frozen=True):
    """One compiled variant of a kernel as its launches show it: an autotune config, a template instance or
    a library heuristic launches several under one name. ``registers``: per thread (NVIDIA) or architected
    VGPRs per work-item (AMD); ``shared_bytes``: shared memory / LDS per block. None: not recorded."""

    grid: tuple[int, int, int] | None = None  # blocks (workgroups) per dimension
    block: tuple[int, int, int] | None = None  # threads (work-items) per block
    registers: int | None = None
    shared_bytes: int | None = None

    @classmethod
    def of(cls, k: KernelLaunch) -> Variant:
        """The launch's variant (AMD: architected VGPRs for registers, LDS for shared memory)."""
        return cls(
            grid=_dims(k.grid_blocks),
            block=_dims(k.block),
            registers=k.registers if k.registers is not None else k.vgpr,
            shared_bytes=k.lds_bytes,
        )

    def recorded(self) -> bool:
        return self != _UNRECORDED

    def label(self) -> str:
        parts = []
        if self.grid:
            parts.append("grid " + "x".join(map(str, self.grid)))
        if self.block:
            parts.append("block " + "x".join(map(str, self.block)))
        if self.registers is not None:
            parts.append(f"{self.registers} regs")
        if self.shared_bytes is not None:
            parts.append(f"{self.shared_bytes:,} B shared")
        return ", ".join(parts) or "not recorded"


def _dims(d: Dim3 | None) -> tuple[int, int, int] | None:
    return None if d is None else (d.x, d.y, d.z)


_UNRECORDED = Variant()


class KernelRow(msgspec.Struct, kw_only=True):
    name: str
    calls: int
    total_us: float
    avg_us: float
    median_us: float | None
    min_us: float | None
    max_us: float | None
    std_us: float | None
    pct: float
    kind: str | None = None
    category: str | None = None
    function: str | None = None
    dtype: str | None = None
    rank: int | None = None
    ranks: list[int] = msgspec.field(default_factory=list)
    vendor: str | None = None
    # with --find-sources (kernelscope.sources): where the kernel's code is and how to test it
    source_status: str | None = None
    source: str | None = None  # "repo:path:line"
    source_url: str | None = None
    test_command: str | None = None
    variant: Variant | None = None  # with --group-by variant: the launch configuration this row is
    variants: int | None = None  # distinct launch configurations among its launches (None: none recorded)
    top_variant: Variant | None = None  # the one with the most kernel time: whose code object to read
    # with --code: the code objects that fit its variant (several: ambiguous), and the compiled config when
    # one does (Triton's num_warps, num_stages, shared...; analyses/variants.py)
    code: list[str] = msgspec.field(default_factory=list)
    config: dict[str, Any] | None = None
    # with --window steady: calls and kernel time per steady iteration (totals / iterations)
    calls_per_iteration: float | None = None
    us_per_iteration: float | None = None


class IdleBreakdown(msgspec.Struct, kw_only=True):
    """The idle time by cause (``analyses/idle.py``): the host had not launched the next kernel yet, the
    next kernel was queued and started right after, or anything else; the three sum to ``idle_time_us``."""

    host_wait_us: float
    kernel_wait_us: float
    other_us: float


class LaunchDelay(msgspec.Struct, kw_only=True):
    """GPU start - host launch call, over the launch calls the trace links to their kernels (a graph launch
    once, to its first kernel): microseconds when the host keeps up only just in time, milliseconds when a
    deep queue is ahead of it."""

    median_us: float
    p95_us: float
    linked: int  # launches whose API call the trace links (of ``launches``)
    call_median_us: float | None = None  # the launch call's own duration (cudaLaunchKernel, cudaGraphLaunch...)
    shorter_than_call: int = 0  # linked calls whose kernels ran for less time, together, than the call took


HARNESS_PHASE = "harness"  # with --phase-by: the benchmark and tuning bursts set aside, as their own phase


class HarnessBurst(msgspec.Struct, kw_only=True):
    """A stretch of benchmarking or tuning found in the trace (``analyses/harness.py``), set aside from the
    workload's numbers unless ``--include-harness``."""

    rule: str  # how it was found: "hook-annotation" (exact), "flush-alternation" or "op-tuning" (rules)
    # what benchmarked: the annotation's harness ("triton.autotune", "torch.utils.benchmark"...) or the rule's guess
    harness: str = ""
    kernels: list[str]  # the timed call's kernels
    flush: str  # the kernel that cleared the cache before each timed call ("" where none did)
    launches: int  # of the burst, flushes included
    flushes: int
    time_us: float  # kernel time of those launches
    span_us: float  # its first launch's start to its last launch's end
    start_us: float  # on the trace's clock
    rank: int | None = None
    device: int | None = None


class Steady(msgspec.Struct, kw_only=True):
    """The steady iterations of a loop (``analyses/steady.py``): from step markers where the trace has them,
    else from the repeating kernel sequence of the busiest device."""

    period: int  # launches per iteration (on that device)
    iterations: int
    first_launch: int  # index of the first steady iteration's first launch, in that device's time order
    start_us: float  # the first steady iteration's start (trace clock)
    end_us: float  # the last steady iteration's last kernel's end
    iteration_us: float  # median iteration length: start to the next iteration's start
    source: str  # "kernel sequence" or "ProfilerStep markers"
    rank: int | None = None
    device: int | None = None


class HostActivity(msgspec.Struct, kw_only=True):
    """Host work the GPU waited under: the host-wait idle time inside this name's intervals (ops, the
    workload's ranges, Python frames, runtime calls such as a sync), each wait counted once, for the
    innermost interval around it (``analyses/idle.py``)."""

    name: str
    idle_us: float
    intervals: int  # of this name with some of that wait inside


class GapTotals(msgspec.Struct, kw_only=True):
    kernel_time_us: float
    busy_time_us: float | None
    wall_time_us: float | None
    idle_time_us: float | None
    launches: int
    kernels: int
    memory_time_us: float
    memory_ops: int
    devices: int
    ranks: int
    dropped_records: int = 0  # records the readers dropped for impossible times (each input said so in a warning)
    idle_breakdown: IdleBreakdown | None = None  # only where kernels are linked to their launch calls
    launch_delay_us: LaunchDelay | None = None
    excluded_harness_us: float = 0.0  # kernel time of the launches set aside as harness (``GapResult.harness``)
    excluded_harness_launches: int = 0


class GapResult(msgspec.Struct, Tabular, kw_only=True):
    totals: GapTotals
    kernels: list[KernelRow]
    options: GapOptions = GapOptions()
    sources: list[str] = msgspec.field(default_factory=list)
    window: str | None = None
    phase: str | None = None
    phases: list[GapResult] = msgspec.field(default_factory=list)  # one result per phase with --phase-by
    warnings: list[str] = msgspec.field(default_factory=list)
    harness: list[HarnessBurst] = msgspec.field(default_factory=list)  # found; set aside unless include_harness
    steady: list[Steady] = msgspec.field(default_factory=list)  # with --window steady: per rank, what was found
    host_activity: list[HostActivity] = msgspec.field(default_factory=list)  # top host work under idle gaps
    schema: str = "kernelscope.gap.v1"

    def _rows(self) -> list[dict[str, Any]]:
        return records(self.kernels)
