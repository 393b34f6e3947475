"""Diff presenters: rich tables, JSON (kernelscope.diff.v1), CSV, Markdown. Tables show µs; JSON keeps ns."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from kernelscope.model.diff import DiffResult, DiffRow
from kernelscope.presenters.base import (
    Column,
    Presenter,
    Table,
    fmt,
    note_text,
    render_csv,
    render_json,
    render_markdown,
    render_parquet,
    rich_table,
)

_NS_PER_US = 1000.0

COLUMNS = [
    Column("name", "Name", justify="left"),
    Column("status", "Status", justify="left"),
    Column("verdict", "Verdict", justify="left"),
    Column("calls_a", "Calls A"),
    Column("calls_b", "Calls B"),
    Column("total_a_us", "Total A (us)", 1, short="Total A µs"),
    Column("total_b_us", "Total B (us)", 1, short="Total B µs"),
    Column("delta_us", "Delta (us)", 1, short="Δ µs"),
    Column("delta_pct", "Delta %", 1, short="Δ %"),
    Column("delta_share_pct", "Share of delta %", 1, short="share %"),
    Column("median_a_us", "Median A (us)", 2, short="Med A µs"),
    Column("median_b_us", "Median B (us)", 2, short="Med B µs"),
    Column("median_ratio", "Median B/A", 3, short="B/A"),
    Column("ci_low", "CI low", 3),
    Column("ci_high", "CI high", 3),
    Column("p_value", "p (Mann-Whitney)", short="p"),
    Column("count_effect_us", "Count effect (us)", 1, short="calls Δ µs"),
    Column("per_call_effect_us", "Per-call effect (us)", 1, short="per-call Δ µs"),
    Column("kind", "Kind", justify="left"),
    Column("category", "Category", justify="left"),
    Column("function", "Function", justify="left"),
    Column("reason", "Why n/a", justify="left"),
]

_TOTALS = [
    ("kernel_time_ns", "kernel time (us)"),
    ("busy_time_ns", "GPU busy time (us)"),
    ("wall_time_ns", "wall time (us)"),
    ("idle_time_ns", "idle time (us)"),
    ("launches", "launches"),
    ("kernels", "distinct kernels"),
]
TOTAL_COLUMNS = [
    Column("metric", "Total", justify="left"),
    Column("a", "A", 1),
    Column("b", "B", 1),
    Column("delta", "Delta", 1, short="Δ"),
    Column("delta_pct", "Delta %", 1, short="Δ %"),
]
_STYLE = {"slower": "red", "faster": "green", "added": "yellow", "removed": "cyan"}


def _us(ns: float | None) -> float | None:
    return None if ns is None else ns / _NS_PER_US


def _row_dict(r: DiffRow) -> dict[str, Any]:
    return {
        **{c.key: getattr(r, c.key, None) for c in COLUMNS},
        **{f"{k}_us": _us(getattr(r, f"{k}_ns")) for k in ("total_a", "total_b", "delta", "median_a", "median_b")},
        "count_effect_us": _us(r.count_effect_ns),
        "per_call_effect_us": _us(r.per_call_effect_ns),
        "p_value": None if r.p_value is None else f"{r.p_value:.2g}",  # exact in the JSON
    }


def _counts_line(result: DiffResult) -> str:
    c = result.counts
    level = f"p<{result.options.alpha:g} and CI excludes 1"
    return (
        f"{c.common} common ({c.slower} slower, {c.faster} faster, {c.not_significant} not significant, "
        f"{c.untested} n/a; significant = {level}), {c.added} added ({_us(c.added_time_ns):,.1f} us), "
        f"{c.removed} removed ({_us(c.removed_time_ns):,.1f} us)"
    )


def totals_table(result: DiffResult) -> Table:
    rows = []
    for key, label in _TOTALS:
        ch = result.totals[key]
        values: list[float | None] = [ch.a, ch.b, ch.delta]
        if key.endswith("_ns"):
            values = [_us(v) for v in values]
        rows.append({"metric": label, **dict(zip(("a", "b", "delta"), values, strict=True)), "delta_pct": ch.delta_pct})
    return Table("Totals: A → B", TOTAL_COLUMNS, rows)


def kernels_table(result: DiffResult) -> Table:
    summary = [("kernels", _counts_line(result)), ("group by", result.options.group_by)]
    if result.window:
        summary.append(("window", result.window))
    return Table(
        "Kernel diff (B - A, by |delta|)",
        COLUMNS,
        [_row_dict(r) for r in result.kernels],
        summary,
        list(result.warnings),
    )


# the terminal shows a subset (the CSV and Markdown have every column): column -> the width it needs
_TERMINAL = {
    "name": 0,
    "verdict": 0,
    "calls_a": 0,
    "calls_b": 0,
    "total_a_us": 120,
    "total_b_us": 120,
    "delta_us": 0,
    "delta_pct": 0,
    "delta_share_pct": 160,
    "median_a_us": 160,
    "median_b_us": 160,
    "median_ratio": 120,
    "ci": 160,
    "p_value": 160,
}


def rich_renderable(result: DiffResult, top: int | None = None, width: int = 200) -> Group:
    """Totals, then the kernels ranked by |delta|; only the name column is cut to fit ``width``."""
    t = kernels_table(result)
    ci = Column("ci", f"{100 * (1 - result.options.alpha):g}% CI")
    by_key = {c.key: c for c in [*t.columns, ci]}
    show = [by_key[k] for k, needs in _TERMINAL.items() if width >= needs]
    rows = t.rows[:top] if top else t.rows
    cells = [[fmt(r[c.key], c.decimals) if c is not ci else _ci(r["ci_low"], r["ci_high"]) for c in show] for r in rows]
    fits = [max([len(c.label), *(len(line[j]) for line in cells)]) for j, c in enumerate(show)]
    # numbers are never cut; the name gets what is left (3 = padding and rule per column)
    name_width = max(20, width - sum(fits[1:]) - 3 * (len(show) + 1) - len(str(len(rows))) - 1)
    kt = RichTable(title=t.title, title_justify="left", header_style="bold")
    kt.add_column("#", justify="right")
    for c, fit in zip(show, fits, strict=True):
        kt.add_column(
            c.label,
            justify="left" if c.justify == "left" else "right",
            no_wrap=True,
            overflow="ellipsis",
            min_width=None if c.key == "name" else fit,
            max_width=name_width if c.key == "name" else None,
        )
    for i, (r, line) in enumerate(zip(rows, cells, strict=True), 1):
        style = _STYLE.get(r["verdict"], "")
        kt.add_row(
            str(i),
            *(
                Text(v, style=style if c.key in ("verdict", "delta_us") else "")
                for c, v in zip(show, line, strict=True)
            ),
        )
    more = len(t.rows) - len(rows)
    parts: list[RenderableType] = [rich_table(totals_table(result)), kt]
    parts.extend([Text(f"({more} more rows: --top 0 shows all)", style="dim")] if more else [])
    parts.extend(Text(f"{k}: {v}", style="dim") for k, v in t.summary)
    parts.extend(note_text(n) for n in t.notes)
    return Group(*parts)


def _ci(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


PRESENTERS: dict[str, Presenter] = {
    "json": Presenter("json", ".json", False, render_json),
    "csv": Presenter("csv", ".csv", False, lambda r: render_csv([kernels_table(r)])),
    "parquet": Presenter("parquet", ".parquet", True, lambda r: render_parquet([kernels_table(r)])),
    "markdown": Presenter("markdown", ".md", False, lambda r: render_markdown([totals_table(r), kernels_table(r)])),
}
