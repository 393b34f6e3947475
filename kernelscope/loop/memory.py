"""The iteration memory: ``memory/v<N>.json`` records, validated on every write and every read.

Each record is decoded into ``MemoryRecord``, whose constraints are the contract (its JSON Schema is
``kernelscope/data/schemas/memory.v1.json``), plus the two facts JSON Schema cannot state: ``version`` is
the N of the file name, and ``masked`` agrees with the last ``history`` event (so a record cannot be
unmasked without a trace). A write validates by that same decode, of the bytes it is about to write.
Writers hold ``memory/.lock``: a new record's N is one more than the highest on disk, and
``set``/``mask``/``unmask`` read, change and write without losing a concurrent writer's change. Files are
replaced atomically (``write_atomic``), so a reader takes no lock and sees a whole record or none — which
a file created empty with ``O_EXCL`` and then filled would not give it. Masked records stay on disk and
leave only the views (``select``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from kernelscope.errors import FormatError, InputError, MissingToolError, ToolFailedError
from kernelscope.loop import git, ledger
from kernelscope.loop.workspace import Workspace, locked, write_atomic
from kernelscope.model import text
from kernelscope.model.files import read_bytes
from kernelscope.model.levers import LEVERS, Lever
from kernelscope.model.memory import (
    MEMORY_SCHEMA,
    NONBLANK,
    CategorySummary,
    Correctness,
    CorrectnessStatus,
    IsaProgress,
    Mask,
    MaskEvent,
    MemoryFolder,
    MemoryRecord,
    MemorySummary,
    Performance,
    Pitfall,
    Progress,
)
from kernelscope.model.task import EvalResult, LedgerRecord

RECORD_FILE = re.compile(r"v([1-9][0-9]{0,8})\.json")
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")  # one folder name under runs/TASK/
README = """\
# Iteration memory

