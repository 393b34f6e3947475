"""The optimization loop: ``kscope init``, ``kscope task new|show``, ``kscope eval``, ``kscope ledger``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional, TypeVar, get_args

import typer

from kernelscope import api
from kernelscope.cli._common import Parquet, either, emit, err, guarded, out, pick
from kernelscope.errors import InputError
from kernelscope.loop.taskmd import render
from kernelscope.model.task import Direction
from kernelscope.presenters.base import render_json
from kernelscope.presenters.eval import EVAL_PRESENTERS, LEDGER_PRESENTERS, ledger_renderable, rich_renderable

T = TypeVar("T")
Workspace = Annotated[Path, typer.Option("--workspace", "-w", help="The workspace folder (kscope init).")]
Json = Annotated[bool, typer.Option("--json", help="JSON (docs/schemas.md).")]
Output = Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE.")]


@guarded
def init(
    path: Annotated[Path, typer.Argument(help="Folder to make a workspace (created if missing).")],
    json: Json = False,
) -> None:
    """Make a workspace: kscope.toml, tasks/, runs/, memory/, ledger.jsonl. Safe to repeat."""
    info = api.init_workspace(path)
    if json:
        sys.stdout.write(render_json(info))
    else:
        out.print(f"{'initialized' if info.new else 'already a workspace:'} {info.root}", highlight=False)


def _need(value: T | None, flag: str) -> T:
    """Options typer would make required are optional so that a missing one gets kscope's one-line error."""
    if value is None:
        raise InputError(f"kscope task new needs {flag}")
    return value


task_app = typer.Typer(help="Define and read optimization tasks.", no_args_is_help=True)


@task_app.command("new")
@guarded
def task_new(
    name: Annotated[str, typer.Argument(help="Task name: letters, digits, '.', '_', '-'.")],
    workspace: Workspace = Path("."),
    repo: Annotated[Optional[Path], typer.Option(help="The git repository (its top level).")] = None,
    baseline_ref: Annotated[Optional[str], typer.Option(help="Branch, tag or commit to compare against.")] = None,
    allowed: Annotated[
        Optional[list[str]], typer.Option(help="Glob of files the candidate may change (repeat).")
    ] = None,
    eval_command: Annotated[Optional[str], typer.Option(help="Command that prints KSCOPE_METRIC name=value.")] = None,
    metric: Annotated[Optional[str], typer.Option(help="The metric's name.")] = None,
    direction: Annotated[Optional[str], typer.Option(help=f"{either(get_args(Direction))}: which is better.")] = None,
    timeout: Annotated[Optional[float], typer.Option(help="Seconds each run may take.")] = None,
    correctness: Annotated[
        Optional[list[str]], typer.Option(help="Command that must exit 0 on the candidate (repeat).")
    ] = None,
    shell: Annotated[bool, typer.Option("--shell", help="Run commands through /bin/sh -c.")] = False,
    runs: Annotated[int, typer.Option(help="Timed runs per side (at least 5).")] = 20,
    warmup: Annotated[int, typer.Option(help="Untimed runs per side first.")] = 1,
    kernel: Annotated[
        Optional[str], typer.Option(help="The kernel being optimized; with --from-gap a REGEX choosing the row.")
    ] = None,
    lever: Annotated[
        Optional[str], typer.Option(help="The kind of change tried: memory_access, algorithm, ... (kscope suggest).")
    ] = None,
    shapes: Annotated[Optional[str], typer.Option(help="The shapes measured (for the record).")] = None,
    target: Annotated[Optional[float], typer.Option(help="Stop condition: a speedup to reach.")] = None,
    from_replay: Annotated[
        Optional[Path],
        typer.Option(help="A kscope replay script: fills the eval command, metric, direction, kernel, shapes."),
    ] = None,
    from_gap: Annotated[
        Optional[Path],
        typer.Option(
            help="A profile: its top kernel (or --gap-rank N, or --kernel REGEX) with identity, shapes, stop."
        ),
    ] = None,
    gap_rank: Annotated[int, typer.Option(help="With --from-gap: the gap table's row.")] = 1,
    json: Json = False,
) -> None:
    """Write tasks/NAME/task.json (kernelscope.task.v1) and TASK.md in the workspace."""
    task = api.new_task(
        name,
        workspace=workspace,
        repo=_need(repo, "--repo DIR"),
        baseline_ref=_need(baseline_ref, "--baseline-ref REF"),
        allowed=_need(allowed, "--allowed GLOB"),
        eval_command=eval_command,  # these three may come from --from-replay: api.new_task checks them
        metric=metric,
        direction=direction,
        timeout=_need(timeout, "--timeout SECONDS"),
        correctness=correctness or (),
        shell=shell,
        runs=runs,
        warmup=warmup,
        kernel=kernel,
        lever=lever,
        shapes=shapes,
        target=target,
        from_replay=from_replay,
        from_gap=from_gap,
        gap_rank=gap_rank,
    )
    if json:
        sys.stdout.write(render_json(task))
    else:
        out.print(f"wrote {workspace / 'tasks' / name / 'task.json'} and TASK.md", highlight=False)


