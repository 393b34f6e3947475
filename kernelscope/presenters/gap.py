"""Gap-table presenters: rich table, JSON, Magpie-compatible CSV, Markdown, Parquet."""

from __future__ import annotations

import msgspec
from rich.console import Group, RenderableType
from rich.text import Text

from kernelscope.errors import one_line
from kernelscope.model.gap import HARNESS_PHASE, GapResult, GapTotals, HarnessBurst, KernelRow
from kernelscope.presenters.base import (
    Column,
    Presenter,
    Table,
    display_names,
    fitted_table,
    note_text,
    render_csv,
    render_json,
    render_markdown,
    render_parquet,
)

# The first five headers are Magpie's gap CSV, so its consumers read kscope's CSV unchanged.
COLUMNS = [
    Column("name", "Name", justify="left"),
    Column("calls", "Calls"),
    Column("total_us", "Self CUDA total (us)", 1, short="Total µs"),
    Column("avg_us", "Avg time (us)", 2, short="Avg µs"),
    Column("pct", "% Total", 2, short="%"),
    Column("variants", "Variants"),  # distinct launch configurations (autotune configs, instantiations)
    Column("median_us", "Median (us)", 2, short="Median µs"),
    Column("min_us", "Min (us)", 2, short="Min µs"),
    Column("max_us", "Max (us)", 2, short="Max µs"),
    Column("std_us", "Std (us)", 2, short="Std µs"),
    Column("kind", "Kind", justify="left"),
    Column("category", "Category", justify="left"),
    Column("function", "Function", justify="left"),
    Column("dtype", "Dtype", justify="left"),
    Column("variant", "Variant", justify="left"),  # --group-by variant: grid, block, registers, shared memory
    Column("config", "Config", justify="left"),  # --code or kscope profile's ledger: the config its variant ran
    Column("calls_per_iteration", "Calls/iter", 1),  # --window steady
    Column("us_per_iteration", "µs/iter", 1),
    Column("source_status", "Source status", justify="left", short="Source?"),
    Column("source", "Source", justify="left"),
    Column("source_url", "Source URL", justify="left"),
    Column("test_command", "Test command", justify="left", short="Test"),
    Column("rank", "Rank"),
    Column("ranks", "Ranks", justify="left"),
    Column("phase", "Phase", justify="left"),
]


def _us(v: float | None) -> str:
    return "unknown" if v is None else f"{v:,.1f} us"


def _idle_causes(t: GapTotals) -> str:
    b, d = t.idle_breakdown, t.launch_delay_us
    if b is None or d is None or not t.idle_time_us:
        return ""
    share = {k: 100 * v / t.idle_time_us for k, v in msgspec.structs.asdict(b).items()}
    calls = (
        f"; launch call median {d.call_median_us:,.1f} us, {d.shorter_than_call:,} calls outlasting their kernels"
        if d.call_median_us is not None
        else ""
    )
    return (
        f" (host wait {share['host_wait_us']:.0f}%, kernel wait {share['kernel_wait_us']:.0f}%, "
        f"other {share['other_us']:.0f}%; launch to start median {d.median_us:,.1f} us{calls})"
    )


def _cut(name: str, width: int = 60) -> str:
    return one_line(name if len(name) <= width else name[: width - 1] + "…")


def host_line(r: GapResult, top: int) -> str:
    """The host work the GPU waited under most, one line (names escaped)."""
    return ", ".join(f"{_cut(h.name, 48)} {_us(h.idle_us)} ({h.intervals}x)" for h in r.host_activity[:top])


def harness_line(r: GapResult) -> str | None:
    """What benchmark/tuning activity was found and whether it was set aside (one line, names escaped): per
    (what benchmarked, rule), its bursts, the kernels they timed and the flush between them."""
    if not r.harness:
        return None
    groups: dict[tuple[str, str], list[HarnessBurst]] = {}
    for b in r.harness:
        groups.setdefault((b.harness or "benchmark", b.rule), []).append(b)
    parts = []
    for (what, rule), bursts in groups.items():
        kernels = ", ".join(dict.fromkeys(_cut(k) for b in bursts for k in b.kernels[:3]))
        flushes = ", ".join(dict.fromkeys(_cut(b.flush) for b in bursts if b.flush))
        flushed = f"; flush {flushes}" if flushes else ""
        parts.append(f"{len(bursts)} x {_cut(what, 48)} [{rule}]: {kernels}{flushed}")
    what = "; ".join(parts)
    t = r.totals
    if r.phase == HARNESS_PHASE:
        return f"this phase: {what}"
    if r.options.include_harness:
        return f"{what}; kept (--include-harness)"
    return f"{t.excluded_harness_launches:,} launches, {_us(t.excluded_harness_us)} set aside: {what}"


