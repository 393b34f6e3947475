"""A timing measurement as a rich table or JSON (kernelscope.measurement.v1)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table as RichTable
from rich.text import Text

from kernelscope.model.measurement import Measurement
from kernelscope.presenters.base import Presenter, render_json


def rich_renderable(m: Measurement) -> Group:
    s, ci = m.summary, m.median_ci
    tab = RichTable(title=f"{m.label} on {m.device}", title_justify="left", header_style="bold")
    for h in ("median µs", f"{ci.confidence:.0%} CI", "IQR µs", "mean µs", "min µs", "max µs", "samples", "mode"):
        tab.add_column(h, justify="right")
    how = m.mode + (f", graph x{m.calls_per_sample}" if m.graph else "")
    tab.add_row(
        f"{s.median:,.3f}",
        f"{ci.low:,.3f}-{ci.high:,.3f}",
        f"{s.iqr:,.3f}",
        f"{s.mean:,.3f}",
        f"{s.min:,.3f}",
        f"{s.max:,.3f}",
        str(s.n),
        how,
    )
    return Group(tab, *(Text(w, style="yellow") for w in m.warnings))


PRESENTERS: dict[str, Presenter] = {"json": Presenter("json", ".json", False, render_json)}