One record per optimization iteration: `v1.json`, `v2.json`, ... (schema `kernelscope.memory.v1`).
Write them with `kscope memory new|set|mask|unmask`, which validate every change; read them with
`kscope memory list|show|summary|latest`. A hand edit that breaks the schema stops every `kscope memory`
command with the file and the JSON path at fault. Other files in this folder are left alone.
"""
_FIX = "fix or restore the file (docs/memory.md lists the fields); kscope writes only valid records"


def schema_file() -> Path:
    return Path(str(resources.files("kernelscope") / "data" / "schemas" / "memory.v1.json"))


_AT = re.compile(r"(?P<what>.*) - at `(?P<where>\$.*)`", re.DOTALL)  # how msgspec ends its messages


def parse(data: bytes, version: int) -> MemoryRecord:
    """``data`` as the record ``v<version>``, validated; a violation raises ``ValueError("at $.path: what")``
    (``msgspec.DecodeError``, a ``ValueError`` too, when it is not JSON)."""
    try:
        r = text.json(data, type=MemoryRecord)
    except msgspec.ValidationError as exc:
        m = _AT.fullmatch(str(exc))  # msgspec keeps the JSON path only in its message
        where, what = (m["where"], m["what"]) if m else ("$", str(exc))
        what = what.replace(f"Expected `str` matching regex {NONBLANK!r}", "expected non-empty text")
        raise ValueError(f"at {where}: {what if len(what) <= 300 else what[:300] + '...'}") from None
    if r.version != version:
        raise ValueError(f"at $.version: {r.version} is not the N of the file name v{version}.json")
    if (r.masked is not None) != (bool(r.history) and r.history[-1].action == "mask"):
        raise ValueError(
            "at $.masked: disagrees with the last event of $.history (kscope memory mask|unmask keep both)"
        )
    return r


def folder(ws: Workspace) -> Path:
    return ws.root / "memory"


def _path(ws: Workspace, version: int) -> Path:
    if version < 1:
        raise InputError(f"memory record {version}: expected a version of 1 or more (v1.json is the first)")
    return folder(ws) / f"v{version}.json"


def versions(ws: Workspace) -> list[int]:
    return sorted(int(m[1]) for p in folder(ws).iterdir() if (m := RECORD_FILE.fullmatch(p.name)))


def load(ws: Workspace, version: int) -> MemoryRecord:
    path = _path(ws, version)
    if not path.exists() and not path.is_symlink():
        raise InputError(f"no memory record v{version} in {folder(ws)}; kscope memory list shows them")
    try:
        return parse(read_bytes(path), version)
    except msgspec.DecodeError as exc:
        raise FormatError(path, f"a {MEMORY_SCHEMA} record", f"invalid JSON ({exc})", _FIX) from None
    except ValueError as exc:
        raise FormatError(path, f"a {MEMORY_SCHEMA} record", f"a violation {exc}", _FIX) from None


def records(ws: Workspace) -> list[MemoryRecord]:
    """Every record, oldest first; the first invalid one stops the read."""
    return [load(ws, v) for v in versions(ws)]


def _write(ws: Workspace, doc: MemoryRecord | dict[str, Any], version: int) -> MemoryRecord:
    """Validate ``doc`` as ``v<version>`` (decoded as a read would) and replace the file; an invalid record
    changes nothing."""
    try:
        record = parse(msgspec.json.encode(doc), version)
    except ValueError as exc:
        raise InputError(f"memory v{version}: {exc}; nothing was written") from None
    write_atomic(_path(ws, version), msgspec.json.format(msgspec.json.encode(record), indent=2) + b"\n")
    return record


def _lock(ws: Workspace) -> Path:
    return folder(ws) / ".lock"


def init(ws: Workspace) -> MemoryFolder:
    """Make ``memory/`` and its README if missing (idempotent); what it holds, every record validated."""
    folder(ws).mkdir(exist_ok=True)
    readme = folder(ws) / "README.md"
    new = not readme.exists()
    if new:
        write_atomic(readme, README.encode())
    rs = records(ws)
    return MemoryFolder(
        folder=str(folder(ws)),
        new=new,
        records=len(rs),
        masked=sum(r.masked is not None for r in rs),
        schema_file=str(schema_file()),
    )


def check_lever(category: str, option: str = "--category") -> Lever:
    if category not in LEVERS:
        raise InputError(f"{option} {category}: choose one of {', '.join(LEVERS)}")
    return category  # narrowed by the test above


def default_author(env: Mapping[str, str], root: Path) -> str:
    """Who is writing, when not told: ``$USER``, else git's ``user.name`` (as seen from ``root``)."""
    if user := env.get("USER", "").strip():
        return user
    try:
        name = git.git(root, "config", "user.name").strip()
    except (ToolFailedError, MissingToolError):
        name = ""
    if not name:
        raise InputError("who is writing? pass --author/--by NAME, or set $USER or git config user.name")
    return name


def _utc(now: datetime) -> str:
    return now.isoformat(timespec="seconds")


def new(
    ws: Workspace,
    *,
    author: str,
    now: datetime,
    category: str | None = None,
    task: str | None = None,
    kernel: str | None = None,
    title: str | None = None,
    hypothesis: str | None = None,
    from_eval: str | None = None,
) -> MemoryRecord:
    """Write the next ``v<N>.json``. ``from_eval`` fills task, performance, correctness and commit, and
    the category and kernel its task names unless given."""
    facts = None if from_eval is None else from_eval_facts(ws, from_eval)
    if facts is not None:
        if task is not None and task != facts.task:
            raise InputError(f"--task {task}: eval {from_eval} is of task {facts.task}; drop --task or pick its eval")
        category = category or facts.category
        kernel = kernel or facts.kernel
    if category is None:
        named = " (the eval's task names no lever)" if facts else ""
        raise InputError(f"kscope memory new needs --category{named}: one of {', '.join(LEVERS)}")
    lever = check_lever(category)
    with locked(_lock(ws)):
        version = max(versions(ws), default=0) + 1
        record = MemoryRecord(
            schema="kernelscope.memory.v1",
            version=version,
            category=lever,
            title=title,
            hypothesis=hypothesis,
            task=facts.task if facts else task,
            kernel=kernel,
            author=author,
            created=_utc(now),
            performance=facts.performance if facts else None,
            correctness=facts.correctness if facts else None,
            commit=facts.commit if facts else None,
        )
        return _write(ws, record, version)


