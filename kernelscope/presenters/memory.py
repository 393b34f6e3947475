"""Presenters of the iteration memory for the terminal: one record, the list, the summary (``--json``
prints the records themselves, ``render_json``). Every user-written string goes in as ``Text``: kernel
names and notes hold ``[brackets]`` that are not markup."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from kernelscope.model.memory import IsaProgress, MemoryFolder, MemoryList, MemoryRecord, MemorySummary
from kernelscope.presenters.base import Column, Table, fmt, rich_table
from kernelscope.presenters.eval import STYLE

LIST_COLUMNS = [
    Column("version", "V"),
    Column("created", "Created (UTC)", justify="left"),
    Column("task", "Task", justify="left"),
    Column("kernel", "Kernel", justify="left"),
    Column("category", "Category", justify="left"),
    Column("status", "Status", justify="left"),
    Column("speedup", "Speedup", 4),
    Column("correctness", "Correctness", justify="left", short="Correct"),
    Column("title", "Title", justify="left"),
    Column("masked", "Masked", justify="left"),
]

CATEGORY_COLUMNS = [
    Column("category", "Category", justify="left"),
    Column("iterations", "Iterations"),
    Column("wins", "Wins"),
    Column("best_speedup", "Best speedup (improved)", 4),
    Column("best_version", "Best (v)"),
    Column("latest", "Latest (v)"),
]

PROGRESS_COLUMNS = [
    Column("task", "Task", justify="left"),
    Column("kernel", "Kernel", justify="left"),
    Column("iterations", "Iterations"),
    Column("wins", "Wins"),
    Column("best_speedup", "Best speedup (improved)", 4),
    Column("best_version", "Best (v)"),
    Column("isa", "Code object (first before -> latest after)", justify="left", short="Code object"),
]


def _status(r: MemoryRecord) -> Text:
    if r.performance is None:
        return Text("not measured", style="dim")
    return Text(r.performance.status, style=STYLE.get(r.performance.status, "bold red"))


def headline(r: MemoryRecord) -> Text:
    """``v3 memory_access improved 1.2345x: title`` — one line that names the record."""
    line = Text.assemble((f"v{r.version}", "bold"), " ", r.category, " ", _status(r))
    if r.performance is not None and r.performance.speedup is not None:
        line.append(f" {r.performance.speedup:.4f}x")
    if r.title:
        line.append(f": {r.title}")
    if r.masked is not None:
        line.append(f"  [masked by {r.masked.by}]", style="yellow")
    return line


def _section(title: str, lines: Iterable[Text]) -> list[RenderableType]:
    body = list(lines)
    return [Text(title, style="bold"), *body] if body else []


def _isa_table(r: MemoryRecord) -> list[RenderableType]:
    if r.isa_metrics is None or not (r.isa_metrics.before or r.isa_metrics.after):
        return []
    m = r.isa_metrics
    names = dict.fromkeys([*m.before, *m.after])
    rows = [{"metric": k, "before": m.before.get(k), "after": m.after.get(k)} for k in names]
    columns = [Column("metric", "Metric", justify="left"), Column("before", "Before"), Column("after", "After")]
    title = "Code object" + (f" ({m.source})" if m.source else "")
    return [rich_table(Table(title, columns, rows))]


def record_renderable(r: MemoryRecord) -> Group:
    """Everything in a record, in the order an iteration happens: why, what was seen, what came of it."""
    parts: list[RenderableType] = [headline(r)]
    if r.masked is not None:
        parts.append(Text(f"MASKED by {r.masked.by} at {r.masked.at}: {r.masked.reason}", style="bold yellow"))
        parts.append(Text("(hidden from list, summary and latest unless --include-masked)", style="yellow"))
    facts = [("task", r.task), ("kernel", r.kernel), ("author", r.author), ("created", r.created), ("commit", r.commit)]
    parts.append(Text("   ".join(f"{k} {v}" for k, v in facts if v is not None), style="dim"))
    if r.hypothesis:
        parts.append(Text(f"hypothesis: {r.hypothesis}"))
    if (p := r.performance) is not None:
        line = Text.assemble("performance: ", _status(r), f"   {p.metric} ({p.direction} is better)")
        if p.baseline is not None and p.candidate is not None:
            line.append(f" {p.baseline:.4g} -> {p.candidate:.4g}")
        if p.speedup is not None:
            line.append(f"   speedup {p.speedup:.4f}")
        if p.ci is not None:
            line.append(f" (CI {p.ci[0]:.4f}-{p.ci[1]:.4f})")
        if p.p_value is not None:
            line.append(f" p={p.p_value:.2g}")
        if p.eval_id is not None:
            line.append(f"   eval {p.eval_id}", style="dim")
        parts.append(line)
    if (c := r.correctness) is not None:
        detail = "; ".join([*c.commands, *([c.notes] if c.notes else [])])
        parts.append(Text.assemble("correctness: ", (c.status, "bold"), f"   {detail}" if detail else ""))
    if r.evidence:
        columns = [Column(k, k.capitalize(), justify="left") for k in ("evidence", "inference", "action", "source")]
        rows = [{f: getattr(e, f) for f in ("evidence", "inference", "action", "source")} for e in r.evidence]
        parts.append(rich_table(Table("Evidence -> inference -> action", columns, rows)))
    parts += _isa_table(r)
    parts += _section(
        "Search log", (Text(f"- {s}" if isinstance(s, str) else f"- {s.what}: {s.result}") for s in r.search_log)
    )
    parts += _section("Pitfalls", (Text(f"- {p}") for p in r.pitfalls))
    parts += _section(
        "References", (Text(f"- {s}" if isinstance(s, str) else f"- {s.title} <{s.url}>") for s in r.references)
    )
    if (g := r.quality_gate) is not None:
        parts.append(Text.assemble("quality gate: ", ("passed", "bold green") if g.passed else ("failed", "bold red")))
        parts += [
            Text(f"  {'ok  ' if c.passed else 'FAIL'} {c.name}" + (f": {c.detail}" if c.detail else ""))
            for c in g.checks
        ]
    parts += _section(
        "History",
        (Text(f"- {e.action} by {e.by} at {e.at}" + (f": {e.reason}" if e.reason else "")) for e in r.history),
    )
    return Group(*parts)


def _list_row(r: MemoryRecord) -> dict[str, Any]:
    p = r.performance
    return {
        "version": r.version,
        "created": r.created[:16].replace("T", " "),  # UTC by the schema; minutes are enough in a list
        "task": r.task,
        "kernel": r.kernel,
        "category": r.category,
        "status": p.status if p else None,
        "speedup": p.speedup if p else None,
        "correctness": r.correctness.status if r.correctness else None,
        "title": r.title,
        "masked": f"by {r.masked.by}" if r.masked else None,
    }


def _hidden_note(hidden: int) -> list[RenderableType]:
    if not hidden:
        return []
    return [Text(f"{hidden} masked record(s) hidden; --include-masked shows them", style="yellow")]


def list_renderable(v: MemoryList) -> Group:
    hidden = () if any(r.masked for r in v.records) else ("masked",)
    table = Table(f"Iteration memory ({len(v.records)} records)", LIST_COLUMNS, [_list_row(r) for r in v.records])
    return Group(rich_table(table, hidden=hidden), *_hidden_note(v.hidden_masked))


def _isa_cell(isa: list[IsaProgress]) -> str:
    return ", ".join(f"{m.metric} {fmt(m.before, None) or '?'} -> {fmt(m.after, None) or '?'}" for m in isa)


def summary_renderable(s: MemorySummary) -> Group:
    categories = [{c.key: getattr(cat, c.key) for c in CATEGORY_COLUMNS} for cat in s.categories]
    progress = [
        {**{c.key: getattr(p, c.key) for c in PROGRESS_COLUMNS if c.key != "isa"}, "isa": _isa_cell(p.isa)}
        for p in s.progress
    ]
    parts: list[RenderableType] = [
        rich_table(Table(f"Iteration memory by category ({s.records} records)", CATEGORY_COLUMNS, categories)),
        rich_table(Table("Progress by task and kernel", PROGRESS_COLUMNS, progress)),
    ]
    parts += _section("Pitfalls", (Text(f"- v{p.version} ({p.category}): {p.text}") for p in s.pitfalls))
    return Group(*parts, *_hidden_note(s.hidden_masked))


def folder_text(f: MemoryFolder) -> Text:
    state = "initialized" if f.new else "already set up:"
    return Text(f"{state} {f.folder} ({f.records} records, {f.masked} masked; schema {f.schema_file})")
