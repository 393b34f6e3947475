"""Typed records of the iteration memory: ``memory/v<N>.json`` and the views ``kscope memory`` prints.

The JSON Schema ``kernelscope/data/schemas/memory.v1.json`` is the contract: every write and every read
is validated against it first (``kernelscope.loop.memory``), so the fine constraints (patterns, ranges,
non-empty text) live there only. These Structs mirror its shape — the same keys, the same required ones
(a field without a default here is required there), the same enums — which tests/test_memory.py checks.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from kernelscope.model.levers import Lever
from kernelscope.model.task import Direction, Status

MEMORY_SCHEMA = "kernelscope.memory.v1"
MEMORY_LIST_SCHEMA = "kernelscope.memory-list.v1"
MEMORY_SUMMARY_SCHEMA = "kernelscope.memory-summary.v1"
MEMORY_INIT_SCHEMA = "kernelscope.memory-init.v1"

CorrectnessStatus = Literal["passed", "failed", "not_run"]
MaskAction = Literal["mask", "unmask"]


class Performance(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The measured effect: an eval's verdict (``memory new --from-eval``) or figures set by hand."""

    metric: str
    direction: Direction
    status: Status
    baseline: float | None = None  # medians of the metric
    candidate: float | None = None
    speedup: float | None = None  # above 1: the candidate is better
    ci: list[float] | None = None
    p_value: float | None = None
    runs: int | None = None
    eval_id: str | None = None
    result: str | None = None  # runs/TASK/ID/result.json, relative to the workspace
    diff_hash: str | None = None


class Evidence(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One step from a profile to a change: what was seen, what it means, what was done about it."""

    evidence: str
    inference: str
    action: str
    source: str | None = None  # e.g. "kscope att --json hotspots[0]"


class Correctness(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    status: CorrectnessStatus
    commands: list[str] = []
    notes: str | None = None


class IsaMetrics(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Code-object figures (``kscope isa``) before and after: registers, spills, lds_bytes, occupancy, ..."""

    before: dict[str, int | float] = {}
    after: dict[str, int | float] = {}
    source: str | None = None


class Attempt(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    what: str
    result: str


class Reference(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    title: str
    url: str


class Check(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    passed: bool
    detail: str | None = None


class QualityGate(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    passed: bool
    checks: list[Check] = []


class Mask(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    by: str
    at: str  # ISO 8601 UTC
    reason: str


class MaskEvent(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    action: MaskAction
    by: str
    at: str
    reason: str | None = None


class MemoryRecord(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``memory/v<N>.json`` (schema ``kernelscope.memory.v1``): one iteration of the loop.

    ``masked`` hides the record from ``list``, ``summary`` and ``latest``; ``history`` keeps every mask
    and unmask, so who hid what and when survives an unmask.
    """

    schema: Literal["kernelscope.memory.v1"]
    version: int
    category: Lever
    title: str | None = None
    hypothesis: str | None = None
    task: str | None = None
    kernel: str | None = None
    author: str
    created: str  # ISO 8601 UTC
    performance: Performance | None = None
    evidence: list[Evidence] = []
    correctness: Correctness | None = None
    isa_metrics: IsaMetrics | None = None
    search_log: list[str | Attempt] = []
    pitfalls: list[str] = []
    references: list[str | Reference] = []
    quality_gate: QualityGate | None = None
    commit: str | None = None
    masked: Mask | None = None
    history: list[MaskEvent] = []

    @property
    def won(self) -> bool:
        """Whether kscope's statistics called it an improvement (the only thing that counts as a win)."""
        return self.performance is not None and self.performance.status == "improved"


class MemoryFolder(msgspec.Struct, frozen=True, kw_only=True):
    """``kscope memory init --json``: the folder, whether this call set it up, what it holds."""

    folder: str
    new: bool  # this call wrote memory/README.md
    records: int
    masked: int
    schema_file: str  # the JSON Schema records are validated against
    schema: str = MEMORY_INIT_SCHEMA


class MemoryList(msgspec.Struct, frozen=True, kw_only=True):
    """``kscope memory list --json``: the records that pass the filters, oldest first."""

    records: list[MemoryRecord]
    hidden_masked: int  # masked records that passed the other filters but were left out
    schema: str = MEMORY_LIST_SCHEMA


class CategorySummary(msgspec.Struct, frozen=True, kw_only=True):
    """Per optimization category: ``wins`` and ``best_speedup`` count only ``improved`` iterations."""

    category: Lever
    iterations: int
    wins: int
    best_speedup: float | None
    best_version: int | None
    latest: int  # version of the category's latest iteration


class IsaProgress(msgspec.Struct, frozen=True, kw_only=True):
    """A code-object metric from the earliest ``before`` to the latest ``after`` that name it."""

    metric: str
    before: int | float | None
    after: int | float | None


class Progress(msgspec.Struct, frozen=True, kw_only=True):
    """Per task and kernel. Evals measure against the task's fixed baseline, so the best improved
    speedup is the progress made so far, not a factor to multiply."""

    task: str | None
    kernel: str | None
    iterations: int
    wins: int
    best_speedup: float | None
    best_version: int | None
    isa: list[IsaProgress]


class Pitfall(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    category: Lever
    text: str


class MemorySummary(msgspec.Struct, frozen=True, kw_only=True):
    """``kscope memory summary --json``: what was tried, what won, the pitfalls met, the progress."""

    records: int
    hidden_masked: int
    categories: list[CategorySummary]
    progress: list[Progress]
    pitfalls: list[Pitfall]
    schema: str = MEMORY_SUMMARY_SCHEMA