@task_app.command("show")
@guarded
def task_show(
    name: Annotated[str, typer.Argument(help="Task name.")],
    workspace: Workspace = Path("."),
    json: Json = False,
) -> None:
    """Print the task: TASK.md, or task.json with --json."""
    task = api.show_task(name, workspace=workspace)
    sys.stdout.write(render_json(task) if json else render(task, workspace.resolve()))


@guarded
def evaluate(
    name: Annotated[str, typer.Argument(help="Task name.")],
    workspace: Workspace = Path("."),
    runs: Annotated[Optional[int], typer.Option(help="Timed runs per side (default: the task's).")] = None,
    refresh_baseline: Annotated[
        bool, typer.Option("--refresh-baseline", help="Rebuild the cached baseline worktree.")
    ] = False,
    seed: Annotated[int, typer.Option(help="Bootstrap random seed (recorded).")] = 0,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.eval.v1.")] = False,
    output: Output = None,
) -> None:
    """Judge the repository's working tree against the task's baseline; record it in runs/ and the ledger."""
    presenter = pick({"json": json}, output, EVAL_PRESENTERS)
    if err.is_terminal:
        with err.status(f"kscope eval {name}") as status:
            result = api.evaluate(
                name,
                workspace=workspace,
                runs=runs,
                refresh_baseline=refresh_baseline,
                seed=seed,
                progress=lambda step: status.update(f"kscope eval {name}: {step}"),
            )
    else:
        result = api.evaluate(name, workspace=workspace, runs=runs, refresh_baseline=refresh_baseline, seed=seed)
    if presenter is None:
        out.print(rich_renderable(result))
    else:
        emit(presenter, result, output)


@guarded
def ledger(
    workspace: Workspace = Path("."),
    task: Annotated[Optional[str], typer.Option(help="Only this task.")] = None,
    status: Annotated[Optional[str], typer.Option(help="Only this status (improved, regressed, ...).")] = None,
    since: Annotated[Optional[str], typer.Option(help="Only evals from this ISO date or date-time (UTC) on.")] = None,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.ledger-view.v1.")] = False,
    csv: Annotated[bool, typer.Option("--csv", help="CSV of the records.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Markdown.")] = False,
    parquet: Parquet = False,
    output: Output = None,
) -> None:
    """List the workspace's evals, filtered, with a per-task summary (evals, best speedup, last status)."""
    presenter = pick({"json": json, "csv": csv, "markdown": markdown, "parquet": parquet}, output, LEDGER_PRESENTERS)
    view = api.ledger(workspace=workspace, task=task, status=status, since=since)
    if presenter is None:
        out.print(ledger_renderable(view))
    else:
        emit(presenter, view, output)
