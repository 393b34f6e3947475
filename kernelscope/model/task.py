"""Typed records of the optimization loop: a task, one command execution, an eval's result, a ledger line.

Every record is a frozen ``msgspec.Struct``. ``Task`` rejects unknown fields and checks its own values on
decode (a hand-edited ``task.json`` with a typo fails loudly instead of being half-read); results and
ledger lines are written by kscope itself and read back leniently across versions.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Annotated, Any, Literal, get_args

import msgspec
from msgspec import Meta

from kernelscope.model.frames import Tabular, records
from kernelscope.model.levers import Lever
from kernelscope.model.stats import ALPHA, MIN_SAMPLES, RESAMPLES

TASK_SCHEMA = "kernelscope.task.v1"
WORKSPACE_SCHEMA = "kernelscope.workspace.v1"

Direction = Literal["lower", "higher"]
Status = Literal["improved", "regressed", "neutral", "unstable", "failed", "timeout", "needs_baseline", "violation"]
STATUSES: tuple[Status, ...] = get_args(Status)
Role = Literal["baseline", "candidate"]
Phase = Literal["correctness", "warmup", "timed"]

TASK_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"  # a folder name: no '/', no leading '.'
TaskName = Annotated[str, Meta(pattern=TASK_NAME)]
MetricName = Annotated[str, Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")]
Command = Annotated[list[Annotated[str, Meta(min_length=1)]], Meta(min_length=1)]
Glob = Annotated[str, Meta(min_length=1)]


def glob_problem(glob: str) -> str | None:
    """Why an ``allowed`` glob could reach outside its repository (None: it cannot, lexically)."""
    p = PurePosixPath(glob)
    if p.is_absolute():
        return "an absolute path; give a glob relative to the repository root"
    if ".." in p.parts:
        return "'..' would reach outside the repository; give a glob below its root"
    if not p.parts or p.parts[0] == ".git":
        return "expected files of the repository, found its root or .git"
    return None


class WorkspaceConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``kscope.toml``: what makes a folder a kscope workspace."""

    schema: Literal["kernelscope.workspace.v1"]
    created: str
    kscope_version: str


class WorkspaceInfo(msgspec.Struct, frozen=True, kw_only=True):
    """``kscope init --json``: the workspace and whether this call made it."""

    root: str
    new: bool
    created: str
    kscope_version: str
    schema: str = WORKSPACE_SCHEMA


