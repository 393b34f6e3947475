"""``kscope att`` presenters: rich tables, JSON (kernelscope.att.v1) and Markdown.

One capture is rendered as itself; several as ``{"schema", "captures": [...]}`` (docs/schemas.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath

from msgspec import UnsetType
from rich.console import Group, RenderableType
from rich.text import Text

from kernelscope.errors import one_line
from kernelscope.model.att import STATES, AttReport, AttResult
from kernelscope.model.hotspots import Hotspot
from kernelscope.model.source import SourceLocation
from kernelscope.presenters.base import Column, Presenter, Table, render_json, render_markdown, rich_table, shown_text

BAR = 24
SPARK = "▁▂▃▄▅▆▇█"
SPARK_WIDTH = 60
CONTEXT_SHOWN = 3  # hotspots whose disassembly the terminal view prints


def _n(v: int | UnsetType | None) -> str | None:
    return f"{v:,}" if isinstance(v, int) else None


def _bar(pct: float) -> str:
    n = max(0, min(BAR, round(pct / 100 * BAR)))
    return "█" * n + "·" * (BAR - n)


def _short(source: str | None) -> str | None:
    """``.../dir/file.py:12`` — the last two path parts keep names that repeat across folders apart."""
    loc = SourceLocation.parse(source)
    if loc is None:
        return source or None
    return f"{'/'.join(PurePath(loc.file).parts[-2:])}:{loc.line}"


def _name(r: AttResult) -> str:
    return PurePath(r.path).name or r.path


def _summary(r: AttResult) -> list[tuple[str, str]]:
    kernels = ", ".join(k.name for k in r.kernels) or "unknown"
    return [
        ("kernel", kernels),
        ("instructions", f"{r.instructions:,}"),
        ("traced waves", f"{r.waves:,}" if r.waves is not None else "not read (--code-only)"),
        ("hits", f"{r.hits:,}"),
        ("latency cycles", f"{r.latency_cycles:,}"),
        ("stall cycles", f"{r.stall_cycles:,} ({r.stall_pct:.1f}% of latency)"),
        ("idle cycles", f"{r.idle_cycles:,}"),
    ]


STALL_COLUMNS = [
    Column("class", "Class", justify="left"),
    Column("cycles", "Stall cycles"),
    Column("pct", "% of stall", 1),
    Column("bar", "", justify="left"),
]
STATE_COLUMNS = [
    Column("state", "State", justify="left"),
    Column("cycles", "Cycles"),
    Column("pct", "%", 1),
    Column("bar", "", justify="left"),
]
HOTSPOT_COLUMNS = [
    Column("rank", "#"),
    Column("address", "Address", justify="left"),
    Column("stall_class", "Class", justify="left"),
    Column("stall_cycles", "Stall"),
    Column("stall_share", "% stall", 1),
    Column("latency_cycles", "Latency"),
    Column("hits", "Hits"),
    Column("instruction", "Instruction", justify="left"),
    Column("source", "Source", justify="left"),
]
LINE_COLUMNS = [
    Column("source", "Source", justify="left"),
    Column("instructions", "Instr"),
    Column("hits", "Hits"),
    Column("stall_cycles", "Stall"),
    Column("stall_share", "% stall", 1),
    Column("latency_cycles", "Latency"),
    Column("top_class", "Top class", justify="left"),
]
OCCUPANCY_COLUMNS = [
    Column("name", "Kernel", justify="left"),
    Column("measured", "Measured"),
    Column("arch_vgpr", "VGPR"),
    Column("agpr", "AGPR"),
    Column("vgpr_alloc", "Alloc"),
    Column("waves", "VGPR limit"),
    Column("cap", "Arch cap"),
    Column("rules", "Rules", justify="left"),
]
CHECK_COLUMNS = [
    Column("counter", "Counter", justify="left"),
    Column("code", "code.json"),
    Column("waves", "Wave files"),
    Column("diff", "Difference"),
]


def _stall_table(r: AttResult) -> Table:
    cw = r.combined_waits
    combined = (
        f"{cw.instructions} wait(s) on VMEM and LDS/SMEM counters at once: {cw.stall_cycles:,} stall cycles, "
        f"{cw.to_vmem:,} counted as vmem_wait, {cw.to_lds_smem:,} as lds_smem_wait (docs/att.md)"
    )
    rows = [
        {"class": k, "cycles": _n(v), "pct": r.stall_breakdown_pct[k], "bar": _bar(r.stall_breakdown_pct[k])}
        for k, v in sorted(r.stall_breakdown.items(), key=lambda kv: -kv[1])
        if v
    ]
    title = f"ATT {_name(r)}: stall cycles by instruction class"
    return Table(title, STALL_COLUMNS, rows, summary=_summary(r), notes=[combined] if cw.instructions else [])


def _states_table(r: AttResult) -> Table:
    title = "Wave states (decoder names; % of traced wave lifetime)"
    cycles, pct = r.state_cycles, r.state_pct
    if cycles is None or pct is None:
        return Table(title, STATE_COLUMNS, [], notes=["wave files not read (--code-only)"])
    rows = [
        {"state": k.upper(), "cycles": _n(cycles[k]), "pct": pct[k], "bar": _bar(pct[k])}
        for k in STATES
        if k != "empty" or cycles[k]
    ]
    return Table(title, STATE_COLUMNS, rows)


def _occupancy_table(r: AttResult) -> Table:
    rows = []
    for k in r.kernels:
        g = k.registers
        rules = f"{g.arch or '?'} wave{g.wave_size} ({g.arch_source})"
        rows.append(
            {
                "name": k.name,
                "measured": k.measured_waves_per_simd,
                "arch_vgpr": g.arch_vgpr,
                "agpr": g.agpr,
                "vgpr_alloc": g.vgpr_alloc,
                "waves": g.waves_per_simd,
                "cap": g.max_waves_per_simd,
                "rules": rules,
            }
        )
    measured = str(r.measured_waves_per_simd) if r.measured_waves_per_simd else "unknown"
    title = "Occupancy: resident waves per SIMD, measured (occupancy.json) and allowed by the VGPRs"
    return Table(title, OCCUPANCY_COLUMNS, rows, summary=[("measured, all kernels", measured)])


def _check_table(r: AttResult) -> Table:
    c = r.crosscheck
    if c is None:
        return Table("Cross-check: code.json against the wave files", CHECK_COLUMNS, [], notes=r.notes)
    rows = [
        {"counter": k, "code": _n(v), "waves": _n(c.wave_totals[k]), "diff": _n(c.wave_totals[k] - v)}
        for k, v in c.code_totals.items()
    ]
    listed = f" (filenames.json lists {c.listed_wave_files})" if c.listed_wave_files is not None else ""
    states = "no wstates files"
    if c.wstates_cycles is not None:
        same = r.state_cycles is not None and all(r.state_cycles[k] == v for k, v in c.wstates_cycles.items())
        states = "equal" if same else "DIFFERENT"
    summary = [
        ("result", "identical" if c.ok else "DIFFERENT"),
        ("wave files", f"{c.wave_files}{listed}"),
        ("instructions that differ", str(c.mismatched_lines)),
        ("dynamic instructions without a PC", str(c.no_pc_instructions)),
        ("wstates vs wave timelines", states),
    ]
    notes = [f"line {m.line} {m.counter}: code.json {m.code:,}, wave files {m.waves:,}" for m in c.mismatches]
    title = "Cross-check: code.json against the sums over the wave files"
    return Table(title, CHECK_COLUMNS, rows, summary=summary, notes=[*notes, *r.notes])


def tables(r: AttResult) -> list[Table]:
    """Stall classes, wave states, hotspots, source lines, occupancy and the cross-check of one capture."""
    hot = [{**_hot_row(h), "rank": i} for i, h in enumerate(r.hotspots, 1)]
    lines = [
        {
            "source": _short(s.source) or "(no line info)",
            "instructions": s.instructions,
            "hits": _n(s.hits),
            "stall_cycles": _n(s.stall_cycles),
            "stall_share": s.stall_share,
            "latency_cycles": _n(s.latency_cycles),
            "top_class": s.top_class,
        }
        for s in r.source_lines
    ]
    return [
        _stall_table(r),
        _states_table(r),
        Table(f"Top {len(hot)} hotspot instructions by stall cycles", HOTSPOT_COLUMNS, hot),
        Table("Source lines by stall cycles", LINE_COLUMNS, lines),
        _occupancy_table(r),
        _check_table(r),
    ]


def _hot_row(h: Hotspot) -> dict[str, object]:
    return {
        "address": f"{h.code_object}:0x{h.address:x}",
        "stall_class": h.stall_class,
        "stall_cycles": _n(h.stall_cycles),
        "stall_share": h.stall_share,
        "latency_cycles": _n(h.latency_cycles),
        "hits": _n(h.hits),
        "instruction": h.instruction,
        "source": _short(h.source),
    }


def _context_lines(h: Hotspot) -> list[str]:
    return [f"{'>' if c.hot else ' '} 0x{c.address:06x}  {c.stall_cycles:>9,}  {c.instruction}" for c in h.context]


def _spark(values: Sequence[float], top: float) -> str:
    step = max(1, -(-len(values) // SPARK_WIDTH))
    means = [sum(values[i : i + step]) / len(values[i : i + step]) for i in range(0, len(values), step)]
    return "".join(SPARK[min(len(SPARK) - 1, int(v / top * (len(SPARK) - 1) + 0.5))] if top else " " for v in means)


def _timeline(r: AttResult) -> list[RenderableType]:
    t = r.state_timeline
    if t is None:
        return []
    series = {"IDLE": t.idle, "EXEC": t.exec, "WAIT": t.wait, "STALL": t.stall}
    top = max((max(v, default=0.0) for v in series.values()), default=0.0)
    lines: list[RenderableType] = [
        Text(f"waves per state over time (cycles {t.start:,}..{t.end:,}, peak {top:g} waves)", style="bold")
    ]
    lines += [Text(f"  {k:<5} {_spark(v, top)}") for k, v in series.items()]
    return lines


def rich_renderable(report: AttReport) -> Group:
    parts: list[RenderableType] = []
    for r in report.captures:
        stall, states, hot, lines, occ, check = tables(r)
        parts += [shown_text(r.path, "bold"), shown_text("  ".join(f"{k}: {v}" for k, v in stall.summary), "dim")]
        parts += [rich_table(stall), *(shown_text(f"note: {n}", "yellow") for n in stall.notes)]
        if states.rows:
            parts.append(rich_table(states))
        parts += [*(shown_text(f"{states.title}: {n}", "dim") for n in states.notes), *_timeline(r), rich_table(hot)]
        for h in r.hotspots[:CONTEXT_SHOWN]:
            parts += [shown_text(f"around {h.code_object}:0x{h.address:x} (stall cycles, instruction)", "bold")]
            parts += [shown_text(line, "bold red" if line.startswith(">") else "dim") for line in _context_lines(h)]
        parts += [rich_table(lines), rich_table(occ), shown_text("  ".join(f"{k}: {v}" for k, v in occ.summary), "dim")]
        if check.rows:  # none under --code-only (the notes say why)
            parts += [rich_table(check), shown_text("  ".join(f"{k}: {v}" for k, v in check.summary), "dim")]
        parts += [*(shown_text(f"note: {n}", "yellow") for n in check.notes), Text("")]
    return Group(*parts)


def _markdown(report: AttReport) -> str:
    out = []
    for r in report.captures:
        out.append(f"# ATT capture `{one_line(r.path)}`\n")
        out.append(render_markdown(tables(r)))
        for h in r.hotspots:
            out.append(f"### Around `{h.code_object}:0x{h.address:x}` ({h.stall_cycles:,} stall cycles)\n")
            out.append("```\n" + "\n".join(one_line(line) for line in _context_lines(h)) + "\n```\n")
    return "\n".join(out)


def _json(report: AttReport) -> str:
    return render_json(report.captures[0] if len(report.captures) == 1 else report)


PRESENTERS: dict[str, Presenter] = {
    "json": Presenter("json", ".json", False, _json),
    "markdown": Presenter("markdown", ".md", False, _markdown),
}
