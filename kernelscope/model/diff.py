"""Two profiles compared kernel by kernel: ``kscope diff`` (``analyses/diff.py``, ``docs/diff.md``)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from kernelscope.errors import InputError
from kernelscope.model.frames import Tabular, records
from kernelscope.model.gap import GroupBy
from kernelscope.model.stats import ALPHA, MIN_SAMPLES, RESAMPLES

Status = Literal["common", "added", "removed"]
Verdict = Literal["slower", "faster", "not_significant", "n/a", "added", "removed"]


class DiffOptions(msgspec.Struct, frozen=True, kw_only=True):
    group_by: GroupBy = "name"
    alpha: float = ALPHA
    min_launches: int = MIN_SAMPLES
    resamples: int = RESAMPLES
    seed: int | None = 0  # a fixed default: the same inputs give the same CIs

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise InputError(f"--alpha {self.alpha}: expected a significance level between 0 and 1, e.g. 0.01")
        if self.min_launches < 2 or self.resamples < 100:
            raise InputError(
                f"--min-launches {self.min_launches} / --resamples {self.resamples}: "
                "expected at least 2 launches per side and 100 bootstrap resamples"
            )


class DiffRow(msgspec.Struct, kw_only=True):
    """One kernel (or group) in A and/or B. Times in ns; ``None`` where a side has no such kernel."""

    name: str
    status: Status
    verdict: Verdict
    calls_a: int
    calls_b: int
    total_a_ns: int
    total_b_ns: int
    delta_ns: int
    delta_pct: float | None  # of total_a_ns; None for added kernels
    delta_share_pct: float | None  # of the change in total kernel time; None when that is 0
    count_effect_ns: float | None  # common rows: the part of delta_ns due to the change in calls
    per_call_effect_ns: float | None  # ... and the part due to the change in mean duration
    median_a_ns: float | None
    median_b_ns: float | None
    iqr_a_ns: float | None
    iqr_b_ns: float | None
    median_ratio: float | None  # median B / median A
    ci_low: float | None  # bootstrap CI of median_ratio
    ci_high: float | None
    p_value: float | None  # two-sided Mann-Whitney U on the per-launch durations
    significant: bool | None
    reason: str | None = None  # why significance is n/a
    kind: str | None = None
    category: str | None = None
    function: str | None = None
    dtype: str | None = None


class Change(msgspec.Struct, kw_only=True):
    a: int | None
    b: int | None
    delta: int | None
    delta_pct: float | None


class DiffCounts(msgspec.Struct, kw_only=True):
    common: int
    added: int
    removed: int
    slower: int
    faster: int
    not_significant: int
    untested: int  # common rows whose significance is n/a
    calls_changed: int  # common rows with different call counts
    added_time_ns: int
    removed_time_ns: int


class DiffResult(msgspec.Struct, Tabular, kw_only=True):
    totals: dict[str, Change]  # kernel_time_ns, busy_time_ns, wall_time_ns, idle_time_ns, launches, kernels
    counts: DiffCounts
    kernels: list[DiffRow]
    options: DiffOptions = DiffOptions()
    sources_a: list[str] = msgspec.field(default_factory=list)
    sources_b: list[str] = msgspec.field(default_factory=list)
    window: str | None = None
    warnings: list[str] = msgspec.field(default_factory=list)
    schema: str = "kernelscope.diff.v1"

    def _rows(self) -> list[dict[str, Any]]:
        return records(self.kernels)
