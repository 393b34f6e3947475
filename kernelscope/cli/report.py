"""``kscope report`` and ``kscope shapes``: a report folder (REPORT.md, offline index.html, JSON) and
shape-ledger records from traces."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope import api
from kernelscope.cli._common import CaptureOption, err, guarded, out, read_folders
from kernelscope.model.shapes import ShapeRuns
from kernelscope.presenters.base import note_text, render_json
from kernelscope.presenters.report import write_folder
from kernelscope.readers.shape_ledger import write as ledger_lines


@guarded
def report(
    traces: Annotated[Optional[list[Path]], typer.Argument(help="Profiles (any format kscope gap reads).")] = None,
    code: Annotated[Optional[list[Path]], typer.Option(help="Code objects for resources and occupancy.")] = None,
    shapes: Annotated[Optional[Path], typer.Option(help="Shape ledger (JSONL) for the coverage table.")] = None,
    ncu: Annotated[Optional[Path], typer.Option(help="Nsight Compute report: stall reasons and hotspots.")] = None,
    att: Annotated[Optional[list[Path]], typer.Option(help="Decoded ATT folder (ui_output_agent_*).")] = None,
    gpu: Annotated[Optional[str], typer.Option(help="GPU for the roofline (default: the trace's).")] = None,
    ceilings_file: Annotated[Optional[Path], typer.Option("--ceilings", help="Measured profile.")] = None,
    window: Annotated[Optional[str], typer.Option(help="N last steps or START_US:END_US.")] = None,
    title: Annotated[Optional[str], typer.Option(help="Report title.")] = None,
    capture: CaptureOption = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder to write.")] = Path("kscope-report"),
    json: Annotated[bool, typer.Option("--json", help="Also print the report, schema kernelscope.report.v1.")] = False,
) -> None:
    """Write a report folder: REPORT.md, an offline index.html with plots, report.json, roofline.png."""
    read_folders([*(traces or []), ncu])
    result = api.report(
        traces or [],
        code=code or [],
        shapes_file=shapes,
        ncu_report=ncu,
        att_dirs=att or [],
        gpu=gpu,
        ceilings_file=ceilings_file,
        window=window,
        title=title,
        capture=capture,
    )
    written = write_folder(result, output)
    err.print(f"wrote {', '.join(str(p) for p in written)}", highlight=False)
    for n in result.notes:
        err.print(note_text(n))
    if json:
        sys.stdout.write(render_json(result))
    else:
        out.print(f"{output}/REPORT.md, {output}/index.html")


@guarded
def shapes(
    traces: Annotated[list[Path], typer.Argument(help="Kineto traces recorded with shapes.")],
    model: Annotated[Optional[str], typer.Option(help="Model name (default: the trace file's).")] = None,
    stage: Annotated[Optional[str], typer.Option(help="Stage: prefill, decode, train, ...")] = None,
    append: Annotated[Optional[Path], typer.Option(help="Append the records to this ledger (JSONL).")] = None,
    json: Annotated[bool, typer.Option("--json", help="One JSON document, schema kernelscope.shapes.v1.")] = False,
    capture: CaptureOption = None,
) -> None:
    """Shape-ledger lines (kernel, op, input shapes, dtype, time) from traces: stdout or --append."""
    read_folders(traces)
    runs = api.shapes(traces, model=model, stage=stage, capture=capture)
    if json:
        sys.stdout.write(render_json(ShapeRuns(runs=runs)))
        return
    text = ledger_lines(runs)
    if append is None:
        sys.stdout.write(text)
    else:
        with append.open("a") as f:
            f.write(text)
        err.print(f"appended {text.count(chr(10))} records to {append}", highlight=False)
