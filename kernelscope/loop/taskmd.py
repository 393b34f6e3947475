"""``TASK.md``: a task told for the people and coding agents who work on it."""

from __future__ import annotations

import shlex
from pathlib import Path

from kernelscope.loop.paths import matches
from kernelscope.loop.runner import METRICS_ENV
from kernelscope.model.task import Rule, Task


def command_text(task: Task, argv: list[str]) -> str:
    return argv[0] if task.shell else shlex.join(argv)


def _gameable(task: Task) -> list[str]:
    """Files the commands name that the candidate may change: it could change how it is judged."""
    words = [w for argv in (task.eval_command, *task.correctness) for w in (argv[0].split() if task.shell else argv)]
    root = Path(task.repo)
    return sorted({w for w in words if not Path(w).is_absolute() and (root / w).is_file() and matches(w, task.allowed)})


def render(task: Task, workspace: Path) -> str:
    """TASK.md of ``task`` in the workspace at ``workspace``."""
    rule = Rule()
    better = "lower" if task.direction == "lower" else "higher"
    what = f"`{task.metric}` ({better} is better)"
    about = "".join(
        f", {label} `{value}`"
        for label, value in (("kernel", task.kernel), ("lever", task.lever), ("shapes", task.shapes))
        if value
    )
    run_with = "through `/bin/sh -c`" if task.shell else "as an argv list, without a shell"
    env = task.environment
    judged = _gameable(task)
    lines = [
        f"# Task `{task.name}`",
        "",
        "## Goal",
        "",
        f"Make {what}{about} better than at the baseline `{task.baseline_ref}` (commit "
        f"`{task.baseline_commit[:12]}` when the task was made) in `{task.repo}`, without failing the "
        "correctness gate.",
        *(["", f"The kernel's name says: {task.identity}."] if task.identity else []),
        *(
            ["", "Why this kernel (from the profile the task was made from):", "", *[f"- {e}" for e in task.evidence]]
            if task.evidence
            else []
        ),
        "",
        "## Allowed files",
        "",
        "Change only files matching these globs (relative to the repository; `*` stays within a folder, "
        "`**` crosses folders, a trailing `/` means everything below):",
        "",
        *[f"- `{g}`" for g in task.allowed],
        "",
        "Any other change against the baseline (modified, added, deleted or untracked files that git does "
        "not ignore) makes the eval `violation`, and nothing runs.",
        *[
            f"\n**Warning**: `{w}` is part of the eval contract and allowed: a change to it changes the judge."
            for w in judged
        ],
        "",
        "## Eval contract",
        "",
        f"Run `kscope eval {task.name} --workspace {shlex.quote(str(workspace))}` (add `--json` for machines). It "
        "checks out the baseline into a cached git worktree and takes the candidate as the repository's "
        "working tree is, uncommitted changes included. Each command runs " + run_with + ", in the root "
        "of its side's tree:",
        "",
        f"    {command_text(task, task.eval_command)}",
        "",
        f"{task.warmup} warm-up run(s) per side, then {task.runs} timed runs per side, interleaved (baseline, "
        f"candidate, baseline, ...). Every run has {task.timeout_s:g} s; at the limit its whole process group "
        "is killed and the eval is `timeout` (`needs_baseline` if it was the baseline).",
        "",
        "## Metric protocol",
        "",
        f"Each run reports `{task.metric}` either as a line on stdout",
        "",
        f"    KSCOPE_METRIC {task.metric}=12.5",
        "",
        f"(the last such line for a name wins; other names are recorded too), or as a JSON object "
        f'`{{"{task.metric}": 12.5}}` written to the file named by `${METRICS_ENV}` (it wins over stdout). '
        "A run that exits non-zero or reports no value does not count: the eval is `failed` "
        "(`needs_baseline` when the baseline does it).",
        "",
        "## Correctness gate",
        "",
        *(
            [
                "Before timing, each command runs on the baseline and then on the candidate; exit status 0 "
                "passes. A failing candidate makes the eval `failed`, a failing baseline `needs_baseline`.",
                "",
                *[f"    {command_text(task, c)}" for c in task.correctness],
            ]
            if task.correctness
            else ["None given: only the eval command's own exit status guards correctness."]
        ),
        "",
        "## Decision rule",
        "",
        f"`improved` iff the Mann-Whitney p < {rule.alpha:g}, the {100 * (1 - rule.alpha):g}% bootstrap CI "
        f"of the speedup lies above 1 and the median speedup is at least {1 + rule.min_effect:g}; "
        f"`regressed` the mirror image; `unstable` if IQR/median exceeds {100 * rule.max_spread:g}% on "
        "either side; else `neutral`. Every eval is kept in `runs/` and `ledger.jsonl` "
        f"(`kscope ledger --task {task.name}`).",
        "",
        "## Stop condition",
        "",
        f"Stop when an eval is `improved` with a speedup of at least {task.target_speedup:g}."
        if task.target_speedup
        else "None set: stop when further attempts stay `neutral` or `regressed`.",
        "",
        "## Environment",
        "",
        f"Evals run in the environment recorded at creation ({len(env.vars)} variables, in `task.json`), "
        f"on {env.host} ({env.platform}, Python {env.python}).",
        "",
        "Stripped as profiler switches that would change the timing: "
        + (", ".join(f"`{k}`" for k in env.stripped) or "none were set")
        + ".",
        "",
        "Not written down (they look like secrets) and taken from the environment of each eval: "
        + (", ".join(f"`{k}`" for k in env.inherit) or "none")
        + ".",
        "",
    ]
    return "\n".join(lines)
