"""What every command shares: the error boundary (one line, exit 2), consoles, output selection."""

from __future__ import annotations

import functools
import os
import sys
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, Optional, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from kernelscope.errors import InputWarning, KernelscopeError, one_line
from kernelscope.presenters.base import Presenter, by_extension, render_json
from kernelscope.readers import folder

P = ParamSpec("P")
Parquet = Annotated[bool, typer.Option("--parquet", help="Parquet (needs -o FILE).")]
ArchOption = Annotated[
    Optional[str],
    typer.Option("--arch", help="The GPU the kernels ran on (gfx950, sm_90a): picks per-target source definitions."),
]
ModuleOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--module",
        help="A Python package or module the workload ran (repeat: sglang, vllm.v1.attention.ops.x): picks among "
        "copies of a kernel in several projects.",
    ),
]
CaptureOption = Annotated[
    Optional[Path],
    typer.Option(help="Kineto trace of its CUDA/HIP graph capture: the replays' kernels get its ops and shapes."),
]
R = TypeVar("R")

out = Console(soft_wrap=False)
if not out.is_terminal and "COLUMNS" not in os.environ:  # piped: no terminal to fit, don't squeeze into 80
    out = Console(soft_wrap=False, width=200)
err = Console(stderr=True)
_show_warning = warnings.showwarning


def _warning_line(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    """Input warnings (dropped records, unreadable side files) as one ``kscope: warning:`` line on stderr; any
    other warning as Python shows it."""
    if issubclass(category, InputWarning):
        print(f"kscope: warning: {one_line(str(message))}", file=sys.stderr)
    else:
        _show_warning(message, category, *args, **kwargs)


warnings.showwarning = _warning_line


def progress_bar(*, counted: bool = True, auto_refresh: bool = True) -> Progress:
    """A transient progress display on stderr, off when stderr is not a terminal: a bar with done/total
    (``counted``) or a spinner. ``auto_refresh=False`` for callers that fork: no refresh thread."""
    columns = (
        (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        if counted
        else (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    )
    # off: a quiet console too, since rich < 15 prints a newline when a disabled live display stops
    console = err if err.is_terminal else Console(stderr=True, quiet=True)
    return Progress(*columns, console=console, transient=True, disable=not err.is_terminal, auto_refresh=auto_refresh)


def ticker(bar: Progress, label: Callable[[str], str] = str) -> Callable[[str, int, int], None]:
    """A ``progress(what, done, total)`` callback that keeps one bar per ``what`` (a file, a folder)."""
    tasks: dict[str, TaskID] = {}

    def tick(what: str, done: int, total: int) -> None:
        if what not in tasks:
            tasks[what] = bar.add_task(label(what), total=total)
        bar.update(tasks[what], completed=done, refresh=True)

    return tick


def either(choices: tuple[str, ...]) -> str:
    """``a, b or c``: the values of a ``Literal`` (``typing.get_args``) for help and error texts."""
    return f"{', '.join(choices[:-1])} or {choices[-1]}"


_NOTES: list[str] = []  # said on stderr once the command succeeded: a failure is one error line, nothing else


def read_folders(paths: Iterable[Path | None]) -> None:
    """Say, on stderr, which files a folder given as input stood for (the run it holds, every rank) once the
    command succeeds; a folder holding none or several runs is the one error line ``folder.resolve`` raises."""
    for p in paths:
        if p is not None and p.is_dir():
            files = ", ".join(str(f.relative_to(p)) for f in folder.resolve(p))
            _NOTES.append(f"kscope: {p}: read {files}")


def fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"kscope: error: {message}", markup=False, highlight=False, soft_wrap=True)
    return typer.Exit(code)


def guarded(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn kernelscope and OS errors into one stderr line and exit code 2 — never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        _NOTES.clear()
        try:
            done = fn(*args, **kwargs)
        except KernelscopeError as exc:
            raise fail(str(exc)) from None
        except OSError as exc:
            raise fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": ")) from None
        except KeyboardInterrupt:
            raise fail("interrupted", 130) from None
        for note in _NOTES:
            err.print(note, markup=False, highlight=False, soft_wrap=True)
        return done

    return wrapper


def pick(flags: dict[str, bool], output: Path | None, registry: dict[str, Presenter]) -> Presenter | None:
    """The presenter a command's ``--json/--csv/...`` flags or ``-o FILE`` extension ask for (None: rich)."""
    chosen = [name for name, on in flags.items() if on]
    if len(chosen) > 1:
        raise fail("choose one of " + ", ".join(f"--{n}" for n in flags))
    if chosen:
        return registry[chosen[0]]
    if output is not None:
        p = by_extension(str(output), registry)
        if p is None:
            raise fail(f"{output}: cannot tell the output format from the extension; add --json/--csv/...")
        return p
    return None


def show(result: Any, as_json: bool, renderable: Callable[[Any], Any]) -> None:
    """``--json``: the result as JSON on stdout; else ``renderable(result)`` through rich."""
    if as_json:
        sys.stdout.write(render_json(result))
    else:
        out.print(renderable(result))


def emit(presenter: Presenter, result: Any, output: Path | None) -> None:
    data = presenter.render(result)
    if output is not None:
        if isinstance(data, bytes):
            output.write_bytes(data)
        else:
            output.write_text(data)
        err.print(f"wrote {output}", highlight=False)
    elif isinstance(data, bytes):
        raise fail(f"--{presenter.name} is binary: write it to a file with -o FILE{presenter.extension}")
    else:
        sys.stdout.write(data)
