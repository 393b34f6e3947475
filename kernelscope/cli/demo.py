"""``kscope demo``: run the main job on bundled real data and write a report folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.rule import Rule

from kernelscope.cli._common import err, guarded, out
from kernelscope.demo import run_demo, write_report
from kernelscope.presenters.base import render_json
from kernelscope.presenters.gap import rich_renderable


@guarded
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Report folder to write.")] = Path("kscope-demo"),
    top: Annotated[int, typer.Option(help="Rows per table.")] = 10,
    json: Annotated[bool, typer.Option("--json", help="Print every gap result as JSON (a list).")] = False,
) -> None:
    """Gap analysis of bundled real H100 and MI350X traces, checked against rocprofv3's own stats."""
    items = run_demo()
    report = write_report(items, out_dir)
    if json:
        out.file.write(render_json([{"dataset": it.key, "check": it.check, "gap": it.result} for it in items]))
    else:
        for it in items:
            out.print(Rule(it.title, align="left"))
            out.print(rich_renderable(it.result, top=top, width=out.width))
            if it.check:
                out.print(f"[bold]ground truth:[/bold] {it.check}")
    err.print(f"report written: {report}")
