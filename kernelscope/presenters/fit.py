"""The ISA fit view as ASCII panels (one per kernel), and JSON (kernelscope.fit.v1); side by side
(``--compare``) as rich tables, one column per code object, and JSON (kernelscope.fit-compare.v1)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.console import Group, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from kernelscope.errors import one_line
from kernelscope.model.codeobj import FitColumn, FitComparison, FitInput, FitReport, Gauge, KernelComparison, KernelFit
from kernelscope.presenters.base import Presenter, display_names, note_text, render_json

WIDTH = 30


def _bar(frac: float) -> str:
    n = max(0, min(WIDTH, round(frac * WIDTH)))
    return "#" * n + "." * (WIDTH - n)


def _amount(g: Gauge) -> str:
    return f"{g.used:,.0f}/{g.limit:,.0f}{g.unit}" if g.limit else f"{g.used:,.0f}{g.unit} (limit UNKNOWN)"


def _gauge(g: Gauge) -> str:
    return f"  {g.label:<22} [{_bar(g.used / g.limit) if g.limit else '?' * WIDTH}] {_amount(g)}"


def panel(f: KernelFit, name: str) -> str:
    """One kernel's gauges, mix and read-out, under ``name`` (as ``display_names`` shows it)."""
    lines = [f"+-- {name}  ({f.vendor} {f.arch}) " + "-" * max(0, 60 - len(name) - len(f.arch))]
    lines += [_gauge(g) for g in f.gauges]
    if f.mix:
        lines.append("  instruction mix")
        for cls, pct in list(f.mix.items())[:8]:
            lines.append(f"    {cls:<20} [{_bar(pct / 100)}] {pct:5.1f}%")
    if f.matrix_share is not None:
        lines.append(f"  matrix units: {f.matrix_share:.1f}% of instructions")
    if f.readout:
        lines.append("  left on the table")
        lines += [f"    - {r}" for r in f.readout]
    lines.append("+" + "-" * 64)
    return "\n".join(lines)


def render_text(report: FitReport) -> str:
    shown = display_names([k.name for k in report.kernels])
    return "\n\n".join(panel(k, shown[k.name]) for k in report.kernels) + "\n"


# --- side by side -------------------------------------------------------------------------------------

MIX_ROWS = 8  # as many classes as a panel shows
Cell = Callable[[FitColumn], str]


def _is_memory(g: Gauge) -> bool:
    return g.unit == "B"


def _is_occupancy(g: Gauge) -> bool:
    return g.label.startswith("occupancy")


def _registers(c: FitColumn) -> str:
    gs = [g for g in c.fit.gauges if not _is_memory(g) and not _is_occupancy(g)]
    return "\n".join(f"{g.label.strip()} {_amount(g)}" for g in gs)


def _spills(c: FitColumn) -> str:
    r = c.resources
    if c.fit.vendor == "amd":
        return f"{r.get('vgpr_spill', 0)} VGPR + {r.get('sgpr_spill', 0)} SGPR"
    return "as local memory"  # NVIDIA binaries count no spills of their own


def _shared(c: FitColumn) -> str:
    total = "\n".join(_amount(g) for g in c.fit.gauges if _is_memory(g))
    r = c.resources
    reserved = f" + {r['reserved_shared']:,} driver" if "reserved_shared" in r else ""
    return f"{total}\n({r.get('static_shared', 0):,} static + {r.get('dynamic_shared', 0):,} dynamic{reserved})"


def _scratch(c: FitColumn) -> str:
    r = c.resources
    if c.fit.vendor == "amd":
        return f"{r.get('scratch_bytes', 0):,} B scratch"
    return f"{r.get('local_bytes', 0):,} B local, {r.get('stack_bytes', 0):,} B stack"


def _occupancy(c: FitColumn) -> str:
    o = c.occupancy
    return f"{o.per_unit} ({o.pct:.0f}%, block {o.block_size})" if o else "unknown"


def _share(pct: float | None) -> str:
    return "" if pct is None else f"{pct:.1f}%"


def _mix_cell(cls: str) -> Cell:
    return lambda c: _share(c.fit.mix.get(cls, 0.0)) if c.fit.mix else "no mix"


def mix_classes(k: KernelComparison) -> list[str]:
    """The top classes over all columns, by their largest share: one order for every column."""
    best: dict[str, float] = {}
    for c in k.columns:
        for cls, pct in (c.fit.mix if c else {}).items():
            best[cls] = max(best.get(cls, 0.0), pct)
    return sorted(best, key=lambda cls: -best[cls])[:MIX_ROWS]


def _rows(k: KernelComparison) -> list[tuple[str, Cell]]:
    return [
        ("arch", lambda c: c.fit.arch),
        ("vendor", lambda c: c.fit.vendor),
        ("registers", _registers),
        ("spills", _spills),
        ("LDS / shared", _shared),
        ("scratch / local", _scratch),
        ("occupancy", _occupancy),
        ("limiter", lambda c: c.fit.limiter or "unknown"),
        *((f"mix: {cls}", _mix_cell(cls)) for cls in mix_classes(k)),
        ("matrix share", lambda c: _share(c.fit.matrix_share) or "no mix"),
        ("left on the table", lambda c: "\n".join(f"- {r}" for r in c.fit.readout)),
    ]


def _header(i: FitInput) -> str:
    return f"{one_line(Path(i.path).name)}\n{i.arch}"


def comparison_notes(report: FitComparison, k: KernelComparison) -> list[str]:
    """Where a column is empty, and why an input's cells say less (each input's notes, e.g. no mix)."""
    missing = [Path(i.path).name for i, c in zip(report.inputs, k.columns, strict=True) if c is None]
    notes = [f"{k.name}: not in {', '.join(missing)}"] if missing else []
    return notes + [f"{Path(i.path).name}: {n}" for i in report.inputs for n in i.notes]


def comparison_table(report: FitComparison, k: KernelComparison) -> RichTable:
    title = Text(f"{display_names([k.name])[k.name]} — side by side")  # Text: a name is not rich markup
    tab = RichTable(title=title, title_justify="left", header_style="bold", show_lines=True)
    tab.add_column("")
    for i in report.inputs:
        tab.add_column(Text(_header(i)), overflow="fold")
    for label, cell in _rows(k):
        tab.add_row(Text(label, style="bold"), *(Text(cell(c) if c else "—") for c in k.columns))
    return tab


def render_comparison(report: FitComparison) -> Group:
    parts: list[RenderableType] = []
    for k in report.kernels:
        parts += [
            comparison_table(report, k),
            *(note_text(n) for n in comparison_notes(report, k)),
        ]
        parts.append(Text(""))
    return Group(*parts)


PRESENTERS: dict[str, Presenter] = {"json": Presenter("json", ".json", False, render_json)}
