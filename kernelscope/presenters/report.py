"""The report as Markdown (``REPORT.md``) and as one self-contained HTML file (``index.html``).

The HTML holds its CSS, its plots (inline SVG, see ``plots``) and the report's JSON in the page:
nothing is fetched, so it opens offline and can be mailed or attached to an issue as one file.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from kernelscope.errors import one_line
from kernelscope.model.att import AttResult
from kernelscope.model.hotspots import Hotspot, top_reason
from kernelscope.model.ncu import NcuResult
from kernelscope.model.report import Report
from kernelscope.presenters import plots
from kernelscope.presenters.base import Column, Table, fmt, render_json, render_markdown, short_name
from kernelscope.presenters.roofline import png as roofline_png
from kernelscope.presenters.roofline import svg as roofline_svg
from kernelscope.presenters.roofline import table as roofline_table
from kernelscope.presenters.suggest import table as candidates_table

TOP = 15  # kernels in the gap plot and tables; the rest is one "other" bar

_CSS = """
body{font-family:sans-serif;margin:24px;max-width:1100px;color:#222}
h1{font-size:22px}h2{font-size:17px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:32px}
table{border-collapse:collapse;font-size:12px;margin:8px 0}
td,th{border:1px solid #ddd;padding:3px 6px;text-align:right}td.l,th.l{text-align:left}
th{background:#f4f4f4}.note{color:#666;font-size:12px}ul.headline li{margin:3px 0}
svg.plot{display:block;margin:10px 0;border:1px solid #eee}
"""


# --- tables shared by both outputs ----------------------------------------------------------------


def _gap_table(r: Report) -> Table | None:
    if r.gap is None:
        return None
    t = r.gap.totals
    cols = [
        Column("name", "Kernel", justify="left"),
        Column("kind", "Kind", justify="left"),
        Column("calls", "Calls"),
        Column("total_us", "Total µs", 1),
        Column("avg_us", "Avg µs", 2),
        Column("pct", "%", 1),
    ]
    rows = [{**msgspec_row(k), "name": short_name(k.name, k.function)} for k in r.gap.kernels[:TOP]]
    summary = [("kernel time", f"{t.kernel_time_us:,.1f} µs"), ("launches", str(t.launches))]
    if t.busy_time_us is not None:
        summary.append(("busy", f"{t.busy_time_us:,.1f} µs"))
    return Table(f"Top {min(TOP, len(r.gap.kernels))} of {len(r.gap.kernels)} kernels by GPU time", cols, rows, summary)


def msgspec_row(obj: Any) -> dict[str, Any]:
    row: dict[str, Any] = msgspec.to_builtins(obj)
    return row


def _roofline_table(r: Report) -> Table | None:
    return None if r.roofline is None else roofline_table(r.roofline, f"Roofline ({r.roofline.peaks.gpu})")


def _code_table(r: Report) -> Table | None:
    kernels = [(o, k) for o in r.code for k in o.kernels]
    if not kernels:
        return None
    cols = [
        Column("name", "Kernel", justify="left"),
        Column("arch", "Arch", justify="left"),
        Column("regs", "VGPR / regs"),
        Column("agpr", "AGPR"),
        Column("spill", "Spills"),
        Column("smem", "LDS / shared B"),
        Column("occupancy", "Occupancy", justify="left"),
        Column("limiter", "Limiter", justify="left"),
    ]
    rows = []
    for _, k in kernels:
        occ = k.occupancy
        rows.append(
            {
                "name": k.name,
                "arch": k.arch,
                "regs": k.vgpr if k.vgpr is not None else k.registers,
                "agpr": k.agpr,
                "spill": (k.vgpr_spill or 0) + (k.sgpr_spill or 0) + (k.local_bytes or 0),
                "smem": k.lds_bytes if k.lds_bytes is not None else k.shared_bytes,
                "occupancy": f"{occ.per_unit} ({occ.pct:.0f}%)" if occ is not None else None,
                "limiter": occ.limiter if occ is not None else None,
            }
        )
    return Table("Code objects: resources and occupancy", cols, rows)


def _coverage_tables(r: Report) -> list[Table]:
    c = r.coverage
    if c is None:
        return []
    cols = [Column("kernel", "Kernel", justify="left")] + [Column(m, m) for m in c.models]
    matrix = []
    for kernel, per in c.matrix.items():
        row: dict[str, Any] = {"kernel": kernel}
        for m in c.models:
            cell = per.get(m)
            if cell is not None:
                sp = f", {cell.worst_speedup:.2f}-{cell.best_speedup:.2f}x" if cell.best_speedup is not None else ""
                row[m] = f"{cell.shapes} shapes, {cell.time_us:,.1f} µs{sp}"
        matrix.append(row)
    run_cols = [
        Column("kernel", "Kernel", justify="left"),
        Column("model", "Model", justify="left"),
        Column("stage", "Stage", justify="left"),
        Column("dtype", "Dtype", justify="left"),
        Column("shape", "Shape", justify="left"),
        Column("time_us", "µs", 1),
        Column("baseline_us", "Baseline µs", 1),
        Column("speedup", "Speedup", 2),
    ]
    runs = [{**msgspec_row(x), "shape": _shape(x.shape)} for x in c.runs]
    return [Table("Coverage: kernel x model", cols, matrix), Table("Shape ledger", run_cols, runs)]


def _shape(shape: dict[str, Any]) -> str:
    return " ".join(f"{k}={'x'.join(map(str, v)) if isinstance(v, list) else v}" for k, v in shape.items())


# what each tool measured per hotspot, shown between the instruction and its source
_HOT_MEASURES = {
    "Nsight Compute": [
        Column("stall_samples", "Stall samples"),
        Column("pct", "%", 1),
        Column("top_reason", "Top reason", justify="left"),
    ],
    "ATT": [
        Column("stall_class", "Class", justify="left"),
        Column("stall_cycles", "Stall cycles"),
        Column("stall_share", "% stall", 1),
        Column("hits", "Hits"),
    ],
}


def _hotspot_table(tool: str, of: str, hotspots: list[Hotspot], notes: list[str]) -> Table:
    cols = [
        Column("address", "Address", justify="left"),
        Column("instruction", "Instruction", justify="left"),
        *_HOT_MEASURES[tool],
        Column("source", "Source", justify="left"),
    ]
    rows = [{**msgspec_row(h), "address": f"{h.address:#x}", "top_reason": top_reason(h)[0] or None} for h in hotspots]
    return Table(f"{tool} hotspots: {of}", cols, rows, notes=notes)


def tables(r: Report) -> list[Table]:
    parts = (
        candidates_table(r.candidates, "Candidates (kscope suggest: details in report.json)") if r.candidates else None,
        _gap_table(r),
        _roofline_table(r),
        _code_table(r),
        *(
            _hotspot_table("Nsight Compute", k.name, k.hotspots, k.notes)
            for k in (r.ncu.kernels if r.ncu else [])
            if k.hotspots
        ),  # without source counters there is no table to show (the report's notes say why)
        *(_hotspot_table("ATT", a.path, a.hotspots, a.notes) for a in r.att),
        *_coverage_tables(r),
    )
    return [t for t in parts if t is not None]


# --- plots ----------------------------------------------------------------------------------------


def _gap_plot(r: Report) -> str | None:
    if r.gap is None or not r.gap.kernels:
        return None
    ks = r.gap.kernels
    items = [(short_name(k.name, k.function), k.total_us) for k in ks[:TOP]]
    rest = sum(k.total_us for k in ks[TOP:])
    if rest > 0:
        items.append(("other", rest))
    return plots.bars(items, title="GPU time by kernel", unit="µs", kind="gap")


def att_figures(a: AttResult) -> list[tuple[str, str]]:
    """(title, SVG): one ATT capture's stall breakdown and wave-state timeline."""
    name = Path(a.path).name
    items = list(a.stall_breakdown_pct.items())
    out = [(f"ATT stall breakdown: {name}", plots.bars(items, title="stall cycles", unit="%", kind="stalls"))]
    t = a.state_timeline
    if t is not None:
        xs = [t.start + i * t.bin_cycles for i in range(len(t.exec))]
        series = {"EXEC": t.exec, "WAIT": t.wait, "STALL": t.stall, "IDLE": t.idle}
        svg = plots.stacked_area(xs, series, title="waves per state", x_label="cycle", kind="wave-states")
        out.append((f"ATT wave-state timeline: {name}", svg))
    return out


def ncu_figures(ncu: NcuResult) -> list[tuple[str, str]]:
    """(title, SVG): each kernel's warp stall reasons."""
    out = []
    for k in ncu.kernels:
        if k.stall_breakdown:
            items = [(s.label, s.pct) for s in k.stall_breakdown[:12]]
            svg = plots.bars(items, title="warp stall samples", unit="%", kind="stalls")
            out.append((f"Nsight Compute stall reasons: {k.name}", svg))
    return out


def figures(r: Report) -> list[tuple[str, str]]:
    """(section title, SVG) of every plot the report's data allows."""
    out = []
    gap = _gap_plot(r)
    if gap:
        out.append(("Gap breakdown", gap))
    if r.roofline is not None and r.roofline.points:
        out.append(("Roofline", roofline_svg(r.roofline)))
    for a in r.att:
        out.extend(att_figures(a))
    if r.ncu is not None:
        out.extend(ncu_figures(r.ncu))
    return out


# --- renderers ------------------------------------------------------------------------------------


def markdown(r: Report) -> str:
    inputs = ", ".join(f"`{one_line(p)}`" for p in r.inputs)
    lines = [f"# {one_line(r.title)}", "", f"Created {r.created} from: {inputs}", ""]
    if r.headline:  # headline texts quote kernel names: escaped like every table cell
        lines += ["## Headline", ""]
        lines += [f"- **{f.topic}**: {one_line(f.text)} _({one_line(f.evidence)})_" for f in r.headline] + [""]
    lines += [f"> {one_line(n)}\n" for n in r.notes]
    lines.append("Plots: open `index.html` (offline, one file).\n")
    return "\n".join(lines) + render_markdown(tables(r))


def _html_table(t: Table) -> str:
    head = "".join(f'<th class="{"l" if c.justify == "left" else ""}">{html.escape(c.header)}</th>' for c in t.columns)
    body = []
    for row in t.rows:
        cells = "".join(
            f'<td class="{"l" if c.justify == "left" else ""}">{html.escape(fmt(row.get(c.key), c.decimals))}</td>'
            for c in t.columns
        )
        body.append(f"<tr>{cells}</tr>")
    summary = "".join(f"<li>{html.escape(k)}: {html.escape(one_line(v))}</li>" for k, v in t.summary)
    notes = "".join(f'<p class="note">{html.escape(one_line(n))}</p>' for n in t.notes)
    return (
        f"<h2>{html.escape(one_line(t.title))}</h2>"
        + (f"<ul>{summary}</ul>" if summary else "")
        + f"<table><tr>{head}</tr>{''.join(body)}</table>{notes}"
    )


def render_html(r: Report, extra: Sequence[tuple[str, str]] = ()) -> str:
    head = "".join(
        f"<li><b>{html.escape(f.topic)}</b>: {html.escape(one_line(f.text))} "
        f"<span class='note'>({html.escape(one_line(f.evidence))})</span></li>"
        for f in r.headline
    )
    figs = "".join(f"<h2>{html.escape(title)}</h2>{svg}" for title, svg in [*figures(r), *extra])
    data = render_json(r).replace("</", "<\\/")  # keep the JSON from closing the script element
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(r.title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{html.escape(r.title)}</h1><p class='note'>Created {html.escape(r.created)} from "
        f"{html.escape(', '.join(r.inputs))}</p>"
        + (f"<h2>Headline</h2><ul class='headline'>{head}</ul>" if head else "")
        + "".join(f"<p class='note'>{html.escape(one_line(n))}</p>" for n in r.notes)
        + figs
        + "".join(_html_table(t) for t in tables(r))
        + f"<script type='application/json' id='kscope-report'>{data}</script></body></html>\n"
    )


def write_folder(r: Report, folder: Path) -> list[Path]:
    """REPORT.md, index.html, report.json and (with a roofline) roofline.png: the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"REPORT.md": markdown(r), "index.html": render_html(r), "report.json": render_json(r)}
    written = []
    for name, text in files.items():
        (folder / name).write_text(text)
        written.append(folder / name)
    if r.roofline is not None and r.roofline.points:
        (folder / "roofline.png").write_bytes(roofline_png(r.roofline))
        written.append(folder / "roofline.png")
    return written