def update(
    ws: Workspace, version: int, change: Callable[[MemoryRecord], MemoryRecord | dict[str, Any]]
) -> MemoryRecord:
    """Write back what ``change`` makes of the record (a record, or JSON data), validated, under the lock."""
    with locked(_lock(ws)):
        return _write(ws, change(load(ws, version)), version)


def mask(ws: Workspace, version: int, *, by: str, reason: str, now: datetime) -> MemoryRecord:
    """Hide the record from the views; who, when and why go in ``masked`` and ``history``."""

    def change(r: MemoryRecord) -> MemoryRecord:
        if (m := r.masked) is not None:
            raise InputError(f"memory v{version} is already masked (by {m.by} at {m.at}); unmask it first")
        event = MaskEvent(action="mask", by=by, at=_utc(now), reason=reason)
        masked = Mask(by=by, at=event.at, reason=reason)
        return msgspec.structs.replace(r, masked=masked, history=[*r.history, event])

    return update(ws, version, change)


def unmask(ws: Workspace, version: int, *, by: str, reason: str | None, now: datetime) -> MemoryRecord:
    """Show the record again; the mask stays in ``history`` beside this unmask."""

    def change(r: MemoryRecord) -> MemoryRecord:
        if r.masked is None:
            raise InputError(f"memory v{version} is not masked")
        event = MaskEvent(action="unmask", by=by, at=_utc(now), reason=reason)
        return msgspec.structs.replace(r, masked=None, history=[*r.history, event])

    return update(ws, version, change)


# --- from an eval ----------------------------------------------------------------------------------


class EvalFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What an eval says about an iteration; ``kernel`` and ``category`` are its task's, if named."""

    task: str
    performance: Performance
    correctness: Correctness | None
    commit: str | None
    kernel: str | None
    category: Lever | None


def from_eval_facts(ws: Workspace, run_id: str) -> EvalFacts:
    """The facts of eval ``run_id``: from ``runs/TASK/ID/result.json``, else from its ledger line."""
    if not RUN_ID.fullmatch(run_id):
        raise InputError(f"--from-eval {run_id}: expected an eval id (the id of kscope eval --json)")
    for path in sorted(ws.runs.glob(f"*/{run_id}/result.json")):
        try:
            return _from_result(msgspec.json.decode(path.read_bytes(), type=EvalResult))
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise FormatError(path, "a kernelscope.eval.v1 result", str(exc)) from None
    line = next((r for r in ledger.read(ws.ledger)[0] if r.id == run_id), None)
    if line is None:
        raise InputError(
            f"--from-eval {run_id}: no such eval in {ws.root} (no runs/*/{run_id}/result.json, no ledger line); "
            "kscope ledger --json lists the eval ids"
        )
    return _from_ledger(line)


def _from_ledger(r: LedgerRecord) -> EvalFacts:
    """A ledger line says nothing of correctness runs or a clean tree: those stay unknown."""
    performance = Performance(
        metric=r.metric,
        direction=r.direction,
        status=r.status,
        baseline=r.baseline_median,
        candidate=r.candidate_median,
        speedup=r.speedup,
        ci=r.ci,
        p_value=r.p_value,
        runs=r.runs,
        eval_id=r.id,
        result=r.result,
        diff_hash=r.diff_hash,
    )
    return EvalFacts(
        task=r.task, performance=performance, correctness=None, commit=None, kernel=r.kernel, category=r.lever
    )


