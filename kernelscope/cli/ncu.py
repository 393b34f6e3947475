"""``kscope ncu``: Nsight Compute's source page, summarized: where each kernel's warps stall."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope import api
from kernelscope.cli._common import emit, guarded, out, pick, read_folders
from kernelscope.presenters.ncu import PRESENTERS, rich_renderable


@guarded
def ncu(
    report: Annotated[
        Path,
        typer.Argument(
            help="An .ncu-rep (ncu --set full --import-source yes), or its source page as CSV "
            "(ncu --import R --page source --csv --print-source sass; gzip allowed)."
        ),
    ],
    kernel: Annotated[Optional[str], typer.Option(help="Only kernels whose name matches this regex.")] = None,
    top: Annotated[int, typer.Option(help="Hotspot instructions and source lines per kernel.")] = 10,
    context: Annotated[int, typer.Option(help="Instructions shown before and after each hotspot.")] = 2,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.ncu.v1.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Markdown.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE.")] = None,
) -> None:
    """Per kernel: headline, stall reasons, top SASS hotspots with context, and top source lines."""
    presenter = pick({"json": json, "markdown": markdown}, output, PRESENTERS)
    read_folders([report])
    result = api.ncu(report, kernel=kernel, top=top, context=context)
    if presenter is None:
        out.print(rich_renderable(result))
    else:
        emit(presenter, result, output)
