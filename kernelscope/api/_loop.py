"""The optimization loop: ``kscope init``, ``task``, ``eval``, ``ledger``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import cast

from kernelscope.analyses.replay import task_fields as replay_task_fields
from kernelscope.analyses.roofline import from_calls
from kernelscope.analyses.seed import GapSeed
from kernelscope.analyses.seed import seed as seed_from_gap
from kernelscope.api._code import trace_peaks
from kernelscope.api._gap import Progress, gap_report
from kernelscope.errors import InputError
from kernelscope.hw.specs import detect
from kernelscope.inputs import Input, open_profile
from kernelscope.loop import eval as loop_eval
from kernelscope.loop import ledger as loop_ledger
from kernelscope.loop import task as loop_task
from kernelscope.loop import workspace as loop_workspace
from kernelscope.model.levers import LEVERS
from kernelscope.model.replay import Replay
from kernelscope.model.task import Direction, EvalResult, LedgerView, Task, WorkspaceInfo


def init_workspace(path: str | Path) -> WorkspaceInfo:
    """``kscope init``: make ``path`` a workspace (tasks/, runs/, memory/, ledger.jsonl). Idempotent; a
    non-empty folder that is not a workspace is refused."""
    from kernelscope import __version__

    ws, new = loop_workspace.init(Path(path), __version__)
    return WorkspaceInfo(root=str(ws.root), new=new, created=ws.config.created, kscope_version=ws.config.kscope_version)


def new_task(
    name: str,
    *,
    workspace: str | Path = ".",
    repo: str | Path,
    baseline_ref: str,
    allowed: Sequence[str],
    eval_command: str | None = None,
    metric: str | None = None,
    direction: str | None = None,
    timeout: float,
    correctness: Sequence[str] = (),
    shell: bool = False,
    runs: int = 20,
    warmup: int = 1,
    kernel: str | None = None,
    lever: str | None = None,
    shapes: str | None = None,
    target: float | None = None,
    from_replay: str | Path | None = None,
    from_gap: str | Path | Input | None = None,
    gap_rank: int = 1,
) -> Task:
    """``kscope task new``: validate and write ``tasks/NAME/task.json`` and ``TASK.md``.

    ``from_replay``: a script ``kscope replay`` wrote; its header fills the eval command (``python3
    SCRIPT``, absolute), metric (``time_us``), direction (``lower``), kernel and shapes not given.
    ``from_gap``: a profile; its ``gap_rank``-th kernel (or the hottest matching ``kernel``, a regex) is the
    task's kernel, with its identity, the shapes that launched it and the roofline's stop condition
    (``analyses.seed``) where the trace recorded shapes.

    Commands are split with shell quoting rules and run without a shell, unless ``shell``. ``target``
    is the stop condition: the speedup at which the loop is done; ``lever`` the kind of change tried
    (``kernelscope.model.levers``), which ``kscope suggest`` reads back from the ledger.
    """
    from kernelscope import __version__

    if from_replay is not None:  # the script's header fills what the options leave out
        fill = replay_task_fields(Replay.from_script(Path(from_replay)), str(Path(from_replay).resolve()))
        eval_command, metric = eval_command or fill.eval_command, metric or fill.metric
        direction, kernel, shapes = direction or fill.direction, kernel or fill.kernel, shapes or fill.shapes
    identity, evidence = None, []
    if from_gap is not None:
        gap_seed = _seed(open_profile(from_gap), rank=gap_rank, kernel=kernel)
        kernel, identity, evidence = gap_seed.kernel, gap_seed.identity, gap_seed.evidence
        shapes, target = shapes or gap_seed.shapes, target or gap_seed.target_speedup
    if eval_command is None or metric is None or direction is None:
        needed = {"--eval-command CMD": eval_command, "--metric NAME": metric, "--direction lower|higher": direction}
        missing = ", ".join(flag for flag, value in needed.items() if value is None)
        raise InputError(f"kscope task new needs {missing} (or --from-replay SCRIPT)")
    if direction not in ("lower", "higher"):
        raise InputError(f"--direction {direction}: choose lower (times) or higher (throughputs)")
    if lever is not None and lever not in LEVERS:
        raise InputError(f"--lever {lever}: choose one of {', '.join(LEVERS)}")
    return loop_task.create(
        loop_workspace.open_workspace(Path(workspace)),
        name,
        repo=Path(repo),
        baseline_ref=baseline_ref,
        allowed=allowed,
        eval_command=eval_command,
        metric=metric,
        direction=cast(Direction, direction),
        timeout=timeout,
        correctness=correctness,
        shell=shell,
        runs=runs,
        warmup=warmup,
        kernel=kernel,
        lever=lever,
        shapes=shapes,
        target_speedup=target,
        identity=identity,
        evidence=evidence,
        version=__version__,
    )


def _seed(trace: Input, *, rank: int, kernel: str | None) -> GapSeed:
    """A gap row's task fields; shapes and the stop condition only from a Kineto trace with shapes."""
    calls = trace.ops if trace.format == "kineto" else []  # first: its decode then serves the gap table
    gap_result = gap_report([trace])
    roof, no_roof = None, None
    if trace.format == "kineto":
        gpu = trace.gpu or detect()  # once: detect() runs nvidia-smi/rocm-smi
        if calls and gpu is None:
            no_roof = "the trace names no GPU and none is present"
        elif calls and gpu is not None:  # a GPU the hardware database lacks: the task stands without a stop
            peaks, no_roof = trace_peaks(None, gpu, None)
            roof = from_calls(calls, peaks) if peaks is not None else None
    return seed_from_gap(gap_result, calls, roof, rank=rank, kernel=kernel, no_roof=no_roof)


def show_task(name: str, *, workspace: str | Path = ".") -> Task:
    """``kscope task show``: the validated ``task.json`` of ``name``."""
    return loop_task.load(loop_workspace.open_workspace(Path(workspace)), name)


def evaluate(
    name: str,
    *,
    workspace: str | Path = ".",
    runs: int | None = None,
    refresh_baseline: bool = False,
    seed: int = 0,
    progress: Progress | None = None,
) -> EvalResult:
    """``kscope eval``: the working tree against the task's baseline, interleaved runs, the decision rule
    (``docs/eval.md``); written to ``runs/NAME/ID/result.json`` and appended to the ledger."""
    from kernelscope import __version__

    ws = loop_workspace.open_workspace(Path(workspace))
    task = loop_task.load(ws, name)
    return loop_eval.evaluate(
        ws, task, runs=runs, refresh_baseline=refresh_baseline, seed=seed, progress=progress, version=__version__
    )


def ledger(
    *, workspace: str | Path = ".", task: str | None = None, status: str | None = None, since: str | None = None
) -> LedgerView:
    """``kscope ledger``: the workspace's eval records (filtered by task, status, ISO ``since``) and a
    per-task summary."""
    ws = loop_workspace.open_workspace(Path(workspace))
    return loop_ledger.view(ws.ledger, task=task, status=status, since=since)
