"""Plots as inline SVG text: no JavaScript, no fonts or scripts fetched, so a report opens offline.

Each function takes plain numbers and returns one ``<svg>`` element. Colours come from one palette so
a category keeps its colour across plots of the same report.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from kernelscope.errors import one_line

PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
OTHER = "#c7c7c7"
_FONT = 'font-family="sans-serif" font-size="11"'


def _text(label: str) -> str:
    """A label as SVG text: control characters escaped (kernel names are the profiled program's), then HTML."""
    return html.escape(one_line(label))


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _open(width: int, height: int, title: str, kind: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" {_FONT} class="plot" '
        f'data-plot="{kind}">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="8" y="18" font-size="13" font-weight="bold">{_text(title)}</text>',
    ]


def bars(items: Sequence[tuple[str, float]], *, title: str, unit: str, kind: str, width: int = 860) -> str:
    """Horizontal bars, longest first as given; the label is cut at 62 characters, the full name a tooltip."""
    row, top, label_w = 20, 30, 420
    height = top + row * len(items) + 10
    out = _open(width, height, title, kind)
    peak = max((v for _, v in items), default=0.0) or 1.0
    for i, (name, value) in enumerate(items):
        y = top + i * row
        w = max(1.0, (width - label_w - 90) * value / peak)
        fill = OTHER if name == "other" else colour(i)
        short = name if len(name) <= 62 else name[:59] + "..."
        out.append(
            f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end">{_text(short)}<title>{_text(name)}</title></text>'
        )
        out.append(f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row - 6}" fill="{fill}"/>')
        out.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 14}">{value:,.1f} {_text(unit)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def stacked_area(
    xs: Sequence[float], series: Mapping[str, Sequence[float]], *, title: str, x_label: str, kind: str, width: int = 860
) -> str:
    """Series stacked bottom-up in the order given (e.g. waves in EXEC, WAIT, STALL, IDLE over time)."""
    height, left, right, top, bottom = 300, 50, 120, 30, 40
    out = _open(width, height, title, kind)
    if not xs:
        out += ['<text x="50" y="150">no samples</text>', "</svg>"]
        return "\n".join(out)
    x0, x1 = xs[0], xs[-1] if xs[-1] > xs[0] else xs[0] + 1
    totals = [sum(s[i] for s in series.values()) for i in range(len(xs))]
    peak = max(totals) or 1.0

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * (width - left - right)

    def py(v: float) -> float:
        return height - bottom - v / peak * (height - top - bottom)

    base = [0.0] * len(xs)
    for i, (name, ys) in enumerate(series.items()):
        upper = [b + y for b, y in zip(base, ys, strict=True)]
        pts = [f"{px(x):.1f},{py(u):.1f}" for x, u in zip(xs, upper, strict=True)]
        pts += [f"{px(x):.1f},{py(b):.1f}" for x, b in zip(reversed(xs), reversed(base), strict=True)]
        out.append(f'<polygon points="{" ".join(pts)}" fill="{colour(i)}" fill-opacity="0.85"/>')
        out.append(f'<rect x="{width - right + 10}" y="{top + 18 * i}" width="12" height="12" fill="{colour(i)}"/>')
        out.append(f'<text x="{width - right + 28}" y="{top + 18 * i + 10}">{_text(name)}</text>')
        base = upper
    out.append(f'<text x="{left}" y="{height - 12}">{_text(x_label)}: {x0:,.0f} … {x1:,.0f}</text>')
    out.append(f'<text x="{left - 6}" y="{top + 4}" text-anchor="end">{peak:,.0f}</text>')
    out.append("</svg>")
    return "\n".join(out)
