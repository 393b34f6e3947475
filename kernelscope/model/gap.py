"""The gap table of ``kscope gap`` (``analyses/gap.py`` and ``docs/gap.md`` define its totals)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from kernelscope.model.frames import Tabular, records

GroupBy = Literal["name", "function", "category", "kind"]


class GapOptions(msgspec.Struct, frozen=True, kw_only=True):
    include_memory: bool = False
    group_by: GroupBy = "name"
    per_rank: bool = False  # one row per (rank, kernel) instead of merging ranks


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


class GapResult(msgspec.Struct, Tabular, kw_only=True):
    totals: GapTotals
    kernels: list[KernelRow]
    options: GapOptions = GapOptions()
    sources: list[str] = msgspec.field(default_factory=list)
    window: str | None = None
    phase: str | None = None
    phases: list[GapResult] = msgspec.field(default_factory=list)  # one result per phase with --phase-by
    warnings: list[str] = msgspec.field(default_factory=list)
    schema: str = "kernelscope.gap.v1"

    def _rows(self) -> list[dict[str, Any]]:
        return records(self.kernels)
