"""``kscope roofline``: kernels against the datasheet and measured roofs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope import api
from kernelscope.cli._common import CaptureOption, emit, guarded, out, pick, read_folders
from kernelscope.presenters.roofline import PRESENTERS, rich_renderable


@guarded
def roofline(
    trace: Annotated[
        Optional[Path], typer.Argument(help="Kineto trace recorded with shapes (record_shapes=True).")
    ] = None,
    gpu: Annotated[
        Optional[str], typer.Option(help="GPU in the hardware database (default: the trace's or this machine's).")
    ] = None,
    flops: Annotated[
        Optional[str], typer.Option(help="FLOPs: a number or an expression over --var names (2*M*N*K).")
    ] = None,
    bytes_moved: Annotated[Optional[str], typer.Option("--bytes", help="Bytes moved: number or expression.")] = None,
    time_us: Annotated[Optional[float], typer.Option(help="Kernel time in µs.")] = None,
    dtype: Annotated[
        Optional[str],
        typer.Option(help="bf16 | fp16 | fp8 | tf32 | fp32 (default: what the kernel's SASS names, else bf16)."),
    ] = None,
    vector: Annotated[bool, typer.Option(help="Runs on the vector units, not the matrix units.")] = False,
    var: Annotated[Optional[list[str]], typer.Option(help="Shape variable NAME=VALUE (repeat).")] = None,
    label: Annotated[str, typer.Option(help="Name of the given kernel.")] = "kernel",
    ceilings_file: Annotated[
        Optional[Path], typer.Option("--ceilings", help="Measured profile (kscope ceilings).")
    ] = None,
    capture: CaptureOption = None,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.roofline.v1.")] = False,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="Write to FILE (.json, .svg, .html).")
    ] = None,
) -> None:
    """Arithmetic intensity, bound, % of datasheet and measured roofs, 90% target; plot with -o F.svg/.html."""
    presenter = pick({"json": json}, output, PRESENTERS)
    read_folders([trace])
    result = api.roofline(
        trace,
        gpu=gpu,
        flops=flops,
        bytes_moved=bytes_moved,
        time_us=time_us,
        dtype=dtype,
        vector=vector,
        var=var or (),
        label=label,
        ceilings_file=ceilings_file,
        capture=capture,
    )
    if presenter is None:
        out.print(rich_renderable(result))
    else:
        emit(presenter, result, output)
