"""``kscope ncu`` presenters: rich tables per kernel, JSON (kernelscope.ncu.v1), Markdown."""

from __future__ import annotations

from msgspec.structs import asdict
from rich.console import Group, RenderableType
from rich.text import Text

from kernelscope.errors import one_line
from kernelscope.model.hotspots import Hotspot, SourceLine
from kernelscope.model.ncu import KernelSummary, NcuResult
from kernelscope.presenters.base import Column, Presenter, Table, render_json, render_markdown, rich_table

TOP_REASONS = 3  # reasons named per hotspot/line row; the JSON has them all

BREAKDOWN = [
    Column("reason", "Reason (ncu)", justify="left"),
    Column("label", "Stall", justify="left"),
    Column("samples", "Samples"),
    Column("pct", "%", 1),
    Column("not_issued", "Not issued"),
]
HOTSPOTS = [
    Column("rank", "#"),
    Column("address", "Address", justify="left"),
    Column("offset", "Offset", justify="left"),
    Column("stall_samples", "Samples"),
    Column("pct", "%", 1),
    Column("reasons", "Top reasons", justify="left"),
    Column("executed", "Executed"),
    Column("source", "Source", justify="left"),
    Column("sass", "SASS (hotspot marked >)", justify="left"),
]
LINES = [
    Column("source", "Source line", justify="left"),
    Column("stall_samples", "Samples"),
    Column("pct", "%", 1),
    Column("reasons", "Top reasons", justify="left"),
    Column("executed", "Executed"),
    Column("instructions", "SASS"),
    Column("text", "Text", justify="left"),
]


def _pcts(*values: float | None) -> str | None:
    """``"55.2% / 78.8%"``; None when no value is known."""
    if all(v is None for v in values):
        return None
    return " / ".join("n/a" if v is None else f"{v:.1f}%" for v in values)


def summary(k: KernelSummary) -> list[tuple[str, str]]:
    """The headline as (label, value) lines; what the input does not hold is left out."""
    h = k.headline
    lines: list[tuple[str, str | None]] = [
        ("duration", None if k.duration_ns is None else f"{k.duration_ns / 1e3:,.2f} us"),
        ("SM / memory / DRAM throughput", _pcts(h.sm_throughput_pct, h.memory_throughput_pct, h.dram_throughput_pct)),
        ("occupancy achieved / theoretical", _pcts(h.achieved_occupancy_pct, h.theoretical_occupancy_pct)),
        ("registers per thread", None if h.registers is None else str(h.registers)),
        ("bound (ncu SOLBottleneck)", h.bound),
    ]
    out = [(label, v) for label, v in lines if v is not None] or [("headline", "not in this input")]
    if k.stall_samples is not None:
        out.append(("stall samples (not issued)", f"{k.stall_samples:,} ({k.not_issued_samples or 0:,})"))
    return out


def _reasons(x: Hotspot | SourceLine) -> str:
    return ", ".join(f"{r} {n}" for r, n in list((x.reasons or {}).items())[:TOP_REASONS])


def _sass(h: Hotspot, sep: str | None) -> str | tuple[str, ...]:
    lines = tuple(
        f"{'>' if c.address == h.address else ' '} {'' if c.offset is None else f'{c.offset:#06x}  '}{c.instruction}"
        for c in h.context
    )
    return lines if sep is None else sep.join(lines)


def tables(k: KernelSummary, sep: str | None = None) -> list[Table]:
    """The kernel's breakdown, hotspots and lines as tables; ``sep`` joins a hotspot's context lines (by default
    they stay lines: a terminal cell shows one per line, each escaped)."""
    title = f"[{k.index}] {k.name}"
    hot = [
        {**{f: getattr(h, f) for f in ("stall_samples", "pct", "executed", "source")}, "rank": n,
         "address": f"{h.address:#x}", "offset": None if h.offset is None else f"+{h.offset:#x}",
         "reasons": _reasons(h), "sass": _sass(h, sep)}
        for n, h in enumerate(k.hotspots, 1)
    ]  # fmt: skip
    lines = [
        {**{f: getattr(s, f) for f in ("source", "stall_samples", "pct", "executed", "instructions", "text")},
         "reasons": _reasons(s)}
        for s in k.lines
    ]  # fmt: skip
    return [
        Table(f"{title} — stall reasons", BREAKDOWN, [asdict(s) for s in k.stall_breakdown], summary(k), k.notes),
        Table(f"{title} — top instructions by stall samples", HOTSPOTS, hot),
        Table(f"{title} — top source lines", LINES, lines),
    ]


def rich_renderable(r: NcuResult) -> Group:
    # the report's strings (kernel names, source paths, notes quoting them) escaped: the profiled program names them
    parts: list[RenderableType] = [Text(one_line(f"{r.source} ({r.format})"), style="dim")]
    parts += [Text(one_line(f"note: {n}"), style="yellow") for n in r.notes]
    for k in r.kernels:
        breakdown, hot, lines = tables(k)
        parts.append(Text(f"\n[{k.index}] {one_line(k.name)}", style="bold"))
        parts += [Text(one_line(f"  {label}: {value}")) for label, value in breakdown.summary]
        parts += [rich_table(t) for t in (breakdown, hot, lines) if t.rows]
        parts += [Text(one_line(f"note: {n}"), style="yellow") for n in k.notes]
    return Group(*parts)


def _markdown(r: NcuResult) -> str:
    head = f"# kscope ncu — {one_line(r.source)}\n\n" + "".join(f"> {one_line(n)}\n\n" for n in r.notes)
    return head + render_markdown([t for k in r.kernels for t in tables(k, "<br>") if t.rows or t.summary])


PRESENTERS: dict[str, Presenter] = {
    "json": Presenter("json", ".json", False, render_json),
    "markdown": Presenter("markdown", ".md", False, _markdown),
}
