"""``kscope hw``: the cited hardware spec database, and which entry the present GPU is."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope import api
from kernelscope.cli._common import emit, guarded, out, pick
from kernelscope.presenters.hw import PRESENTERS, renderable


@guarded
def hw(
    name: Annotated[
        Optional[str], typer.Argument(help="GPU (key, name or device-name alias); none = list all.")
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.hw.v1.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE.")] = None,
) -> None:
    """GPU specs with a citation for every value (UNKNOWN where no vendor source states it)."""
    presenter = pick({"json": json}, output, PRESENTERS)
    specs, detected = api.hardware(name)
    if presenter is None:
        out.print(renderable(specs, detected, full=name is not None))
    else:
        emit(presenter, (specs, detected), output)
