"""``kscope classify``: what each kernel name says."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope import api
from kernelscope.cli._common import Parquet, emit, guarded, out, pick
from kernelscope.presenters.identity import PRESENTERS, rich_renderable


@guarded
def classify(
    names: Annotated[Optional[list[str]], typer.Argument(help="Kernel names as profilers print them.")] = None,
    file: Annotated[
        Optional[Path], typer.Option("--file", "-F", help="Names, one per line (or JSON lines with name); - = stdin.")
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="JSON array, schema kernelscope.classify.v1.")] = False,
    csv: Annotated[bool, typer.Option("--csv", help="CSV.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Markdown.")] = False,
    parquet: Parquet = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE.")] = None,
) -> None:
    """Name kernels: kind (library/compiler), category, dtype, tile, MMA, layout, function, vendor."""
    presenter = pick({"json": json, "csv": csv, "markdown": markdown, "parquet": parquet}, output, PRESENTERS)
    idents = api.classify_names(names or [], file)
    if presenter is None:
        out.print(rich_renderable(idents, width=out.width))
    else:
        emit(presenter, idents, output)
