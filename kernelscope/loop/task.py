"""Tasks: create, validate, save and load ``tasks/NAME/task.json`` (and write its ``TASK.md``)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from kernelscope.errors import FormatError, InputError
from kernelscope.loop import environment, git
from kernelscope.loop.paths import inside, normalize_glob
from kernelscope.loop.taskmd import render
from kernelscope.loop.workspace import Workspace, write_atomic
from kernelscope.model.levers import Lever
from kernelscope.model.task import TASK_NAME, TASK_SCHEMA, Direction, Task


def _argv(command: str, shell: bool, option: str) -> list[str]:
    """A command as the task stores it: argv (shlex rules), or the whole string for ``/bin/sh -c``."""
    if shell:
        if not command.strip():
            raise InputError(f"{option}: expected a command, found an empty string")
        return [command]
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise InputError(f"{option} {command!r}: {exc} (quote as in a shell, or add --shell)") from None
    if not argv:
        raise InputError(f"{option}: expected a command, found an empty string")
    return argv


def task_dir(ws: Workspace, name: str) -> Path:
    """``tasks/NAME``, once ``name`` is known to be one folder name that stays inside the workspace."""
    if not re.fullmatch(TASK_NAME, name):
        raise InputError(f"task name {name!r}: expected letters, digits, '.', '_' or '-' (at most 64), no '/'")
    path = ws.tasks / name
    if not inside(path, ws.root):
        raise InputError(f"{path}: a symlink out of the workspace; tasks must live inside it")
    return path


def create(
    ws: Workspace,
    name: str,
    *,
    repo: Path,
    baseline_ref: str,
    allowed: Sequence[str],
    eval_command: str,
    metric: str,
    direction: Direction,
    timeout: float,
    correctness: Sequence[str] = (),
    shell: bool = False,
    runs: int = 20,
    warmup: int = 1,
    kernel: str | None = None,
    lever: Lever | None = None,
    shapes: str | None = None,
    target_speedup: float | None = None,
    identity: str | None = None,
    evidence: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    version: str = "",
) -> Task:
    """Validate everything, then write ``tasks/NAME/task.json`` and ``TASK.md``; an existing task is refused."""
    folder = task_dir(ws, name)
    if (folder / "task.json").exists():
        raise InputError(f"task {name} exists ({folder / 'task.json'}); choose another name or delete that folder")
    if not allowed:
        raise InputError("no --allowed globs: name the files the candidate may change, e.g. --allowed 'src/kernels/**'")
    root = git.toplevel(repo)
    raw: dict[str, Any] = {
        "schema": TASK_SCHEMA,
        "name": name,
        "repo": str(root),
        "baseline_ref": baseline_ref,
        "baseline_commit": git.resolve(root, baseline_ref),
        "allowed": [normalize_glob(g, root) for g in allowed],
        "eval_command": _argv(eval_command, shell, "--eval-command"),
        "correctness": [_argv(c, shell, "--correctness") for c in correctness],
        "shell": shell,
        "metric": metric,
        "direction": direction,
        "timeout_s": timeout,
        "runs": runs,
        "warmup": warmup,
        "kernel": kernel,
        "lever": lever,
        "shapes": shapes,
        "target_speedup": target_speedup,
        "identity": identity,
        "evidence": list(evidence),
        "environment": msgspec.to_builtins(environment.record(env)),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "kscope_version": version,
    }
    try:
        task = msgspec.convert(raw, Task)
    except msgspec.ValidationError as exc:
        raise InputError(f"task {name}: {_option(str(exc))}") from None
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / "task.json", msgspec.json.format(msgspec.json.encode(task), indent=2) + b"\n")
    write_atomic(folder / "TASK.md", render(task, ws.root).encode())
    return task


def _option(message: str) -> str:
    """msgspec's ``... - at `$.timeout_s``` told as the option that set the field."""
    flags = {"timeout_s": "--timeout", "target_speedup": "--target", "eval_command": "--eval-command"}
    return re.sub(r"`\$\.(\w+)[^`]*`", lambda m: flags.get(m[1], "--" + m[1].replace("_", "-")), message)


def load(ws: Workspace, name: str) -> Task:
    """``tasks/NAME/task.json``, fully validated (unknown fields, values, globs against the repository)."""
    path = task_dir(ws, name) / "task.json"
    if not path.is_file():
        raise InputError(f"no task {name} in {ws.root} (no {path}); create it with kscope task new {name}")
    try:
        task = msgspec.json.decode(path.read_bytes(), type=Task)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise FormatError(path, f"a {TASK_SCHEMA} task", str(exc), "fix that field or recreate the task") from None
    if task.name != name:
        raise FormatError(path, f"task {name}", f"task {task.name}", "the folder name and the name field must agree")
    for g in task.allowed:  # the repository may have grown a symlink since the task was made
        normalize_glob(g, Path(task.repo))
    return task
