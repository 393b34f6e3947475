"""``kscope replay``: one hot operator of a Kineto trace as a self-contained PyTorch script."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated, Optional

import msgspec
import typer

from kernelscope import api
from kernelscope.cli._common import CaptureOption, err, guarded, progress_bar, show
from kernelscope.errors import InputError
from kernelscope.model.replay import Replay
from kernelscope.presenters.replay import list_renderable, rich_renderable, script


@guarded
def replay(
    trace: Annotated[Path, typer.Argument(help="Kineto trace recorded with shapes (record_shapes=True).")],
    kernel: Annotated[
        Optional[str], typer.Option("--kernel", "-k", help="Regex on kernel names: the op that launched them.")
    ] = None,
    op: Annotated[Optional[str], typer.Option(help="Operator name (aten::mm): its hottest signature.")] = None,
    rank: Annotated[int, typer.Option(help="Take the K-th hottest matching signature.")] = 1,
    list_: Annotated[
        bool, typer.Option("--list", help="List the matching signatures (all ops without --kernel/--op).")
    ] = False,
    capture: CaptureOption = None,
    json: Annotated[
        bool, typer.Option("--json", help="JSON, schema kernelscope.replay.v1 (--list: replay-list.v1).")
    ] = False,
    output: Annotated[
        Optional[Path],
        typer.Option("--output", "-o", help="Script path; - for stdout. Default: replay_<op>.py here, never replaced."),
    ] = None,
) -> None:
    """Write a script that replays one op of a trace alone: its inputs' shapes, dtypes and strides, the
    kernels it launched; it prints KSCOPE_METRIC time_us, and with --check compares kernels."""
    to_stdout = output is not None and str(output) == "-"
    if (list_ and output is not None) or (json and to_stdout):
        raise InputError("-o is the script: --list writes none, and -o - leaves no stdout for --json")
    with progress_bar(counted=False) as bar:
        bar.add_task(f"reading {trace}")
        found = (
            api.replay_candidates(trace, kernel=kernel, op=op, capture=capture)
            if list_
            else api.replay(trace, kernel=kernel, op=op, rank=rank, capture=capture)
        )
    if not isinstance(found, Replay):
        show(found, json, list_renderable)
        return
    if to_stdout:
        sys.stdout.write(script(found, "replay.py"))
        return
    path = output or Path("replay_" + re.sub(r"\W+", "_", found.op.rpartition("::")[2]).strip("_") + ".py")
    if output is None and path.exists():
        raise InputError(f"{path} exists (it may hold your edits): pass -o FILE (an existing -o FILE is replaced)")
    path.write_text(script(found, str(path)))
    written = msgspec.structs.replace(found, script=str(path.resolve()))
    show(written, json, rich_renderable)
    if not json:
        err.print(f"wrote {path}: python3 {path} [--check]", highlight=False)
