"""``kscope eval``: judge the repository's working tree against the task's baseline, and record it.

Order of work: resolve the baseline, check the candidate touched only allowed files (else
``violation``, nothing runs), then on both sides the correctness commands, the warm-ups and the timed
runs, interleaved baseline/candidate so that drift (clocks, thermals, other load) hits both alike. The
first run that fails ends the eval (``needs_baseline`` on the baseline side, ``failed`` or ``timeout``
on the candidate's). Whatever the outcome, ``runs/NAME/ID/result.json`` is written and one line
appended to the ledger.
"""

from __future__ import annotations

import fcntl
import secrets
import shlex
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from kernelscope.analyses.stats import summarize
from kernelscope.errors import InputError
from kernelscope.loop import environment, git, ledger, runner
from kernelscope.loop.decision import decide, spread
from kernelscope.loop.paths import inside, matches
from kernelscope.loop.workspace import Workspace, locked, write_atomic
from kernelscope.model.stats import MIN_SAMPLES
from kernelscope.model.task import EvalResult, EvalRun, Phase, Role, Rule, Side, Status, Task

Progress = Callable[[str], None]
ROLES: tuple[Role, Role] = ("baseline", "candidate")


@contextmanager
def baseline_tree(ws: Workspace, task: Task, commit: str, refresh: bool) -> Iterator[Path]:
    """The cached worktree of ``commit``, built if missing or ``refresh``; shared-locked while in use.

    The exclusive lock serializes building; the shared one it is converted to lets concurrent evals use
    the tree while keeping a ``--refresh-baseline`` from deleting it under them.
    """
    folder = ws.cache / "baselines"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / task.name
    repo = Path(task.repo)
    with locked(folder / f"{task.name}.lock") as fd:
        head = git.worktree_head(path)
        if refresh or (head is None and path.exists()):
            git.remove_worktree(repo, path)
            head = None
        if head is None:
            git.add_worktree(repo, path, commit)
        elif head != commit:
            raise InputError(
                f"task {task.name}: {task.baseline_ref} now names {commit[:12]} but the cached baseline is "
                f"{head[:12]}; rerun with --refresh-baseline to rebuild it"
            )
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield path


def _error(o: runner.Outcome, metric: str | None, timeout_s: float) -> str | None:
    """Why a run does not count, or None."""
    if o.timed_out:
        return f"timed out after {timeout_s:g} s (its process group was killed)"
    if o.returncode is None:
        return "; ".join(o.problems)
    if o.returncode != 0:
        return f"exited with status {o.returncode}" if o.returncode > 0 else f"was killed by signal {-o.returncode}"
    if metric is not None and metric not in o.metrics:
        hint = f"print KSCOPE_METRIC {metric}=VALUE or write it to ${runner.METRICS_ENV}"
        return "; ".join([f"reported no {metric} ({hint})", *o.problems])
    return None


class _Session:
    """Runs the task's commands on either side and keeps every execution for the result."""

    def __init__(self, task: Task, trees: dict[Role, Path], progress: Progress | None) -> None:
        self.task = task
        self.trees = trees
        self.env = environment.for_eval(task.environment)
        self.progress = progress
        self.executions: list[EvalRun] = []

    def run(self, role: Role, phase: Phase, argv: list[str], step: str) -> EvalRun:
        if self.progress:
            self.progress(f"{role} {phase} {step}")
        t = self.task
        o = runner.run(argv, shell=t.shell, cwd=self.trees[role], env=self.env, timeout_s=t.timeout_s)
        r = EvalRun(
            role=role,
            phase=phase,
            argv=argv,
            cwd=str(self.trees[role]),
            returncode=o.returncode,
            timed_out=o.timed_out,
            wall_s=o.wall_s,
            metrics=o.metrics,
            error=_error(o, None if phase == "correctness" else t.metric, t.timeout_s),
            stdout_tail=o.stdout_tail,
            stderr_tail=o.stderr_tail,
        )
        self.executions.append(r)
        return r

    def measure(self, runs: int) -> tuple[Status | None, str, dict[Role, list[float]]]:
        """Correctness, warm-ups, timed runs; the failure status and why, or None and the samples."""
        t = self.task
        samples: dict[Role, list[float]] = {"baseline": [], "candidate": []}
        steps: list[tuple[Phase, list[str], str]] = [
            *(("correctness", c, f"{i}/{len(t.correctness)}") for i, c in enumerate(t.correctness, 1)),
            *(("warmup", t.eval_command, f"{i}/{t.warmup}") for i in range(1, t.warmup + 1)),
            *(("timed", t.eval_command, f"{i}/{runs}") for i in range(1, runs + 1)),
        ]
        for phase, argv, step in steps:
            for role in ROLES:
                r = self.run(role, phase, argv, step)
                if r.error is not None:
                    cmd = argv[0] if t.shell else shlex.join(argv)
                    why = f"{role} {phase} run `{cmd}` {r.error}"
                    if role == "baseline":
                        return "needs_baseline", why, samples
                    return ("timeout" if r.timed_out else "failed"), why, samples
                if phase == "timed":
                    samples[role].append(r.metrics[t.metric])
        return None, "", samples


