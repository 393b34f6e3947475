"""Replay presenters: the self-contained PyTorch script, a rich summary of the op chosen, the candidates.

The script is ``replay_template.py`` (checked by ruff and mypy like any module) under a docstring made
for the op, with the recorded call as its ``REPLAY`` literal; JSON is ``render_json`` of the records.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Group
from rich.table import Table as RichTable

from kernelscope.analyses.replay import describe_args
from kernelscope.errors import one_line
from kernelscope.model.replay import Replay, ReplayList
from kernelscope.presenters.base import Column, FittedTable, Table, display_names, rich_table, shown_text

_TEMPLATE = Path(__file__).with_name("replay_template.py")
_BODY = "from __future__ import annotations\n"  # the template's code starts here; its comments stay behind
_SLOT = "REPLAY: dict[str, Any] = {}  # kscope replay writes the recorded call here\n"


def script(r: Replay, name: str = "replay.py") -> str:
    """The script that replays ``r``, to be saved as ``name`` (which its usage lines show)."""
    template = _TEMPLATE.read_text()
    body = template[template.index(_BODY) :]
    literal = "# The call as recorded (kernelscope.replay.v1); the inputs are built from it.\n" + r.to_literal()
    return "#!/usr/bin/env python3\n" + _docstring(r, name) + body.replace(_SLOT, literal)


def _docstring(r: Replay, name: str) -> str:
    lines = [  # what the trace names is escaped (one_line): a kernel name must not write into the file's reader
        one_line(f"Replay {r.op} alone, as {Path(r.trace).name} recorded it (written by kscope replay)."),
        "",
        one_line(f"Arguments: {describe_args(r.args)}"),
        one_line(
            f"Trace: {r.calls} calls on {r.device or 'an unnamed GPU'}, {r.kernel_ns / 1e3:.1f} µs of kernels per "
            f"call (median); rank {r.rank} of {r.matches} signatures matching {r.selection}"
        ),
        "Kernels, in launch order:",
        *(one_line(f"  {ns / 1e3:8.1f} µs  {k}") for k, ns in zip(r.kernels, r.kernel_each_ns, strict=True)),
        *(one_line(f"Note: {n}") for n in r.notes),
        "",
        f"  python3 {name}            time it (median of 100 calls, L2 flushed): KSCOPE_METRIC time_us=...",
        f"  python3 {name} --check    launch it once under torch.profiler: the trace's kernels? KSCOPE_METRIC "
        "kernel_match=1|0",
        f"  python3 {name} --impl MODULE:FUNCTION    time FUNCTION(*args, **kwargs) on the same inputs instead",
        "",
        "REPLAY below is the call; edit it to try other shapes, dtypes, strides or values (kscope task new",
        "--from-replay reads it back without running this file). Needs Python >= 3.10 and PyTorch.",
    ]
    text = "\n".join(lines).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return f'"""{text}\n"""\n\n'


def rich_renderable(r: Replay) -> Group:
    """What was chosen, what the trace says about it, and what the script assumed."""
    grid = RichTable.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    grid.add_row("op", shown_text(f"{r.op}  (rank {r.rank} of {r.matches} matching {r.selection})"))
    grid.add_row("args", shown_text(describe_args(r.args)))
    grid.add_row(
        "trace",
        shown_text(
            f"{Path(r.trace).name} on {r.device or 'an unnamed GPU'}: {r.calls} calls, "
            f"{r.kernel_ns / 1e3:,.1f} µs of kernels per call (median), {r.total_ns / 1e3:,.1f} µs in all"
        ),
    )
    for k, ns in zip(r.kernels, r.kernel_each_ns, strict=True):
        grid.add_row("kernel", shown_text(f"{ns / 1e3:,.1f} µs  {k}"))
    for n in r.notes:
        grid.add_row("note", shown_text(n, style="yellow"))
    if r.script is not None:
        grid.add_row("script", shown_text(f"{r.script}  (python3 SCRIPT [--check])"))
    return Group(grid)


LIST_COLUMNS = [
    Column("rank", "#"),
    Column("op", "op", justify="left"),
    Column("args", "args", justify="left"),
    Column("calls", "calls"),
    Column("total_us", "µs total", 1),
    Column("kernel_us", "µs/call", 1),
    Column("kernels", "kernels (without their parameter lists)", justify="left"),
]


def list_renderable(r: ReplayList) -> FittedTable:
    """The matching signatures, hottest first, with why the ones that cannot be replayed cannot."""
    shown = display_names([k for c in r.candidates for k in c.kernels], params=False)
    rows = [
        {
            "rank": c.rank,
            "op": c.op,
            "args": c.args,
            "calls": c.calls,
            "total_us": c.total_ns / 1e3,
            "kernel_us": c.kernel_ns / 1e3,
            "kernels": ("" if c.replayable else f"(not replayable: {c.why_not}) ")
            + "; ".join(shown[k] for k in c.kernels),
        }
        for c in r.candidates
    ]
    return rich_table(Table(f"{r.trace}: {r.selection} ({r.device or 'unnamed GPU'})", LIST_COLUMNS, rows))
