"""``kscope bench``: time a GPU callable (``file.py:factory`` or ``module:factory``) with device events."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope import api
from kernelscope.cli._common import emit, guarded, out, pick
from kernelscope.presenters.measurement import PRESENTERS, rich_renderable


@guarded
def bench(
    target: Annotated[str, typer.Argument(help="FILE.py:FACTORY or MODULE:FACTORY; FACTORY(**args) returns fn().")],
    arg: Annotated[Optional[list[str]], typer.Option(help="Factory argument NAME=VALUE (repeat).")] = None,
    mode: Annotated[str, typer.Option(help="cold (L2 flushed before each call) or hot.")] = "cold",
    graph: Annotated[bool, typer.Option(help="Replay a captured CUDA/HIP graph (hot only).")] = False,
    warmup_ms: Annotated[float, typer.Option(help="Warm-up time before timing.")] = 50.0,
    min_time_ms: Annotated[float, typer.Option(help="Timed calls last about this long.")] = 300.0,
    calls: Annotated[Optional[int], typer.Option(help="Timed samples (instead of --min-time-ms).")] = None,
    timer: Annotated[str, typer.Option(help="events (device events) or cupti (kernel durations).")] = "events",
    metric: Annotated[
        Optional[str], typer.Option(help="Also print 'KSCOPE_METRIC NAME=median_us' (for kscope eval).")
    ] = None,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.measurement.v1.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE.")] = None,
) -> None:
    """Median, IQR and a bootstrap CI of the per-call GPU time of what FACTORY returns."""
    presenter = pick({"json": json}, output, PRESENTERS)
    m = api.bench_target(
        target,
        args=arg or (),
        mode=mode,
        graph=graph,
        warmup_ms=warmup_ms,
        min_time_ms=min_time_ms,
        calls=calls,
        timer=timer,
    )
    if metric:
        sys.stdout.write(f"KSCOPE_METRIC {metric}={m.summary.median:.4f}\n")
    if presenter is None:
        out.print(rich_renderable(m))
    else:
        emit(presenter, m, output)
