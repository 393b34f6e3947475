"""``kscope fit``: the ISA fit view of every kernel in the given code objects."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope import api
from kernelscope.cli._common import emit, guarded, out, pick, progress_bar, ticker
from kernelscope.presenters.fit import PRESENTERS, render_comparison, render_text


@guarded
def fit(
    paths: Annotated[list[Path], typer.Argument(help="Code objects (as kscope isa).")],
    block_size: Annotated[Optional[int], typer.Option(help="Threads per block/workgroup for occupancy.")] = None,
    dynamic_shared: Annotated[Optional[int], typer.Option(help="Dynamic shared memory / LDS bytes per block.")] = None,
    arch: Annotated[
        Optional[str], typer.Option(help="Only this architecture's code (sm_90, gfx942) from fat binaries.")
    ] = None,
    compare: Annotated[
        bool, typer.Option("--compare", help="The same kernels side by side, one column per code object.")
    ] = False,
    json: Annotated[
        bool, typer.Option("--json", help="JSON, schema kernelscope.fit.v1 (--compare: kernelscope.fit-compare.v1).")
    ] = False,
    trace: Annotated[
        Optional[list[Path]],
        typer.Option(help="Profile of the workload (repeat): of a timed kernel, only the binary that ran."),
    ] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE.")] = None,
) -> None:
    """Resources against the architecture's limits, instruction mix, limiter and what is left on the table."""
    presenter = pick({"json": json}, output, PRESENTERS)
    if compare:
        with progress_bar() as bar:
            table = api.fit_compare(
                paths, block_size=block_size, dynamic_shared=dynamic_shared, arch=arch, progress=ticker(bar)
            )
        if presenter is None:
            out.print(render_comparison(table))
        else:
            emit(presenter, table, output)
        return
    with progress_bar() as bar:
        report = api.fit(
            paths, block_size=block_size, dynamic_shared=dynamic_shared, arch=arch, trace=trace, progress=ticker(bar)
        )
    if presenter is None:
        sys.stdout.write(render_text(report))
    else:
        emit(presenter, report, output)
