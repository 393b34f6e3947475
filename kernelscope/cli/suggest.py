"""``kscope suggest``: ranked experiments from the evidence kscope holds."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope import api
from kernelscope.cli._common import CaptureOption, emit, guarded, out, pick, read_folders
from kernelscope.presenters.suggest import PRESENTERS, rich_renderable


@guarded
def suggest(
    traces: Annotated[
        Optional[list[Path]],
        typer.Argument(help="Profiles (any format kscope gap reads); a Kineto trace with shapes adds the roofline."),
    ] = None,
    ncu: Annotated[
        Optional[Path], typer.Option(help="Nsight Compute report (.ncu-rep, or its source-page CSV).")
    ] = None,
    att: Annotated[Optional[list[Path]], typer.Option(help="Decoded ATT folder (repeat).")] = None,
    code: Annotated[
        Optional[list[Path]],
        typer.Option(
            "--code", "--isa", help="Code object, or a folder of them such as ~/.triton/cache (repeat; as report, gap)."
        ),
    ] = None,
    kernel: Annotated[Optional[str], typer.Option(help="Only kernels whose name matches this regex.")] = None,
    workspace: Annotated[
        Optional[Path], typer.Option("--workspace", "-w", help="Workspace whose ledger demotes failed levers.")
    ] = None,
    repo: Annotated[Optional[Path], typer.Option(help="Source checkout: the kernels' source and test files.")] = None,
    index_db: Annotated[Optional[Path], typer.Option(help="Source index file (default: $KSCOPE_INDEX).")] = None,
    gpu: Annotated[Optional[str], typer.Option(help="GPU for the roofline (default: the input's).")] = None,
    ceilings_file: Annotated[Optional[Path], typer.Option("--ceilings", help="Measured profile.")] = None,
    top: Annotated[int, typer.Option(help="Experiments to list.")] = 10,
    capture: CaptureOption = None,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.suggest.v1.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Markdown.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE.")] = None,
) -> None:
    """Ranked experiments: lever, kernel, evidence -> inference -> action, risk, expected effect, eval contract."""
    presenter = pick({"json": json, "markdown": markdown}, output, PRESENTERS)
    read_folders([*(traces or []), ncu])
    result = api.suggest(
        traces or [],
        ncu_report=ncu,
        att_dirs=att or [],
        code=code or [],
        kernel=kernel,
        workspace=workspace,
        repo=repo,
        index_db=index_db,
        gpu=gpu,
        ceilings_file=ceilings_file,
        top=top,
        capture=capture,
    )
    if presenter is None:
        out.print(rich_renderable(result))
    else:
        emit(presenter, result, output)
