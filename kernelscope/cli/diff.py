"""``kscope diff``: compare two profiles kernel by kernel, with significance tests."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional, cast, get_args

import typer

from kernelscope import api
from kernelscope.cli._common import Parquet, either, emit, guarded, out, pick, read_folders
from kernelscope.errors import InputError
from kernelscope.model.gap import GroupBy
from kernelscope.model.stats import ALPHA, MIN_SAMPLES, RESAMPLES
from kernelscope.presenters.diff import PRESENTERS, rich_renderable


@guarded
def diff(
    traces: Annotated[
        Optional[list[Path]], typer.Argument(help="A B: baseline and candidate, one file each (--a/--b for more).")
    ] = None,
    a: Annotated[Optional[list[Path]], typer.Option("--a", "-a", help="Baseline file (repeat: ranks).")] = None,
    b: Annotated[Optional[list[Path]], typer.Option("--b", "-b", help="Candidate file (repeat: ranks).")] = None,
    fmt: Annotated[Optional[str], typer.Option("--format", "-f", help="Skip sniffing: reader name.")] = None,
    window: Annotated[
        Optional[str], typer.Option(help="N = last N ProfilerStep#s; START_US:END_US = time range; steady (each side).")
    ] = None,
    group_by: Annotated[str, typer.Option(help="name (exact), function (short base name), category or kind.")] = "name",
    include_harness: Annotated[
        bool, typer.Option(help="Keep benchmark/tuning bursts (autotuner timing loops) on both sides.")
    ] = False,
    alpha: Annotated[float, typer.Option(help="Significance level; the CI level is 1 - alpha.")] = ALPHA,
    min_launches: Annotated[int, typer.Option(help="Fewer launches on a side: significance n/a.")] = MIN_SAMPLES,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples for the median-ratio CI.")] = RESAMPLES,
    seed: Annotated[int, typer.Option(help="Bootstrap random seed (fixed: same inputs, same CIs).")] = 0,
    top: Annotated[int, typer.Option(help="Rows in the terminal table (0 = all).")] = 30,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.diff.v1.")] = False,
    csv: Annotated[bool, typer.Option("--csv", help="CSV of the kernel rows.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Markdown.")] = False,
    parquet: Parquet = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE.")] = None,
) -> None:
    """Compare profile B against baseline A: added/removed kernels, deltas, significance, totals."""
    if traces and (a or b):
        raise InputError("give A B as two arguments, or --a FILE... --b FILE..., not both")
    if traces:
        if len(traces) != 2:
            raise InputError(f"expected two files, A and B, found {len(traces)}; use --a/--b for several per side")
        a, b = [traces[0]], [traces[1]]
    if group_by not in get_args(GroupBy):
        raise InputError(f"--group-by {group_by!r}: choose {either(get_args(GroupBy))}")
    presenter = pick({"json": json, "csv": csv, "markdown": markdown, "parquet": parquet}, output, PRESENTERS)
    read_folders([*(a or []), *(b or [])])
    result = api.diff(
        a or [],
        b or [],
        fmt=fmt,
        window=window,
        group_by=cast(GroupBy, group_by),
        include_harness=include_harness,
        alpha=alpha,
        min_launches=min_launches,
        resamples=resamples,
        seed=seed,
    )
    if presenter is None:
        out.print(rich_renderable(result, top=top or None, width=out.width))
    else:
        emit(presenter, result, output)
