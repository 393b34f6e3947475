"""``kscope ceilings``: measure the present GPU's bandwidth and matrix throughput."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table as RichTable

from kernelscope import api
from kernelscope.cli._common import emit, err, guarded, out, pick
from kernelscope.presenters.base import Presenter, render_json

PRESENTERS = {"json": Presenter("json", ".json", False, render_json)}


@guarded
def ceilings(
    gib: Annotated[float, typer.Option(help="Buffer size for the bandwidth tests, GiB (far above L2).")] = 2.0,
    repeats: Annotated[int, typer.Option(help="Timed repeats per measurement (median kept).")] = 20,
    save: Annotated[bool, typer.Option(help="Store the profile where kscope roofline finds it.")] = True,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.ceilings.v1.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE.")] = None,
) -> None:
    """Measure achievable memory bandwidth and dense matrix throughput (needs a GPU), beside torch's."""
    presenter = pick({"json": json}, output, PRESENTERS)
    with err.status("measuring (about a minute)", spinner="dots"):
        profile, saved = api.ceilings(gib=gib, repeats=repeats, save=save)
    if saved is not None:
        err.print(f"saved {saved}", highlight=False)
    if presenter is not None:
        emit(presenter, profile, output)
        return
    tab = RichTable(title=f"Measured ceilings — {profile.device} ({profile.date})", title_justify="left")
    for h in ("measure", "kscope", "torch", "kscope/torch", "method"):
        tab.add_column(h, justify="left" if h in ("measure", "method") else "right")
    for c in profile.ceilings:
        ratio = f"{c.value / c.peer:.3f}" if c.peer else ""
        tab.add_row(c.what, f"{c.value:,.1f}", f"{c.peer:,.1f}" if c.peer else "", ratio, c.method)
    out.print(tab)