def tables(result: GapResult) -> list[Table]:
    parts = result.phases or [result]
    out = []
    for r in parts:
        t = r.totals
        summary = [
            ("kernel time", _us(t.kernel_time_us)),
            ("GPU busy time", _us(t.busy_time_us)),
            ("wall time", _us(t.wall_time_us)),
            ("idle time", _us(t.idle_time_us) + _idle_causes(t)),
            ("launches", f"{t.launches:,}"),
            ("distinct kernels", f"{t.kernels:,}"),
            (
                "memory ops",
                f"{t.memory_ops:,} ({_us(t.memory_time_us)}, {'included' if r.options.include_memory else 'excluded'})",
            ),
        ]
        if r.host_activity:
            summary.append(("GPU waited under", host_line(r, 3)))
        if (line := harness_line(r)) is not None:
            summary.append(("harness", line))
        for st in result.steady if r is result or not result.phases else []:
            rank = f"rank {st.rank}: " if st.rank is not None else ""
            summary.append(
                (
                    "steady",
                    f"{rank}{st.iterations} iterations of {st.period:,} launches, {_us(st.iteration_us)} each, from "
                    f"launch #{st.first_launch:,} of device {st.device} ({st.source})",
                )
            )
        if result.window:
            summary.append(("window", result.window))
        rows = [{**_row_dict(k), "phase": r.phase} for k in r.kernels]
        title = f"Gap analysis — phase {r.phase}" if r.phase is not None else "Gap analysis"
        out.append(Table(title, COLUMNS, rows, summary, list(r.warnings)))
    return out


def _row_dict(k: object) -> dict[str, object]:
    row = {c.key: getattr(k, c.key, None) for c in COLUMNS}
    if isinstance(k, KernelRow) and k.variant is not None:
        row["variant"] = k.variant.label()
    if isinstance(k, KernelRow):
        row["config"] = _config(k)
    return row


def _config(k: KernelRow) -> str | None:
    """The config the row's variant ran (``--code``, the launch ledger), or how many code objects fit it."""
    if k.config is not None:
        return " ".join(f"{n}={v}" for n, v in k.config.items() if n != "num_ctas" or v != 1)
    return f"{len(k.code)} fit (ambiguous)" if len(k.code) > 1 else None


# what goes first when the terminal is too narrow for every column and a readable name
_DROP_ORDER = ("std_us", "min_us", "max_us", "dtype", "function", "median_us", "variants", "calls")


def rich_renderable(result: GapResult, top: int | None = None, width: int = 200) -> Group:
    """The gap table for a terminal ``width`` columns wide (spread columns, then the function, go first)."""
    parts: list[RenderableType] = []
    hidden = {"rank", "ranks", "phase", "source_url"}
    if any(r.source_status for part in [result, *result.phases] for r in part.kernels):
        hidden |= {"median_us", "min_us", "max_us", "std_us", "function", "dtype", "category"}  # room for sources
    else:
        hidden |= {"source_status", "source", "test_command"}
    if result.options.group_by == "variant" or any(r.code for part in [result, *result.phases] for r in part.kernels):
        hidden |= {"min_us", "max_us", "std_us", "function", "dtype"}  # room for the variant and its code object
    parts_tables = tables(result)
    # a mangled symbol (nvprof's databases, Nsight Compute's CSV) demangled, as the tools show it; --json keeps it
    shown_name = display_names({r["name"] for t in parts_tables for r in t.rows})
    for t in parts_tables:
        show = [c for c in t.columns if c.key not in hidden]
        if not any((r.get("variants") or 0) > 1 for r in t.rows):  # say it only where a row holds several
            show = [c for c in show if c.key != "variants"]
        if any(r.get("rank") is not None for r in t.rows):
            show.append(next(c for c in t.columns if c.key == "rank"))
        rows = [{**r, "name": shown_name[r["name"]]} for r in (t.rows[:top] if top else t.rows)]
        shown = Table(t.title, show, rows)
        flexible = ("name", "function", "source", "test_command", "variant", "config")
        if rows:  # an empty table is only its squeezed title: the summary and notes say it all
            parts.append(fitted_table(shown, width, flexible, _DROP_ORDER, numbered=True))
        summary = Text("  ".join(f"{k}: {v}" for k, v in t.summary), style="dim")
        notes = [note_text(n) for n in t.notes]
        more = len(t.rows) - len(rows)
        cut = [Text(f"({more} more rows: --top 0 shows all)", style="dim")] if more else []
        parts.extend([*cut, summary, *notes, Text("")])
    return Group(*parts)


PRESENTERS: dict[str, Presenter] = {
    "json": Presenter("json", ".json", False, render_json),
    "csv": Presenter("csv", ".csv", False, lambda r: render_csv(tables(r))),
    "markdown": Presenter("markdown", ".md", False, lambda r: render_markdown(tables(r))),
    "parquet": Presenter("parquet", ".parquet", True, lambda r: render_parquet(tables(r))),
}