class Environment(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The environment evals run in, recorded when the task was made.

    ``vars`` is that environment less ``stripped`` (profiler switches that would perturb timing: name ->
    the value or entries removed) and less ``inherit`` (names that look like secrets: their values are
    never written and come from the environment of each eval).
    """

    vars: dict[str, str]
    stripped: dict[str, str]
    inherit: list[str]
    python: str
    platform: str
    host: str


class Task(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``tasks/NAME/task.json`` (schema ``kernelscope.task.v1``): what to optimize and how to judge it.

    ``repo`` is an absolute git top level; ``allowed`` are globs relative to it (``*`` within one path
    component, ``**`` across components, a trailing ``/`` means everything below). Commands are argv
    lists run without a shell; with ``shell`` each is one string for ``/bin/sh -c``.
    """

    schema: Literal["kernelscope.task.v1"]
    name: TaskName
    repo: str
    baseline_ref: Annotated[str, Meta(min_length=1)]
    baseline_commit: Annotated[str, Meta(pattern=r"^[0-9a-f]{40,64}$")]  # what the ref named at creation
    allowed: Annotated[list[Glob], Meta(min_length=1)]
    eval_command: Command
    correctness: list[Command] = []
    shell: bool = False
    metric: MetricName
    direction: Direction
    timeout_s: Annotated[float, Meta(gt=0, le=86_400)]
    runs: Annotated[int, Meta(ge=MIN_SAMPLES, le=10_000)]  # fewer cannot reach p < 0.01 in Mann-Whitney
    warmup: Annotated[int, Meta(ge=0, le=1_000)]
    kernel: str | None = None
    lever: Lever | None = None  # the kind of change the task tries (kernelscope/model/levers.py)
    shapes: str | None = None
    target_speedup: Annotated[float, Meta(gt=1)] | None = None
    identity: str | None = None  # what the kernel's name says (kscope classify), from --from-gap
    evidence: list[str] = []  # why this kernel and target: gap share, launching op, roofline (--from-gap)
    environment: Environment
    created: str
    kscope_version: str

    def __post_init__(self) -> None:
        if not PurePosixPath(self.repo).is_absolute():
            raise ValueError(f"repo {self.repo!r} must be an absolute path")
        for g in self.allowed:
            if (problem := glob_problem(g)) is not None:
                raise ValueError(f"allowed glob {g!r}: {problem}")
        if self.shell and any(len(c) != 1 for c in [self.eval_command, *self.correctness]):
            raise ValueError("with shell = true every command is one string for /bin/sh -c")


class EvalRun(msgspec.Struct, frozen=True, kw_only=True):
    """One execution of a command: its outcome, metrics and the tails of its output."""

    role: Role
    phase: Phase
    argv: list[str]
    cwd: str
    returncode: int | None  # None: never started, or killed at the timeout
    timed_out: bool
    wall_s: float
    metrics: dict[str, float]
    error: str | None  # why the run does not count (bad exit, no metric, could not start)
    stdout_tail: str
    stderr_tail: str


class Side(msgspec.Struct, frozen=True, kw_only=True):
    """One side of an eval: where it ran, its samples of the metric and their robust summary."""

    commit: str | None
    cwd: str | None
    samples: list[float] = []
    median: float | None = None
    q1: float | None = None
    q3: float | None = None
    spread: float | None = None  # IQR / median
    diff_hash: str | None = None  # candidate only: sha256 of its working-tree diff to HEAD and untracked files
    dirty: bool | None = None


class Rule(msgspec.Struct, frozen=True, kw_only=True):
    """The decision rule's parameters (``docs/eval.md``), recorded with every result."""

    alpha: float = ALPHA
    min_effect: float = 0.01  # speedup must reach 1 + min_effect (or fall to 1 / (1 + min_effect))
    max_spread: float = 0.05  # IQR / median above this on either side: unstable
    resamples: int = RESAMPLES
    seed: int = 0


class EvalResult(msgspec.Struct, frozen=True, kw_only=True):
    """``runs/NAME/ID/result.json`` and ``kscope eval --json`` (schema ``kernelscope.eval.v1``).

    ``speedup`` is above 1 when the candidate is better: baseline/candidate for a ``lower`` metric,
    candidate/baseline for a ``higher`` one; ``ci`` is its bootstrap interval at ``1 - rule.alpha``.
    """

    id: str
    task: str
    status: Status
    reason: str
    metric: str
    direction: Direction
    runs: int
    warmup: int
    speedup: float | None
    ci: list[float] | None
    p_value: float | None
    baseline: Side
    candidate: Side
    rule: Rule
    baseline_ref: str
    changed_files: list[str]
    violations: list[str]
    shell: bool
    timeout_s: float
    eval_command: list[str]
    correctness: list[list[str]]
    executions: list[EvalRun]
    started: str
    duration_s: float
    result_path: str
    kscope_version: str
    kernel: str | None = None  # the task's, so that the result says what it tried on which kernel
    lever: Lever | None = None
    schema: str = "kernelscope.eval.v1"


class LedgerRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One line of ``ledger.jsonl`` (schema ``kernelscope.ledger.v1``): an eval's verdict and where its
    full result lies (``result``, relative to the workspace)."""

    id: str
    task: str
    time: str  # ISO 8601 UTC, when the eval started
    status: Status
    metric: str
    direction: Direction
    speedup: float | None
    ci: list[float] | None
    p_value: float | None
    baseline_median: float | None
    candidate_median: float | None
    runs: int
    baseline_commit: str | None
    candidate_commit: str | None
    diff_hash: str | None
    result: str
    reason: str
    kernel: str | None = None  # the task's: ``kscope suggest`` demotes levers that failed on a kernel
    lever: Lever | None = None
    schema: str = "kernelscope.ledger.v1"


class TaskSummary(msgspec.Struct, frozen=True, kw_only=True):
    """Per task in a ledger view: ``best_speedup`` counts only ``improved`` evals."""

    task: str
    evals: int
    improved: int
    best_speedup: float | None
    last_status: Status
    last_time: str


class LedgerView(msgspec.Struct, Tabular, frozen=True, kw_only=True):
    """``kscope ledger --json`` (schema ``kernelscope.ledger-view.v1``); ``unreadable`` lists the line
    numbers that did not parse (none unless something other than kscope wrote the file)."""

    records: list[LedgerRecord]
    summary: list[TaskSummary]
    unreadable: list[int]
    schema: str = "kernelscope.ledger-view.v1"

    def _rows(self) -> list[dict[str, Any]]:
        return records(self.records)
