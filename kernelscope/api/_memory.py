"""``kscope memory``: the versioned record of what was learned."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from kernelscope.errors import InputError
from kernelscope.loop import memory as loop_memory
from kernelscope.loop import memory_edit
from kernelscope.loop import workspace as loop_workspace
from kernelscope.model.memory import MemoryFolder, MemoryList, MemoryRecord, MemorySummary


def memory_init(*, workspace: str | Path = ".") -> MemoryFolder:
    """``kscope memory init``: the workspace's ``memory/`` and its README, made if missing (idempotent),
    with a count of the records (each validated)."""
    return loop_memory.init(loop_workspace.open_workspace(Path(workspace)))


def memory_new(
    *,
    category: str | None = None,
    workspace: str | Path = ".",
    task: str | None = None,
    kernel: str | None = None,
    title: str | None = None,
    hypothesis: str | None = None,
    author: str | None = None,
    from_eval: str | None = None,
) -> MemoryRecord:
    """``kscope memory new``: write the next ``memory/v<N>.json`` (schema ``kernelscope.memory.v1``).

    ``category`` is one lever of ``kernelscope.model.levers``; ``author`` defaults to ``$USER``, else git's
    ``user.name``; ``from_eval`` (an eval id) fills task, performance, correctness and commit from
    ``runs/TASK/ID/result.json``, or from its ledger line when that file is gone, and the category and
    kernel from its task when they are not given.
    """
    ws = loop_workspace.open_workspace(Path(workspace))
    return loop_memory.new(
        ws,
        category=category,
        author=author or loop_memory.default_author(os.environ, ws.root),
        now=datetime.now(UTC),
        task=task,
        kernel=kernel,
        title=title,
        hypothesis=hypothesis,
        from_eval=from_eval,
    )


def memory_show(version: int, *, workspace: str | Path = ".") -> MemoryRecord:
    """``kscope memory show N``: the validated record ``v<N>``, masked or not."""
    return loop_memory.load(loop_workspace.open_workspace(Path(workspace)), version)


def memory_set(
    version: int,
    assignments: Sequence[str] = (),
    *,
    workspace: str | Path = ".",
    from_json: str | Path | None = None,
    add_evidence: tuple[str, str, str] | None = None,
) -> MemoryRecord:
    """``kscope memory set N FIELD=VALUE...``: change a record; the whole record is validated before it
    is written, so an invalid change leaves the file as it was. Order and syntax: ``docs/memory.md``."""
    patch = None if from_json is None else memory_edit.read_patch(Path(from_json))
    if patch is None and add_evidence is None and not assignments:
        raise InputError("kscope memory set needs FIELD=VALUE, FIELD+=VALUE, --from-json FILE or --add-evidence")
    evidence = [] if add_evidence is None else [add_evidence]
    return loop_memory.update(
        loop_workspace.open_workspace(Path(workspace)),
        version,
        lambda r: memory_edit.apply(r, assignments, patch=patch, evidence=evidence),
    )


def memory_mask(version: int, *, reason: str, workspace: str | Path = ".", by: str | None = None) -> MemoryRecord:
    """``kscope memory mask N``: hide the record from list, summary and latest; ``by`` (default as for
    ``memory_new``'s author), the time and ``reason`` are recorded and kept after an unmask."""
    ws = loop_workspace.open_workspace(Path(workspace))
    who = by or loop_memory.default_author(os.environ, ws.root)
    return loop_memory.mask(ws, version, by=who, reason=reason, now=datetime.now(UTC))


def memory_unmask(
    version: int, *, workspace: str | Path = ".", by: str | None = None, reason: str | None = None
) -> MemoryRecord:
    """``kscope memory unmask N``: show the record again; the mask stays in its history."""
    ws = loop_workspace.open_workspace(Path(workspace))
    who = by or loop_memory.default_author(os.environ, ws.root)
    return loop_memory.unmask(ws, version, by=who, reason=reason, now=datetime.now(UTC))


def memory_list(
    *,
    workspace: str | Path = ".",
    include_masked: bool = False,
    task: str | None = None,
    kernel: str | None = None,
    category: str | None = None,
) -> MemoryList:
    """``kscope memory list``: the records that pass the filters, oldest first; masked ones only with
    ``include_masked`` (how many were left out is part of the result)."""
    ws = loop_workspace.open_workspace(Path(workspace))
    shown, hidden = loop_memory.select(ws, include_masked=include_masked, task=task, kernel=kernel, category=category)
    return MemoryList(records=shown, hidden_masked=hidden)


def memory_summary(
    *,
    workspace: str | Path = ".",
    include_masked: bool = False,
    task: str | None = None,
    kernel: str | None = None,
    category: str | None = None,
) -> MemorySummary:
    """``kscope memory summary``: per category iterations, wins, best speedup and latest; per task and
    kernel the progress (best speedup, code-object metrics first to last); the pitfalls met."""
    ws = loop_workspace.open_workspace(Path(workspace))
    shown, hidden = loop_memory.select(ws, include_masked=include_masked, task=task, kernel=kernel, category=category)
    return loop_memory.summarize(shown, hidden)


def memory_latest(
    *,
    workspace: str | Path = ".",
    include_masked: bool = False,
    task: str | None = None,
    kernel: str | None = None,
    category: str | None = None,
) -> MemoryRecord:
    """``kscope memory latest``: the newest record that passes the filters."""
    return loop_memory.latest(
        loop_workspace.open_workspace(Path(workspace)),
        include_masked=include_masked,
        task=task,
        kernel=kernel,
        category=category,
    )
