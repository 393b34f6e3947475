"""``kscope memory init|new|show|set|mask|unmask|list|summary|latest``: the iteration memory (docs/memory.md)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope import api
from kernelscope.cli._common import guarded, out, show
from kernelscope.cli.loop import Json, Workspace
from kernelscope.errors import InputError
from kernelscope.model.levers import LEVERS
from kernelscope.model.memory import MemoryRecord
from kernelscope.presenters.base import render_json
from kernelscope.presenters.memory import (
    folder_text,
    headline,
    list_renderable,
    record_renderable,
    summary_renderable,
)

memory_app = typer.Typer(
    help="The iteration memory: one validated record per optimization iteration (memory/v<N>.json).",
    no_args_is_help=True,
)

Version = Annotated[str, typer.Argument(help="The record: N or vN (memory/vN.json).", show_default=False)]
IncludeMasked = Annotated[bool, typer.Option("--include-masked", help="Show masked records too.")]
Task = Annotated[Optional[str], typer.Option(help="Only records of this task.")]
Kernel = Annotated[Optional[str], typer.Option(help="Only records of this kernel.")]
Category = Annotated[Optional[str], typer.Option(help="Only records of this optimization category (a lever).")]
By = Annotated[Optional[str], typer.Option(help="Who does it (default: $USER, else git config user.name).")]


def _version(text: str) -> int:
    if not (m := re.fullmatch(r"v?([0-9]{1,9})", text)):
        raise InputError(f"record {text!r}: expected its number N or vN (memory/vN.json)")
    return int(m[1])


def _wrote(workspace: Path, r: MemoryRecord, json: bool, verb: str = "wrote") -> None:
    if json:
        sys.stdout.write(render_json(r))
    else:
        out.print(f"{verb} {workspace / 'memory' / f'v{r.version}.json'}:", headline(r), highlight=False)


@memory_app.command("init")
@guarded
def memory_init(workspace: Workspace = Path("."), json: Json = False) -> None:
    """Set up the workspace's memory/ (a README; records are validated on every read). Safe to repeat."""
    info = api.memory_init(workspace=workspace)
    show(info, json, folder_text)


@memory_app.command("new")
@guarded
def memory_new(
    workspace: Workspace = Path("."),
    category: Annotated[
        Optional[str], typer.Option(help=f"The optimization category (default: the eval's lever): {', '.join(LEVERS)}.")
    ] = None,
    task: Annotated[Optional[str], typer.Option(help="The task the iteration works on.")] = None,
    kernel: Annotated[Optional[str], typer.Option(help="The kernel changed.")] = None,
    title: Annotated[Optional[str], typer.Option(help="What the iteration changes, in one line.")] = None,
    hypothesis: Annotated[Optional[str], typer.Option(help="Why it should be faster.")] = None,
    author: Annotated[Optional[str], typer.Option(help="Who (default: $USER, else git config user.name).")] = None,
    from_eval: Annotated[
        Optional[str], typer.Option(help="An eval id: task, performance, correctness, commit, kernel from it.")
    ] = None,
    json: Json = False,
) -> None:
    """Write the next record, memory/v<N>.json (kernelscope.memory.v1)."""
    r = api.memory_new(
        category=category,
        workspace=workspace,
        task=task,
        kernel=kernel,
        title=title,
        hypothesis=hypothesis,
        author=author,
        from_eval=from_eval,
    )
    _wrote(workspace, r, json)


@memory_app.command("show")
@guarded
def memory_show(version: Version, workspace: Workspace = Path("."), json: Json = False) -> None:
    """Print one record, masked or not."""
    r = api.memory_show(_version(version), workspace=workspace)
    show(r, json, record_renderable)


@memory_app.command("set")
@guarded
def memory_set(
    version: Version,
    assignments: Annotated[
        Optional[list[str]],
        typer.Argument(
            metavar="FIELD=VALUE...",
            help="performance.speedup=1.2, evidence[0].source=TEXT, pitfalls+=TEXT (append); JSON or text.",
            show_default=False,
        ),
    ] = None,
    workspace: Workspace = Path("."),
    from_json: Annotated[
        Optional[Path], typer.Option(help="Merge this JSON object into the record (RFC 7386).")
    ] = None,
    add_evidence: Annotated[
        Optional[tuple[str, str, str]],
        typer.Option(metavar="EVIDENCE INFERENCE ACTION", help="Append one evidence -> inference -> action step."),
    ] = None,
    json: Json = False,
) -> None:
    """Change a record: --from-json, then --add-evidence, then the assignments; all validated, or nothing written."""
    r = api.memory_set(
        _version(version), assignments or (), workspace=workspace, from_json=from_json, add_evidence=add_evidence
    )
    _wrote(workspace, r, json, "updated")


@memory_app.command("mask")
@guarded
def memory_mask(
    version: Version,
    workspace: Workspace = Path("."),
    reason: Annotated[Optional[str], typer.Option(help="Why the record should be hidden (required).")] = None,
    by: By = None,
    json: Json = False,
) -> None:
    """Hide a record from list, summary and latest; who, when and why are kept in it."""
    if reason is None:
        raise InputError("kscope memory mask needs --reason TEXT: why the record should not count")
    r = api.memory_mask(_version(version), reason=reason, workspace=workspace, by=by)
    _wrote(workspace, r, json, "masked")


@memory_app.command("unmask")
@guarded
def memory_unmask(
    version: Version,
    workspace: Workspace = Path("."),
    by: By = None,
    reason: Annotated[Optional[str], typer.Option(help="Why it counts again.")] = None,
    json: Json = False,
) -> None:
    """Show a masked record again; the mask stays in its history."""
    r = api.memory_unmask(_version(version), workspace=workspace, by=by, reason=reason)
    _wrote(workspace, r, json, "unmasked")


@memory_app.command("list")
@guarded
def memory_list(
    workspace: Workspace = Path("."),
    include_masked: IncludeMasked = False,
    task: Task = None,
    kernel: Kernel = None,
    category: Category = None,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.memory-list.v1.")] = False,
) -> None:
    """The records, oldest first; masked ones only with --include-masked."""
    v = api.memory_list(workspace=workspace, include_masked=include_masked, task=task, kernel=kernel, category=category)
    show(v, json, list_renderable)


@memory_app.command("summary")
@guarded
def memory_summary(
    workspace: Workspace = Path("."),
    include_masked: IncludeMasked = False,
    task: Task = None,
    kernel: Kernel = None,
    category: Category = None,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.memory-summary.v1.")] = False,
) -> None:
    """Per category: iterations, wins, best speedup, latest; progress per task and kernel; pitfalls."""
    s = api.memory_summary(
        workspace=workspace, include_masked=include_masked, task=task, kernel=kernel, category=category
    )
    show(s, json, summary_renderable)


@memory_app.command("latest")
@guarded
def memory_latest(
    workspace: Workspace = Path("."),
    include_masked: IncludeMasked = False,
    task: Task = None,
    kernel: Kernel = None,
    category: Category = None,
    json: Json = False,
) -> None:
    """The newest record (masked ones count only with --include-masked)."""
    r = api.memory_latest(
        workspace=workspace, include_masked=include_masked, task=task, kernel=kernel, category=category
    )
    show(r, json, record_renderable)
