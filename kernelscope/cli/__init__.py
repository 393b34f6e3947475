"""The ``kscope`` command line: a thin shell over ``kernelscope.api``.

Each command's module is imported when the command is looked up (the click "lazy group" pattern), so
``kscope att DIR`` loads the ATT reader and presenter and not the trace readers, the identity rules or the
optimization loop; ``kscope --help`` loads them all to show their help lines.
"""

from __future__ import annotations

import importlib
from collections.abc import ItemsView, Iterator, KeysView, ValuesView
from typing import TYPE_CHECKING, Any

import typer
import typer.core
import typer.main
import typer.models

if TYPE_CHECKING:
    from typer._click.core import Command  # typer >= 0.29 vendors click
else:
    Command = object  # a type hint only: older typer builds on the click package, newer on its own copy

# name -> (module in kernelscope.cli, attribute: a command function or a sub-app), in help order
COMMANDS: dict[str, tuple[str, str]] = {
    "gap": ("gap", "gap"),
    "diff": ("diff", "diff"),
    "classify": ("classify", "classify"),
    "index": ("sources", "index"),
    "find": ("sources", "find"),
    "isa": ("isa", "isa"),
    "ceilings": ("ceilings", "ceilings"),
    "hw": ("hw", "hw"),
    "fit": ("fit", "fit"),
    "att": ("att", "att"),
    "ncu": ("ncu", "ncu"),
    "roofline": ("roofline", "roofline"),
    "replay": ("replay", "replay"),
    "report": ("report", "report"),
    "shapes": ("report", "shapes"),
    "bench": ("bench", "bench"),
    "tune": ("tune", "tune_app"),
    "demo": ("demo", "demo"),
    "init": ("loop", "init"),
    "eval": ("loop", "evaluate"),
    "ledger": ("loop", "ledger"),
    "suggest": ("suggest", "suggest"),
    "profile": ("profile", "profile"),
    "task": ("loop", "task_app"),
    "memory": ("memory", "memory_app"),
    "skills": ("skills", "skills_app"),
    "doctor": ("doctor", "doctor"),
}
# the workload's own arguments follow `--`; options kscope does not know are the workload's
_CONTEXT = {"profile": {"allow_extra_args": True, "ignore_unknown_options": True}}


def _one_line(command: Command) -> Command:
    """A command whose list entry is its help's first paragraph on one line (rich help keeps a docstring's line
    breaks, so a wrapped sentence printed as two), with its subcommands' likewise."""
    if command.short_help is None and command.help:
        command.short_help = " ".join(command.help.split("\n\n", 1)[0].split())
    for sub in getattr(command, "commands", {}).values():
        _one_line(sub)
    return command


def _load(name: str) -> Command:
    module, attr = COMMANDS[name]
    obj = getattr(importlib.import_module(f"kernelscope.cli.{module}"), attr)
    if isinstance(obj, typer.Typer):
        group = typer.main.get_group(obj)
        group.name = name
        return _one_line(group)
    info = typer.models.CommandInfo(name=name, callback=obj, context_settings=_CONTEXT.get(name))
    return _one_line(
        typer.main.get_command_from_info(
            info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode
        )
    )


class _Commands(dict[str, Command]):
    """The root's commands as click keeps them (``group.commands``), each built on first lookup."""

    def __missing__(self, name: str) -> Command:
        if name not in COMMANDS:
            raise KeyError(name)
        command = self[name] = _load(name)
        return command

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in COMMANDS else default

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)

    def keys(self) -> KeysView[str]:  # type: ignore[override]  # for "Did you mean ...?": all names, none loaded
        return COMMANDS.keys()

    def items(self) -> ItemsView[str, Command]:  # type: ignore[override]
        return {n: self[n] for n in COMMANDS}.items()

    def values(self) -> ValuesView[Command]:  # type: ignore[override]
        return {n: self[n] for n in COMMANDS}.values()


class _LazyGroup(typer.core.TyperGroup):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Commands()


app = typer.Typer(
    name="kscope",
    cls=_LazyGroup,
    help="kernelscope: profile, rank, name, read and evaluate GPU kernels (AMD ROCm and NVIDIA CUDA).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """kernelscope: profile, rank, name, read and evaluate GPU kernels (AMD ROCm and NVIDIA CUDA)."""


def main() -> None:
    app()
