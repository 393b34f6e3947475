"""The ``kscope`` command line: a thin shell over ``kernelscope.api``."""

from __future__ import annotations

import typer

from kernelscope.cli.att import att
from kernelscope.cli.bench import bench
from kernelscope.cli.ceilings import ceilings
from kernelscope.cli.classify import classify
from kernelscope.cli.demo import demo
from kernelscope.cli.diff import diff
from kernelscope.cli.fit import fit
from kernelscope.cli.gap import gap
from kernelscope.cli.hw import hw
from kernelscope.cli.isa import isa
from kernelscope.cli.loop import evaluate, init, ledger, task_app
from kernelscope.cli.memory import memory_app
from kernelscope.cli.ncu import ncu
from kernelscope.cli.profile import profile
from kernelscope.cli.replay import replay
from kernelscope.cli.report import report, shapes
from kernelscope.cli.roofline import roofline
from kernelscope.cli.skills import skills_app
from kernelscope.cli.sources import find, index
from kernelscope.cli.suggest import suggest

app = typer.Typer(
    name="kscope",
    help="kernelscope: profile, rank, name, read and evaluate GPU kernels (AMD ROCm and NVIDIA CUDA).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """kernelscope: profile, rank, name, read and evaluate GPU kernels (AMD ROCm and NVIDIA CUDA)."""


app.command()(gap)
app.command()(diff)
app.command()(classify)
app.command()(index)
app.command()(find)
app.command()(isa)
app.command()(ceilings)
app.command()(hw)
app.command()(fit)
app.command()(att)
app.command()(ncu)
app.command()(roofline)
app.command()(replay)
app.command()(report)
app.command()(shapes)
app.command()(bench)
app.command()(demo)
app.command()(init)
app.add_typer(task_app, name="task")
app.command("eval")(evaluate)
app.command()(ledger)
app.command()(suggest)
app.add_typer(memory_app, name="memory")
app.add_typer(skills_app, name="skills")
app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(profile)


def main() -> None:
    app()
