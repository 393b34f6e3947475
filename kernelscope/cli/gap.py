"""``kscope gap``: rank kernels by GPU time."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional, cast, get_args

import typer

from kernelscope import api
from kernelscope.cli._common import (
    ArchOption,
    ModuleOption,
    Parquet,
    either,
    emit,
    guarded,
    out,
    pick,
    progress_bar,
    read_folders,
)
from kernelscope.model.gap import GroupBy
from kernelscope.presenters.gap import PRESENTERS, rich_renderable


@guarded
def gap(
    traces: Annotated[list[Path], typer.Argument(help="Profiler outputs (any readable format); several = ranks.")],
    fmt: Annotated[Optional[str], typer.Option("--format", "-f", help="Skip sniffing: reader name.")] = None,
    window: Annotated[
        Optional[str],
        typer.Option(help="N = last N ProfilerStep#s; START_US:END_US = time range; steady = steady iterations."),
    ] = None,
    phase_by: Annotated[Optional[str], typer.Option(help="Split by enclosing annotations matching REGEX.")] = None,
    group_by: Annotated[
        str,
        typer.Option(
            help="name (exact), function (short base name), category, kind, or variant (a row per launch "
            "configuration: grid, block, registers, shared memory)."
        ),
    ] = "name",
    per_rank: Annotated[bool, typer.Option(help="One row per (rank, kernel).")] = False,
    include_memory: Annotated[bool, typer.Option(help="Count memcpy/memset as rows and busy time.")] = False,
    include_harness: Annotated[
        bool, typer.Option(help="Keep benchmark/tuning bursts (autotuner timing loops) in the rows and totals.")
    ] = False,
    find_sources: Annotated[
        bool, typer.Option(help="Add each kernel's source file, upstream URL and test command (kscope find).")
    ] = False,
    repo: Annotated[
        Optional[list[Path]], typer.Option(help="Source checkout to search (repeat); unindexed ones are indexed.")
    ] = None,
    index_db: Annotated[Optional[Path], typer.Option(help="Source index file (default: $KSCOPE_INDEX).")] = None,
    arch: ArchOption = None,
    module: ModuleOption = None,
    code: Annotated[
        Optional[list[Path]],
        typer.Option(help="Code objects / Triton cache dirs (repeat): each row's variant joined to the one it ran."),
    ] = None,
    top: Annotated[int, typer.Option(help="Rows in the terminal table (0 = all).")] = 30,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.gap.v1.")] = False,
    csv: Annotated[bool, typer.Option("--csv", help="CSV; leading columns are Magpie's.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Markdown.")] = False,
    parquet: Parquet = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE.")] = None,
) -> None:
    """Rank kernels by GPU time: calls, total/avg/median/min/max/std, share, busy/idle/wall totals."""
    if group_by not in get_args(GroupBy):
        raise typer.BadParameter(f"choose {either(get_args(GroupBy))}", param_hint="--group-by")
    presenter = pick({"json": json, "csv": csv, "markdown": markdown, "parquet": parquet}, output, PRESENTERS)
    read_folders(traces)
    with progress_bar(counted=False) as bar:
        task = bar.add_task("reading", total=None)
        result = api.gap_report(
            traces,
            fmt=fmt,
            window=window,
            phase_by=phase_by,
            group_by=cast(GroupBy, group_by),
            per_rank=per_rank,
            include_memory=include_memory,
            include_harness=include_harness,
            find_sources=find_sources,
            repo=repo,
            index_db=index_db,
            arch=arch,
            module=module,
            code=code,
            progress=lambda src: bar.update(task, description=f"reading {Path(src).name}", advance=1),
        )
    if presenter is None:
        out.print(rich_renderable(result, top=top or None, width=out.width))
    else:
        emit(presenter, result, output)
