"""``kscope fit``: the ISA fit view of every kernel in the given code objects."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope import api
from kernelscope.cli._common import emit, guarded, pick
from kernelscope.presenters.fit import PRESENTERS, render_text


@guarded
def fit(
    paths: Annotated[list[Path], typer.Argument(help="Code objects (as kscope isa).")],
    block_size: Annotated[Optional[int], typer.Option(help="Threads per block/workgroup for occupancy.")] = None,
    dynamic_shared: Annotated[Optional[int], typer.Option(help="Dynamic shared memory / LDS bytes per block.")] = None,
    arch: Annotated[
        Optional[str], typer.Option(help="Only this architecture's code (sm_90, gfx942) from fat binaries.")
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.fit.v1.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE.")] = None,
) -> None:
    """Resources against the architecture's limits, instruction mix, limiter and what is left on the table."""
    presenter = pick({"json": json}, output, PRESENTERS)
    report = api.fit(paths, block_size=block_size, dynamic_shared=dynamic_shared, arch=arch)
    if presenter is None:
        sys.stdout.write(render_text(report))
    else:
        emit(presenter, report, output)
