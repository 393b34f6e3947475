"""The ISA fit view as ASCII panels (one per kernel), and JSON (kernelscope.fit.v1)."""

from __future__ import annotations

from kernelscope.model.codeobj import FitReport, Gauge, KernelFit
from kernelscope.presenters.base import Presenter, render_json

WIDTH = 30


def _bar(frac: float) -> str:
    n = max(0, min(WIDTH, round(frac * WIDTH)))
    return "#" * n + "." * (WIDTH - n)


def _gauge(g: Gauge) -> str:
    if g.limit:
        return f"  {g.label:<22} [{_bar(g.used / g.limit)}] {g.used:,.0f}/{g.limit:,.0f}{g.unit}"
    return f"  {g.label:<22} [{'?' * WIDTH}] {g.used:,.0f}{g.unit} (limit UNKNOWN)"


def panel(f: KernelFit) -> str:
    lines = [f"+-- {f.name}  ({f.vendor} {f.arch}) " + "-" * max(0, 60 - len(f.name) - len(f.arch))]
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
    return "\n\n".join(panel(k) for k in report.kernels) + "\n"


PRESENTERS: dict[str, Presenter] = {"json": Presenter("json", ".json", False, render_json)}
