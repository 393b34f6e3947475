"""Records of ``kscope suggest`` (schema ``kernelscope.suggest.v1``): ranked experiments, each a lever to
pull on one kernel, argued from the evidence kscope holds (``analyses/suggest/``, ``docs/suggest.md``)."""

from __future__ import annotations

from typing import Literal

import msgspec

from kernelscope.model.levers import Lever
from kernelscope.model.task import Direction, Status

RiskLevel = Literal["low", "medium", "high"]


class Step(msgspec.Struct, frozen=True, kw_only=True):
    """One line of the rationale: a fact quoted with its source (``ncu: ...``, ``att DIR: ...``), what it
    means for this kernel, and what to do about it."""

    evidence: str
    inference: str
    action: str


class Risk(msgspec.Struct, frozen=True, kw_only=True):
    level: RiskLevel
    why: str


class Effect(msgspec.Struct, frozen=True, kw_only=True):
    """An upper bound on the time the experiment can save, never a prediction.

    ``kernel_pct`` bounds the saving as a share of the kernel's time, ``total_pct`` as a share of the
    GPU time of the evidence (``kernel_pct`` x the kernel's share); null when the evidence bounds nothing.
    """

    kernel_pct: float | None
    total_pct: float | None
    basis: str


class Contract(msgspec.Struct, frozen=True, kw_only=True):
    """How the experiment is judged: ``kscope task new`` with these settings, then ``kscope eval``."""

    metric: str
    direction: Direction
    measure: str  # what the eval command must print
    correctness: str  # the gate the candidate must pass
    command: str  # the ``kscope task new`` line that starts it (upper-case words are placeholders)


class KernelRef(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    function: str  # the short name a developer greps for (kscope classify)
    identity: str  # what the name says: kind, category, dtype, tile (``kscope classify``)
    share_pct: float | None  # of the GPU time in the evidence; null: no input timed it
    share_source: str


class Demotion(msgspec.Struct, frozen=True, kw_only=True):
    """A ledger record of the same lever on the same kernel that did not work, and the factor it cost."""

    id: str
    task: str
    time: str
    status: Status
    factor: float


class Experiment(msgspec.Struct, kw_only=True):
    rank: int
    score: float  # share x confidence x effect x demotion factors (docs/suggest.md)
    lever: Lever
    rule: str  # the rule of analyses/suggest/rules.py that proposed it
    kernel: KernelRef
    files: list[str]  # source and test files in --repo (relative to it); empty without one
    hotspots: list[str]  # "file:line" the instruction-level evidence points at
    rationale: list[Step]
    risk: Risk
    expected: Effect
    contract: Contract
    demoted_by: list[Demotion] = msgspec.field(default_factory=list)


class SuggestResult(msgspec.Struct, kw_only=True):
    experiments: list[Experiment]
    evidence_used: dict[str, list[str]]  # input kind (trace, ncu, att, isa, ledger, repo) -> paths
    notes: list[str]
    schema: str = "kernelscope.suggest.v1"
