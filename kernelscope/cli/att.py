"""``kscope att``: analysis of decoded AMD ATT (thread trace) folders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope import api
from kernelscope.cli._common import emit, guarded, out, pick, progress_bar, ticker
from kernelscope.presenters.att import PRESENTERS, rich_renderable


@guarded
def att(
    dirs: Annotated[
        list[Path],
        typer.Argument(help="ATT folders (ui_output_agent_*, from rocprofv3 --att) or folders holding them."),
    ],
    top: Annotated[int, typer.Option(help="Hotspot instructions and source lines shown (0 = all).")] = 10,
    context: Annotated[int, typer.Option(help="Instructions shown before and after each hotspot.")] = 3,
    bins: Annotated[int, typer.Option(help="Points of the wave-state timeline (JSON).")] = 200,
    arch: Annotated[
        Optional[str], typer.Option(help="Occupancy rules to use (gfx950, gfx1201); default: from the capture.")
    ] = None,
    code_only: Annotated[
        bool,
        typer.Option(
            "--code-only",
            help="Read code.json alone: totals, hotspots, source lines, registers; no wave states, measured "
            "occupancy or cross-check (a quick look at captures with thousands of wave files).",
        ),
    ] = False,
    workers: Annotated[
        Optional[int], typer.Option(help="Processes reading the wave files of large captures (default: CPUs).")
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.att.v1.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Markdown.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE.")] = None,
) -> None:
    """Stall hotspots with disassembly and source, stall classes, wave states, occupancy, code.json check."""
    presenter = pick({"json": json, "markdown": markdown}, output, PRESENTERS)
    with progress_bar(auto_refresh=False) as bar:  # no refresh thread: large captures are read by forked processes
        tick = ticker(bar, lambda folder: f"wave files of {Path(folder).name}")
        report = api.att(
            dirs, top=top, context=context, bins=bins, arch=arch, code_only=code_only, workers=workers, progress=tick
        )
    if presenter is None:
        out.print(rich_renderable(report))
    else:
        emit(presenter, report, output)
