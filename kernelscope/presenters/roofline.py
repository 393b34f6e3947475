"""Roofline presenters: rich table, JSON (kernelscope.roofline.v1), and a log-log plot as SVG or HTML."""

from __future__ import annotations

import html
import io
import math

import msgspec
from rich.console import Group
from rich.text import Text

from kernelscope.model.roofline import RooflinePoint, RooflineResult
from kernelscope.presenters.base import Column, Presenter, Table, render_json, rich_table

W, H, PAD = 900, 560, 70
RIGHT = 170  # room for the roof labels
LABELLED = 10  # the longest-running points get a number on the plot, matching the table order
X_RANGE = (1e-2, 1e4)  # flop/byte


COLUMNS = [
    Column("rank", "#"),
    Column("label", "op / kernel", justify="left"),
    Column("calls", "calls"),
    Column("time_us", "µs", 1),
    Column("dtype", "dtype", justify="left"),
    Column("intensity", "flop/B", 1),
    Column("achieved_tflops", "TFLOPS", 1),
    Column("achieved_gbs", "GB/s", 0),
    Column("bound", "bound", justify="left"),
    Column("pct_of_roof", "% roof", 0),
    Column("pct_of_measured_roof", "% measured", 0),
    Column("meets_target", "≥90%"),
]


def table(r: RooflineResult, title: str = "Roofline") -> Table:
    """The points as rows, numbered as the plot labels them."""
    met = {True: "yes", False: "no", None: None}
    rows = [
        {**msgspec.to_builtins(p), "rank": i, "meets_target": met[p.meets_target]} for i, p in enumerate(r.points, 1)
    ]
    return Table(title, COLUMNS, rows)


def rich_renderable(r: RooflineResult) -> Group:
    p = r.peaks
    head = Text(
        f"{p.gpu}: datasheet {p.datasheet_gbs or 'UNKNOWN'} GB/s, "
        + ", ".join(f"{k} {v:g} TFLOPS" for k, v in p.datasheet_tflops.items())
        + (f"; measured {p.measured_gbs:,.0f} GB/s on {p.measured_on}" if p.measured_gbs else "; no measured ceilings"),
        style="dim",
    )
    tab = rich_table(table(r))  # fits the terminal; the labels (op and kernel names) escaped
    extra = [Text(f"no cost model (kernel µs): {r.unmodeled}", style="yellow")] if r.unmodeled else []
    extra += [Text(f"note: {n}", style="dim") for n in r.notes]
    return Group(head, tab, *extra)


def _x(ai: float) -> float:
    lo, hi = (math.log10(v) for v in X_RANGE)
    return PAD + (math.log10(min(max(ai, X_RANGE[0]), X_RANGE[1])) - lo) / (hi - lo) * (W - PAD - RIGHT)


def _numbered(r: RooflineResult) -> list[tuple[int, RooflinePoint]]:
    """The first points in table order, numbered from 1 as the table's rows are."""
    return [(i, p) for i, p in enumerate(r.points[:LABELLED], 1) if p.intensity > 0 and p.achieved_tflops > 0]


def _roofs(r: RooflineResult) -> list[tuple[float, dict[str, float], str, str]]:
    """(bandwidth GB/s, TFLOPS per dtype, colour, name) of each roof set that has a bandwidth.

    Dtypes with the same peak share one line and one label ("bf16/fp16").
    """
    p = r.peaks
    roofs = [
        (p.datasheet_gbs, p.datasheet_tflops, "#555", "datasheet"),
        (p.measured_gbs, p.measured_tflops, "#c33", "measured"),
    ]
    out = []
    for bw, tfs, color, kind in roofs:
        if bw:
            same: dict[float, list[str]] = {}
            for dt, tf in tfs.items():
                same.setdefault(tf, []).append(dt)
            out.append((bw, {"/".join(dts): tf for tf, dts in same.items()}, color, kind))
    return out


