"""``kscope isa``: read GPU code objects."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope import api
from kernelscope.cli._common import Parquet, emit, guarded, out, pick, progress_bar, ticker
from kernelscope.presenters.isa import PRESENTERS, rich_renderable


@guarded
def isa(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Code objects: .hsaco/.co/.o, offload bundles, .cubin, .fatbin, ELF/.so with fatbins, "
            "Triton cache directories."
        ),
    ],
    block_size: Annotated[
        Optional[int], typer.Option(help="Threads per block/workgroup for occupancy (default: compiler metadata).")
    ] = None,
    dynamic_shared: Annotated[
        Optional[int], typer.Option(help="Dynamic shared memory / LDS bytes per block (default: Triton metadata or 0).")
    ] = None,
    arch: Annotated[
        Optional[str], typer.Option(help="Only this architecture's code (sm_90, gfx942) from fat binaries.")
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.isa.v1.")] = False,
    csv: Annotated[bool, typer.Option("--csv", help="CSV.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Markdown.")] = False,
    parquet: Parquet = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE.")] = None,
) -> None:
    """Registers, spills, LDS/shared memory, scratch, instruction mix and occupancy of each kernel."""
    presenter = pick({"json": json, "csv": csv, "markdown": markdown, "parquet": parquet}, output, PRESENTERS)
    with progress_bar() as bar:
        objs = api.isa(paths, block_size=block_size, dynamic_shared=dynamic_shared, arch=arch, progress=ticker(bar))
    if presenter is None:
        out.print(rich_renderable(objs))
    else:
        emit(presenter, objs, output)
