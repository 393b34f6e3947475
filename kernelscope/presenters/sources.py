"""Presenters of the source index and of ``kscope find`` answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

from rich.console import Group
from rich.text import Text

from kernelscope.identity.source import SOURCE_RULE
from kernelscope.model.source import SourceMatch, SourceMatches
from kernelscope.presenters.base import (
    Column,
    FittedTable,
    Presenter,
    Table,
    render_csv,
    render_json,
    render_markdown,
    render_parquet,
    rich_table,
)
from kernelscope.sources.index import RepoIndex, RepoSummary

INDEX_COLUMNS = [
    Column("name", "Repository", justify="left"),
    Column("commit", "Commit", justify="left"),
    Column("files", "Files"),
    Column("parsed", "Parsed now"),
    Column("definitions", "Kernel definitions"),
    Column("test_files", "Test files"),
    Column("seconds", "Seconds", 2),
]

FIND_COLUMNS = [
    Column("name", "Name", justify="left"),
    Column("status", "Status", justify="left"),
    Column("function", "Function", justify="left"),
    Column("kind", "Kind", justify="left"),
    Column("category", "Category", justify="left"),
    Column("where", "Definition", justify="left"),
    Column("url", "URL", justify="left"),
    Column("test", "Test", justify="left"),
    Column("command", "Test command", justify="left"),
    Column("reason", "Note", justify="left"),
]


def _find_row(m: SourceMatch) -> dict[str, object]:
    loc = m.location
    test = m.tests[0] if m.tests else None
    note = m.reason
    if m.status == "ambiguous":
        note = "; ".join(f"{c.repo}:{c.path}:{c.line}" for c in m.candidates)
    elif m.copies:
        note = f"{m.reason}; also: " + "; ".join(f"{c.repo}:{c.path}:{c.line}" for c in m.copies)
    read = [
        f"{what} read from the kernel's source ({rule.removeprefix(SOURCE_RULE)})"
        for what, rule in (("kind", m.kind_rule), ("category", m.category_rule))
        if rule.startswith(SOURCE_RULE)
    ]
    note = "; ".join([*read, note] if note else read)
    return {
        "name": m.name,
        "status": m.status,
        "function": m.function,
        "kind": m.kind,
        "category": m.category,
        "where": f"{loc.repo}:{loc.path}:{loc.line}" if loc else None,
        "url": loc.url if loc else None,
        "test": test.path if test else None,
        "command": test.command if test else None,
        "reason": note,
    }


def find_table(matches: Sequence[SourceMatch]) -> Table:
    return Table("Kernel sources", FIND_COLUMNS, [_find_row(m) for m in matches])


def find_renderable(matches: Sequence[SourceMatch]) -> Group:
    counts = {s: sum(m.status == s for m in matches) for s in ("resolved", "ambiguous", "no_source", "not_found")}
    summary = Text("  ".join(f"{k}: {v}" for k, v in counts.items()), style="dim")
    return Group(rich_table(find_table(matches), {"url", "kind"}), summary)


def index_table(summaries: Sequence[RepoSummary]) -> Table:
    rows = [{**asdict(s), "commit": (s.commit or "")[:12] or None} for s in summaries]
    return Table("Source index", INDEX_COLUMNS, rows)


def index_renderable(summaries: Sequence[RepoSummary]) -> FittedTable:
    return rich_table(index_table(summaries))


INDEX_PRESENTERS: dict[str, Presenter] = {
    "json": Presenter("json", ".json", False, lambda s: render_json(RepoIndex(repos=list(s)))),
}
FIND_PRESENTERS: dict[str, Presenter] = {
    "json": Presenter("json", ".json", False, lambda m: render_json(SourceMatches(kernels=list(m)))),
    "csv": Presenter("csv", ".csv", False, lambda m: render_csv([find_table(m)])),
    "parquet": Presenter("parquet", ".parquet", True, lambda m: render_parquet([find_table(m)])),
    "markdown": Presenter("markdown", ".md", False, lambda m: render_markdown([find_table(m)])),
}
