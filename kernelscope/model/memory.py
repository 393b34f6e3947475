"""Typed records of the iteration memory: ``memory/v<N>.json`` and the views ``kscope memory`` prints.

``MemoryRecord`` is the contract, constraints included (``msgspec.Meta``: patterns, ranges, non-empty text):
decoding into it is the validation of every write and every read (``kernelscope.loop.memory``), and
``json_schema()`` is the JSON Schema for other readers, checked in as ``kernelscope/data/schemas/memory.v1.json``.
"""

from __future__ import annotations

import inspect
import json
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from kernelscope.model.levers import Lever
from kernelscope.model.task import Direction, Status

MEMORY_SCHEMA = "kernelscope.memory.v1"
MEMORY_LIST_SCHEMA = "kernelscope.memory-list.v1"
MEMORY_SUMMARY_SCHEMA = "kernelscope.memory-summary.v1"
MEMORY_INIT_SCHEMA = "kernelscope.memory-init.v1"

CorrectnessStatus = Literal["passed", "failed", "not_run"]
MaskAction = Literal["mask", "unmask"]
NONBLANK = r"\S"
Text = Annotated[str, Meta(pattern=NONBLANK)]
UtcTime = Annotated[str, Meta(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|\+00:00)$")]
Metrics = dict[Annotated[str, Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")], int | float]


class Performance(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The measured effect: an eval's verdict (``memory new --from-eval``) or figures set by hand."""

    metric: Annotated[str, Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")]
    direction: Direction
    status: Status
    baseline: float | None = None  # medians of the metric
    candidate: float | None = None
    speedup: Annotated[float, Meta(gt=0)] | None = None  # above 1: the candidate is better
    ci: Annotated[list[float], Meta(min_length=2, max_length=2)] | None = None  # of the speedup: [low, high]
    p_value: Annotated[float, Meta(ge=0, le=1)] | None = None
    runs: Annotated[int, Meta(ge=1)] | None = None
    eval_id: Text | None = None  # its ledger line and runs/TASK/ID/
    result: Text | None = None  # runs/TASK/ID/result.json, relative to the workspace
    diff_hash: Text | None = None  # sha256 of the candidate's working tree diff


class Evidence(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One step from a profile to a change: what was seen, what it means, what was done about it."""

    evidence: Text
    inference: Text
    action: Text
    source: Text | None = None  # e.g. "kscope att --json hotspots[0]"


class Correctness(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    status: CorrectnessStatus
    commands: list[Text] = []
    notes: Text | None = None


class IsaMetrics(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Code-object figures (``kscope isa``) before and after: registers, spills, lds_bytes, occupancy, ..."""

    before: Metrics = {}
    after: Metrics = {}
    source: Text | None = None


class Attempt(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One thing tried on the way, and what came of it."""

    what: Text
    result: Text


class Reference(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    title: Text
    url: Text


class Check(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: Text
    passed: bool
    detail: Text | None = None


class QualityGate(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The checks the iteration had to pass before it counts; ``passed`` is false when any check failed."""

    passed: bool
    checks: list[Check] = []

    def __post_init__(self) -> None:  # on decode, msgspec reports this ValueError with the JSON path
        if self.passed and not all(c.passed for c in self.checks):
            raise ValueError("passed is true but a check failed")


_GATE_RULE = {  # QualityGate.__post_init__ for other readers of the JSON Schema
    "if": {
        "required": ["checks"],
        "properties": {"checks": {"contains": {"properties": {"passed": {"const": False}}}}},
    },
    "then": {"properties": {"passed": {"const": False}}},
}


class Mask(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Who hid the record from list, summary and latest, when and why."""

    by: Text
    at: UtcTime
    reason: Text


class MaskEvent(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Every mask and unmask, oldest first: kept after an unmask."""

    action: MaskAction
    by: Text
    at: UtcTime
    reason: Text | None = None


class MemoryRecord(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``memory/v<N>.json`` (schema ``kernelscope.memory.v1``, docs/memory.md): one iteration of the loop.

    ``masked`` hides the record from ``list``, ``summary`` and ``latest``; ``history`` keeps every mask
    and unmask, so who hid what and when survives an unmask. kscope also checks what JSON Schema cannot
    state: ``version`` is the N of the file name, and ``masked`` agrees with the last ``history`` event.
    """

    schema: Literal["kernelscope.memory.v1"]
    version: Annotated[int, Meta(ge=1)]
    category: Lever
    title: Text | None = None  # what the iteration changed, in one line
    hypothesis: Text | None = None  # why it should be faster
    task: Annotated[str, Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")] | None = None
    kernel: Text | None = None
    author: Text
    created: UtcTime
    performance: Performance | None = None
    evidence: list[Evidence] = []
    correctness: Correctness | None = None
    isa_metrics: IsaMetrics | None = None
    search_log: list[Text | Attempt] = []
    pitfalls: list[Text] = []
    references: list[Text | Reference] = []
    quality_gate: Annotated[QualityGate | None, Meta(extra_json_schema=_GATE_RULE)] = None
    commit: Annotated[str, Meta(pattern=r"^[0-9a-f]{7,64}$")] | None = None  # once the change is committed
    masked: Mask | None = None
    history: list[MaskEvent] = []

    @property
    def won(self) -> bool:
        """Whether kscope's statistics called it an improvement (the only thing that counts as a win)."""
        return self.performance is not None and self.performance.status == "improved"


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``MemoryRecord``: ``kernelscope/data/schemas/memory.v1.json``."""
    schema = msgspec.json.schema(MemoryRecord)
    for d in schema["$defs"].values():  # the docstrings, as Python >= 3.13 compiles them on every version
        if "description" in d:
            d["description"] = inspect.cleandoc(d["description"])
    draft = "https://json-schema.org/draft/2020-12/schema"
    return {"$schema": draft, "$id": "urn:kernelscope:schema:memory.v1"} | schema


def json_schema_text() -> str:
    """``json_schema()`` as the checked-in file holds it: indented, a value on one line where it fits."""

    def dump(node: Any, indent: str) -> str:
        flat = json.dumps(node)
        if len(indent) + len(flat) <= 110 or not isinstance(node, dict | list):
            return flat
        inner = indent + "  "
        if isinstance(node, dict):
            items, (opening, closing) = [f"{json.dumps(k)}: {dump(v, inner)}" for k, v in node.items()], "{}"
        else:
            items, (opening, closing) = [dump(v, inner) for v in node], "[]"
        return opening + ",".join(f"\n{inner}{item}" for item in items) + f"\n{indent}{closing}"

    return dump(json_schema(), "") + "\n"


class MemoryFolder(msgspec.Struct, frozen=True, kw_only=True):
    """``kscope memory init --json``: the folder, whether this call set it up, what it holds."""

    folder: str
    new: bool  # this call wrote memory/README.md
    records: int
    masked: int
    schema_file: str  # MemoryRecord's JSON Schema, for readers other than kscope
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
