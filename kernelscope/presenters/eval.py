"""Presenters of the optimization loop: an eval's verdict, and the ledger (rich, JSON, CSV, Markdown)."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text

from kernelscope.model.task import EvalResult, LedgerRecord, LedgerView, Side
from kernelscope.presenters.base import (
    Column,
    Presenter,
    Table,
    note_text,
    render_csv,
    render_json,
    render_markdown,
    render_parquet,
    rich_table,
)

STYLE = {"improved": "bold green", "regressed": "bold red", "neutral": "bold", "unstable": "bold yellow"}

SIDE_COLUMNS = [
    Column("side", "Side", justify="left"),
    Column("median", "Median", 4),
    Column("q1", "Q1", 4),
    Column("q3", "Q3", 4),
    Column("spread_pct", "IQR/median %", 2),
    Column("n", "Runs"),
    Column("commit", "Commit", justify="left"),
]

RECORD_COLUMNS = [
    Column("time", "Time (UTC)", justify="left"),
    Column("task", "Task", justify="left"),
    Column("kernel", "Kernel", justify="left"),
    Column("lever", "Lever", justify="left"),
    Column("status", "Status", justify="left"),
    Column("speedup", "Speedup", 4),
    Column("ci_low", "CI low", 4),
    Column("ci_high", "CI high", 4),
    Column("p_value", "p"),
    Column("baseline_median", "Baseline median", 4, short="Base med"),
    Column("candidate_median", "Candidate median", 4, short="Cand med"),
    Column("runs", "Runs"),
    Column("metric", "Metric", justify="left"),
    Column("candidate_commit", "Candidate commit", justify="left", short="Commit"),
    Column("diff_hash", "Diff hash", justify="left", short="Diff"),
    Column("id", "Eval id", justify="left"),
    Column("result", "Result", justify="left"),
]

SUMMARY_COLUMNS = [
    Column("task", "Task", justify="left"),
    Column("evals", "Evals"),
    Column("improved", "Improved"),
    Column("best_speedup", "Best speedup (improved)", 4, short="Best"),
    Column("last_status", "Last status", justify="left"),
    Column("last_time", "Last eval (UTC)", justify="left"),
]


def _short(commit: str | None) -> str | None:
    return commit[:12] if commit else None


def _side_row(name: str, s: Side) -> dict[str, Any]:
    return {
        "side": name,
        "median": s.median,
        "q1": s.q1,
        "q3": s.q3,
        "spread_pct": None if s.spread is None else 100 * s.spread,
        "n": len(s.samples),
        "commit": (_short(s.commit) or "") + (" + working tree" if s.dirty else ""),
    }


def sides_table(r: EvalResult) -> Table:
    return Table(
        f"kscope eval {r.task}: {r.metric} ({r.direction} is better)",
        SIDE_COLUMNS,
        [_side_row("baseline", r.baseline), _side_row("candidate", r.candidate)],
    )


def rich_renderable(r: EvalResult) -> Group:
    headline = Text.assemble(("status: ", "bold"), (r.status, STYLE.get(r.status, "bold red")))
    if r.speedup is not None and r.ci is not None:
        level = f"{100 * (1 - r.rule.alpha):g}%"
        headline.append(f"   speedup {r.speedup:.4f} ({level} CI {r.ci[0]:.4f}-{r.ci[1]:.4f}), p={r.p_value:.2g}")
    table = [] if r.status == "violation" else [rich_table(sides_table(r))]
    done = len(r.candidate.samples)
    footer = Text(f"result: {r.result_path}   ({done} timed runs per side, {r.duration_s:.1f} s)", style="dim")
    return Group(headline, *table, Text(r.reason), footer)


def _record_row(r: LedgerRecord) -> dict[str, Any]:
    row = {c.key: getattr(r, c.key, None) for c in RECORD_COLUMNS}
    row["ci_low"], row["ci_high"] = r.ci if r.ci else (None, None)
    row["p_value"] = None if r.p_value is None else f"{r.p_value:.2g}"  # exact in the JSON
    row["candidate_commit"] = _short(r.candidate_commit)
    row["diff_hash"] = None if r.diff_hash is None else r.diff_hash[:12]
    return row


def records_table(v: LedgerView) -> Table:
    notes = [f"lines {', '.join(map(str, v.unreadable))} of the ledger are not records"] if v.unreadable else []
    return Table("Ledger", RECORD_COLUMNS, [_record_row(r) for r in v.records], notes=notes)


def summary_table(v: LedgerView) -> Table:
    rows = [{c.key: getattr(s, c.key) for c in SUMMARY_COLUMNS} for s in v.summary]
    return Table("Ledger by task", SUMMARY_COLUMNS, rows)


_TERMINAL_HIDDEN = ("metric", "diff_hash", "id", "result")


def ledger_renderable(v: LedgerView) -> Group:
    records = records_table(v)
    notes = [note_text(n) for n in records.notes]
    return Group(rich_table(summary_table(v)), rich_table(records, hidden=_TERMINAL_HIDDEN), *notes)


EVAL_PRESENTERS: dict[str, Presenter] = {"json": Presenter("json", ".json", False, render_json)}
LEDGER_PRESENTERS: dict[str, Presenter] = {
    "json": Presenter("json", ".json", False, render_json),
    "csv": Presenter("csv", ".csv", False, lambda v: render_csv([records_table(v)])),
    "parquet": Presenter("parquet", ".parquet", True, lambda v: render_parquet([records_table(v)])),
    "markdown": Presenter("markdown", ".md", False, lambda v: render_markdown([summary_table(v), records_table(v)])),
}
