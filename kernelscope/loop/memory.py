"""The iteration memory: ``memory/v<N>.json`` records, validated on every write and every read.

Each record is checked against the JSON Schema ``kernelscope/data/schemas/memory.v1.json`` plus the two
facts JSON Schema cannot state: ``version`` is the N of the file name, and ``masked`` agrees with the last
``history`` event (so a record cannot be unmasked without a trace). Writers hold ``memory/.lock``: a new
record's N is one more than the highest on disk, and ``set``/``mask``/``unmask`` read, change and write
without losing a concurrent writer's change. Files are replaced atomically (``write_atomic``), so a reader
takes no lock and sees a whole record or none — which a file created empty with ``O_EXCL`` and then
filled would not give it. Masked records stay on disk and leave only the views (``select``).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, cast

import msgspec

from kernelscope.errors import FormatError, InputError, MissingToolError, ToolFailedError
from kernelscope.loop import git, ledger
from kernelscope.loop.workspace import Workspace, locked, write_atomic
from kernelscope.model.levers import LEVERS, Lever
from kernelscope.model.memory import (
    MEMORY_SCHEMA,
    CategorySummary,
    Correctness,
    CorrectnessStatus,
    IsaProgress,
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


@cache
def _validator() -> Any:
    import jsonschema  # only memory commands pay for it (and its format checkers, when installed)

    return jsonschema.Draft202012Validator(json.loads(schema_file().read_text()))


def problem(doc: Any, version: int) -> str | None:
    """The first violation in ``doc`` as the record ``v<version>``: ``at $.path: what``, or None."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(doc))
    while error is not None and error.validator == "anyOf":  # "not valid under any of the given schemas"
        inside = [e for e in error.context if e.validator != "type" or e.relative_path]
        if not inside:
            break
        error = best_match(inside)  # the value has a fitting branch's type: what is wrong within it
    if error is not None:
        if error.validator == "pattern" and error.validator_value == r"\S":
            message = f"expected non-empty text, found {error.instance!r}"
        elif error.validator == "anyOf":
            types = " or ".join(repr(e.validator_value) for e in error.context)
            message = f"{error.instance!r} is not of type {types}"
        else:
            message = error.message
        return f"at {error.json_path}: {message if len(message) <= 300 else message[:300] + '...'}"
    if doc["version"] != version:
        return f"at $.version: {doc['version']} is not the N of the file name v{version}.json"
    events = doc.get("history", [])
    if (doc.get("masked") is not None) != (bool(events) and events[-1]["action"] == "mask"):
        return "at $.masked: disagrees with the last event of $.history (kscope memory mask|unmask keep both)"
    return None


def folder(ws: Workspace) -> Path:
    return ws.root / "memory"


def _path(ws: Workspace, version: int) -> Path:
    if version < 1:
        raise InputError(f"memory record {version}: expected a version of 1 or more (v1.json is the first)")
    return folder(ws) / f"v{version}.json"


def versions(ws: Workspace) -> list[int]:
    return sorted(int(m[1]) for p in folder(ws).iterdir() if (m := RECORD_FILE.fullmatch(p.name)))


def _load(ws: Workspace, version: int) -> dict[str, Any]:
    """The record ``v<version>`` as validated JSON data."""
    path = _path(ws, version)
    try:
        doc = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise InputError(f"no memory record v{version} in {folder(ws)}; kscope memory list shows them") from None
    except ValueError as exc:
        raise FormatError(path, f"a {MEMORY_SCHEMA} record", f"invalid JSON ({exc})", _FIX) from None
    if (p := problem(doc, version)) is not None:
        raise FormatError(path, f"a {MEMORY_SCHEMA} record", f"a violation {p}", _FIX)
    return cast(dict[str, Any], doc)  # an object: the schema says so


def load(ws: Workspace, version: int) -> MemoryRecord:
    return msgspec.convert(_load(ws, version), MemoryRecord)


def records(ws: Workspace) -> list[MemoryRecord]:
    """Every record, oldest first; the first invalid one stops the read."""
    return [load(ws, v) for v in versions(ws)]


def _write(ws: Workspace, doc: dict[str, Any], version: int) -> MemoryRecord:
    """Validate ``doc`` as ``v<version>`` and replace the file; an invalid record changes nothing."""
    if (p := problem(doc, version)) is not None:
        raise InputError(f"memory v{version}: {p}; nothing was written")
    record = msgspec.convert(doc, MemoryRecord)
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


def check_lever(category: str, option: str = "--category") -> None:
    if category not in LEVERS:
        raise InputError(f"{option} {category}: choose one of {', '.join(LEVERS)}")


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
    check_lever(category)
    fields: dict[str, Any] = {
        "category": category,
        "title": title,
        "hypothesis": hypothesis,
        "task": facts.task if facts else task,
        "kernel": kernel,
        "author": author,
    }
    if facts is not None:
        fields |= {f: msgspec.to_builtins(getattr(facts, f)) for f in ("performance", "correctness", "commit")}
    with locked(_lock(ws)):
        version = max(versions(ws), default=0) + 1
        return _write(ws, {"schema": MEMORY_SCHEMA, "version": version, "created": _utc(now), **fields}, version)


def update(ws: Workspace, version: int, change: Callable[[dict[str, Any]], None]) -> MemoryRecord:
    """Apply ``change`` to the record's JSON data and write it back, validated, under the lock."""
    with locked(_lock(ws)):
        doc = _load(ws, version)
        change(doc)
        return _write(ws, doc, version)


def mask(ws: Workspace, version: int, *, by: str, reason: str, now: datetime) -> MemoryRecord:
    """Hide the record from the views; who, when and why go in ``masked`` and ``history``."""

    def change(doc: dict[str, Any]) -> None:
        if (m := doc.get("masked")) is not None:
            raise InputError(f"memory v{version} is already masked (by {m['by']} at {m['at']}); unmask it first")
        doc["masked"] = {"by": by, "at": _utc(now), "reason": reason}
        doc.setdefault("history", []).append({"action": "mask", **doc["masked"]})

    return update(ws, version, change)


def unmask(ws: Workspace, version: int, *, by: str, reason: str | None, now: datetime) -> MemoryRecord:
    """Show the record again; the mask stays in ``history`` beside this unmask."""

    def change(doc: dict[str, Any]) -> None:
        if doc.get("masked") is None:
            raise InputError(f"memory v{version} is not masked")
        doc["masked"] = None
        doc["history"].append({"action": "unmask", "by": by, "at": _utc(now), "reason": reason})

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