def svg(r: RooflineResult) -> str:
    peak = max([*r.peaks.datasheet_tflops.values(), 1.0])
    y_hi, y_lo = math.log10(peak * 2), math.log10(peak * 2) - 5

    def y(tf: float) -> float:
        v = math.log10(max(tf, 10**y_lo))
        return H - PAD - (v - y_lo) / (y_hi - y_lo) * (H - 2 * PAD)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11" '
        'class="plot" data-plot="roofline">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{PAD}" y="24" font-size="14">Roofline — {html.escape(str(r.peaks.gpu))}</text>',
    ]
    for e in range(-2, 5):  # axis ticks
        out.append(f'<text x="{_x(10**e):.0f}" y="{H - PAD + 16}" text-anchor="middle">1e{e}</text>')
    for e in range(math.ceil(y_lo), math.floor(y_hi) + 1):
        out.append(f'<text x="{PAD - 6}" y="{y(10**e) + 4:.0f}" text-anchor="end">{10**e:g}</text>')
        out.append(f'<line x1="{PAD}" x2="{W - RIGHT}" y1="{y(10**e):.0f}" y2="{y(10**e):.0f}" stroke="#eee"/>')
    out.append(f'<text x="{W / 2}" y="{H - 20}" text-anchor="middle">arithmetic intensity (flop/byte)</text>')
    out.append(f'<text x="16" y="{H / 2}" transform="rotate(-90 16 {H / 2})" text-anchor="middle">TFLOPS</text>')
    for bw, tfs, color, kind in _roofs(r):
        for dt, tf in tfs.items():
            pts = [(ai, min(tf, ai * bw / 1e3)) for ai in (10 ** (i / 20) for i in range(-40, 81))]
            path = " ".join(f"{_x(a):.1f},{y(t):.1f}" for a, t in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.2"/>')
            out.append(f'<text x="{W - RIGHT + 4}" y="{y(tf):.0f}" fill="{color}">{kind} {dt}</text>')
    for pt in r.points:
        if pt.intensity <= 0 or pt.achieved_tflops <= 0:
            continue
        label = html.escape(pt.label[:60])
        out.append(
            f'<circle cx="{_x(pt.intensity):.1f}" cy="{y(pt.achieved_tflops):.1f}" r="4" fill="#1f77b4">'
            f"<title>{label}: {pt.achieved_tflops:.1f} TFLOPS, {pt.time_us:.0f} µs</title></circle>"
        )
    for i, pt in _numbered(r):
        out.append(f'<text x="{_x(pt.intensity) + 5:.1f}" y="{y(pt.achieved_tflops) - 5:.1f}">{i}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def png(r: RooflineResult) -> bytes:
    """The same plot as ``svg`` drawn by matplotlib (Agg, no display): roofs per dtype, one dot per kernel."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(W / 100, H / 100), dpi=100)
    ax = fig.add_subplot()
    ais = [10 ** (i / 20) for i in range(-40, 81)]
    for bw, tfs, color, kind in _roofs(r):
        for dt, tf in tfs.items():
            ax.plot(ais, [min(tf, a * bw / 1e3) for a in ais], color=color, lw=1.2)
            ax.text(X_RANGE[1], tf, f" {kind} {dt}", color=color, fontsize=7, va="center")
    pts = [p for p in r.points if p.intensity > 0 and p.achieved_tflops > 0]
    ax.scatter([p.intensity for p in pts], [p.achieved_tflops for p in pts], s=18, color="#1f77b4", zorder=3)
    for i, p in _numbered(r):
        ax.annotate(str(i), (p.intensity, p.achieved_tflops), textcoords="offset points", xytext=(4, 4))
    ax.set(xscale="log", yscale="log", xlim=X_RANGE, xlabel="arithmetic intensity (flop/byte)", ylabel="TFLOPS")
    ax.set_title(f"Roofline — {r.peaks.gpu}")
    ax.grid(True, which="major", lw=0.3)
    fig.subplots_adjust(right=0.85)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def render_html(r: RooflineResult) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(p.label)}</td><td>{p.time_us:,.1f}</td><td>{p.intensity:,.1f}</td>"
        f"<td>{p.achieved_tflops:,.1f}</td><td>{p.bound or ''}</td>"
        f"<td>{'' if p.pct_of_roof is None else f'{p.pct_of_roof:.0f}%'}</td></tr>"
        for p in r.points
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>kscope roofline</title></head><body>"
        f"{svg(r)}<table border='1' cellpadding='3'><tr><th>op / kernel</th><th>µs</th><th>flop/B</th>"
        f"<th>TFLOPS</th><th>bound</th><th>% roof</th></tr>{rows}</table></body></html>\n"
    )


PRESENTERS: dict[str, Presenter] = {
    "json": Presenter("json", ".json", False, render_json),
    "svg": Presenter("svg", ".svg", False, svg),
    "html": Presenter("html", ".html", False, render_html),
    "png": Presenter("png", ".png", True, png),
}