def _from_result(r: EvalResult) -> EvalFacts:
    """The ledger line's facts, plus correctness (passed when every candidate correctness run succeeded)
    and the commit (only when the candidate's tree was clean: else the change measured is not in it)."""
    checks = [e for e in r.executions if e.role == "candidate" and e.phase == "correctness"]
    commands = [c[0] if r.shell else shlex.join(c) for c in r.correctness]
    status: CorrectnessStatus
    if any(e.error is not None for e in checks):
        status = "failed"
    elif commands and len(checks) == len(commands):
        status = "passed"
    else:
        status = "not_run"
    return msgspec.structs.replace(
        _from_ledger(ledger.entry(r)),
        correctness=Correctness(status=status, commands=commands),
        commit=r.candidate.commit if r.candidate.dirty is False else None,
    )


# --- views -----------------------------------------------------------------------------------------


def select(
    ws: Workspace,
    *,
    include_masked: bool = False,
    task: str | None = None,
    kernel: str | None = None,
    category: str | None = None,
) -> tuple[list[MemoryRecord], int]:
    """The records that pass the filters, oldest first, and how many masked ones were left out."""
    if category is not None:
        check_lever(category)
    rs = [
        r
        for r in records(ws)
        if (task is None or r.task == task)
        and (kernel is None or r.kernel == kernel)
        and (category is None or r.category == category)
    ]
    shown = [r for r in rs if include_masked or r.masked is None]
    return shown, len(rs) - len(shown)


def latest(
    ws: Workspace,
    *,
    include_masked: bool = False,
    task: str | None = None,
    kernel: str | None = None,
    category: str | None = None,
) -> MemoryRecord:
    """The newest record that passes the filters of ``select``."""
    shown, hidden = select(ws, include_masked=include_masked, task=task, kernel=kernel, category=category)
    if not shown:
        which = " that match" if task or kernel or category else ""
        extra = f" ({hidden} masked: --include-masked shows them)" if hidden else ""
        raise InputError(f"no memory records{which} in {folder(ws)}{extra}; kscope memory new writes one")
    return shown[-1]


def _best(rs: Iterable[MemoryRecord]) -> tuple[float | None, int | None]:
    """The highest speedup among the improved records, and its version."""
    wins = [(p.speedup, r.version) for r in rs if (p := r.performance) and r.won and p.speedup is not None]
    return max(wins, default=(None, None))


def _isa(rs: list[MemoryRecord]) -> list[IsaProgress]:
    """Each metric from the earliest record that measured it before a change to the latest after one."""
    sides = [r.isa_metrics for r in rs if r.isa_metrics is not None]
    names = dict.fromkeys(k for s in sides for k in [*s.before, *s.after])
    return [
        IsaProgress(
            metric=k,
            before=next((s.before[k] for s in sides if k in s.before), None),
            after=next((s.after[k] for s in reversed(sides) if k in s.after), None),
        )
        for k in names
    ]


def summarize(rs: list[MemoryRecord], hidden_masked: int) -> MemorySummary:
    """Per category (in ``LEVERS`` order) and per task and kernel (in order of first record)."""
    by_category: dict[str, list[MemoryRecord]] = {}
    by_target: dict[tuple[str | None, str | None], list[MemoryRecord]] = {}
    for r in rs:
        by_category.setdefault(r.category, []).append(r)
        by_target.setdefault((r.task, r.kernel), []).append(r)
    categories = []
    for lever in LEVERS:
        if group := by_category.get(lever):
            best, best_version = _best(group)
            categories.append(
                CategorySummary(
                    category=lever,
                    iterations=len(group),
                    wins=sum(r.won for r in group),
                    best_speedup=best,
                    best_version=best_version,
                    latest=group[-1].version,
                )
            )
    progress = []
    for (task, kernel), group in by_target.items():
        best, best_version = _best(group)
        progress.append(
            Progress(
                task=task,
                kernel=kernel,
                iterations=len(group),
                wins=sum(r.won for r in group),
                best_speedup=best,
                best_version=best_version,
                isa=_isa(group),
            )
        )
    pitfalls = [Pitfall(version=r.version, category=r.category, text=t) for r in rs for t in r.pitfalls]
    return MemorySummary(
        records=len(rs), hidden_masked=hidden_masked, categories=categories, progress=progress, pitfalls=pitfalls
    )