def _side(commit: str | None, cwd: Path | None, samples: list[float]) -> Side:
    where = None if cwd is None else str(cwd)
    if not samples:
        return Side(commit=commit, cwd=where)
    s = summarize(samples)
    return Side(commit=commit, cwd=where, samples=samples, median=s.median, q1=s.q1, q3=s.q3, spread=spread(s))


def evaluate(
    ws: Workspace,
    task: Task,
    *,
    runs: int | None = None,
    refresh_baseline: bool = False,
    seed: int = 0,
    progress: Progress | None = None,
    version: str = "",
) -> EvalResult:
    """Judge the working tree of ``task.repo`` against ``task.baseline_ref``; write the result and the ledger.

    ``runs`` overrides the task's timed runs per side; ``seed`` fixes the bootstrap; both are recorded,
    with ``version`` (kscope's).
    """
    n = task.runs if runs is None else runs
    if n < MIN_SAMPLES:
        raise InputError(f"--runs {n}: at least {MIN_SAMPLES} per side (fewer cannot reach p < 0.01 in Mann-Whitney)")
    rule = Rule(seed=seed)
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    repo = Path(task.repo)
    commit = git.resolve(repo, task.baseline_ref)
    in_repo = ws.root.relative_to(repo.resolve()).as_posix() if inside(ws.root, repo) else None
    cand = git.candidate(repo, commit, exclude=in_repo)
    violations = [
        p if not matches(p, task.allowed) else f"{p} (a symlink out of the repository)"
        for p in cand.changed
        if not matches(p, task.allowed) or not inside(repo / p, repo)
    ]
    executions: list[EvalRun] = []
    samples: dict[Role, list[float]] = {"baseline": [], "candidate": []}
    speedup = p_value = None
    ci: list[float] | None = None
    base_tree: Path | None = None
    if violations:
        status: Status = "violation"
        reason = f"{len(violations)} changed file(s) outside the allowed globs: {', '.join(violations[:5])}"
    else:
        with baseline_tree(ws, task, commit, refresh_baseline) as base_tree:
            session = _Session(task, {"baseline": base_tree, "candidate": repo}, progress)
            failure, reason, samples = session.measure(n)
            executions = session.executions
        if failure is not None:
            status = failure
        else:
            v = decide(samples["baseline"], samples["candidate"], task.direction, rule)
            status, reason, speedup, p_value = v.status, v.reason, v.speedup, v.p_value
            ci = list(v.ci) if v.ci else None
    eval_id = f"{started:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"
    folder = ws.runs / task.name / eval_id
    result = EvalResult(
        id=eval_id,
        task=task.name,
        status=status,
        reason=reason,
        metric=task.metric,
        direction=task.direction,
        runs=n,
        warmup=task.warmup,
        speedup=speedup,
        ci=ci,
        p_value=p_value,
        baseline=_side(commit, base_tree, samples["baseline"]),
        candidate=msgspec.structs.replace(
            _side(cand.head, repo, samples["candidate"]), diff_hash=cand.diff_hash, dirty=cand.dirty
        ),
        rule=rule,
        baseline_ref=task.baseline_ref,
        changed_files=cand.changed,
        violations=violations,
        shell=task.shell,
        timeout_s=task.timeout_s,
        eval_command=task.eval_command,
        correctness=task.correctness,
        executions=executions,
        started=started.isoformat(timespec="milliseconds"),
        duration_s=time.perf_counter() - t0,
        result_path=ws.relative(folder / "result.json"),
        kscope_version=version,
        kernel=task.kernel,
        lever=task.lever,
    )
    folder.mkdir(parents=True)
    write_atomic(folder / "result.json", msgspec.json.format(msgspec.json.encode(result), indent=2) + b"\n")
    ledger.append(ws.ledger, ws.ledger_lock, ledger.entry(result))
    return result
