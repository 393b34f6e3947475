"""Experiments from the rules' matches: scored, demoted by the ledger, ranked."""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Sequence
from pathlib import PurePosixPath

from kernelscope.analyses.ncu import selector
from kernelscope.analyses.suggest.evidence import Evidence, Facts, Match, Rule, kernels
from kernelscope.analyses.suggest.host import host_experiment
from kernelscope.analyses.suggest.rules import RULES
from kernelscope.analyses.suggest.thresholds import DEMOTION, SILENT_SHARE, UNBOUNDED
from kernelscope.errors import InputError
from kernelscope.model.levers import LEVERS, Lever
from kernelscope.model.suggest import (
    Contract,
    Demotion,
    Effect,
    Experiment,
    KernelRef,
    SuggestResult,
)
from kernelscope.model.task import TASK_NAME, LedgerRecord

# --- ranking --------------------------------------------------------------------------------------------


def _demotions(f: Facts, lever: Lever, ledger: Sequence[LedgerRecord]) -> list[Demotion]:
    """Ledger records of ``lever`` on this kernel (its name or short function name) that did not work."""
    names = {f.name, f.identity.function}
    return [
        Demotion(id=r.id, task=r.task, time=r.time, status=r.status, factor=DEMOTION[r.status])
        for r in ledger
        if r.lever == lever and r.kernel in names and r.status in DEMOTION
    ]


def _inside(path: str, repo: str) -> str | None:
    p, root = PurePosixPath(path), PurePosixPath(repo)
    return str(p.relative_to(root)) if p.is_absolute() and p.is_relative_to(root) else None


def _task_name(f: Facts, lever: Lever) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{f.identity.function}-{lever}").lstrip("._-")[:64]
    return name if re.fullmatch(TASK_NAME, name) else lever


def _contract(f: Facts, lever: Lever, ev: Evidence, code: list[str], test: str | None) -> Contract:
    gate = test or "CHECK: a command that exits non-zero when the kernel's output differs from a reference"
    if lever == "precision":
        gate += " (within the accuracy tolerance agreed for the narrower type)"
    argv = [
        "kscope", "task", "new", _task_name(f, lever), "-w", ev.workspace or "WS", "--repo", ev.repo or "REPO",
        "--baseline-ref", ev.baseline or "REF", "--allowed", code[0] if code else "GLOB", "--eval-command", "CMD",
        "--metric", "time_us", "--direction", "lower", "--timeout", "600", "--correctness", test or "CHECK",
        "--kernel", f.name, "--lever", lever,
    ]  # fmt: skip
    return Contract(
        metric="time_us",
        direction="lower",
        measure="CMD prints KSCOPE_METRIC time_us=<the kernel's time> on the task's shapes (kscope bench "
        "FILE.py:FACTORY, a replay script, or the workload's own timer)",
        correctness=gate,
        command=" ".join(shlex.quote(a) for a in argv),
    )


def _experiment(f: Facts, rule: Rule, m: Match, ev: Evidence) -> Experiment:
    demoted = _demotions(f, rule.lever, ev.ledger)
    effect = m.effect if m.effect is not None else UNBOUNDED
    score = (f.share if f.share is not None else 1.0) * rule.confidence * effect * math.prod(d.factor for d in demoted)
    found = ev.sources.get(f.name)
    code, tests, test = [], [], None
    if ev.repo is not None:
        located = [found.location.path] if found is not None and found.location is not None else []
        code = list(dict.fromkeys(located + [p for h in m.hotspots if (p := _inside(h.file, ev.repo))]))
        tests = [t.path for t in found.tests] if found is not None else []
        test = next((t.command for t in found.tests if t.command), None) if found is not None else None
    share_pct = None if f.share is None else 100 * f.share
    if m.effect is None:
        expected = Effect(kernel_pct=None, total_pct=None, basis=f"{m.basis}; scored as {UNBOUNDED:.0%} of the kernel")
    else:
        total = None if share_pct is None else share_pct * m.effect
        of_total = f", {total:.1f}% of the GPU time at its {share_pct:.1f}% share" if total is not None else ""
        basis = f"saves at most {100 * m.effect:.0f}% of the kernel's time{of_total}: {m.basis}"
        expected = Effect(kernel_pct=100 * m.effect, total_pct=total, basis=basis)
    return Experiment(
        rank=0,
        score=round(score, 4),
        lever=rule.lever,
        rule=rule.id,
        kernel=KernelRef(
            name=f.name,
            function=f.identity.function,
            identity=f.identity.summary(),
            share_pct=share_pct,
            share_source=f.share_source,
        ),
        files=list(dict.fromkeys(code + tests)),
        hotspots=[str(h) for h in m.hotspots],
        rationale=m.steps,
        risk=rule.risk,
        expected=expected,
        contract=_contract(f, rule.lever, ev, code, test),
        demoted_by=demoted,
    )


def _hot_but_silent(facts: list[Facts], found: list[Experiment]) -> list[str]:
    """A note naming the hottest kernels no rule had evidence for: more evidence on them may beat any
    experiment ranked here."""
    with_rule = {e.kernel.name for e in found}
    hot = sorted((f for f in facts if f.name not in with_rule and (f.share or 0.0) >= SILENT_SHARE),
                 key=lambda f: -(f.share or 0.0))[:3]  # fmt: skip
    if not hot:
        return []
    named = ", ".join(f"{f.identity.function} ({100 * (f.share or 0.0):.1f}%)" for f in hot)
    return [f"no rule had evidence on these kernels of >= {100 * SILENT_SHARE:.0f}% of the GPU time: {named}; "
            "give --ncu, --code or --att for them, or a trace recorded with shapes (its roofline)"]  # fmt: skip


def rank(ev: Evidence, *, kernel: str | None = None, top: int = 10) -> SuggestResult:
    """The ``top`` experiments over the kernels matching ``kernel`` (a regex), best first; ties go to the
    lever named first in ``LEVERS``, then to the kernel name."""
    facts, notes = kernels(ev)
    if kernel is not None:
        wanted = selector(kernel)
        chosen = [f for f in facts if wanted(f.name, f.identity.demangled)]
        if not chosen:
            raise InputError(f"--kernel {kernel!r} matches none of the {len(facts)} kernel(s) in the evidence")
        facts = chosen
    found = [_experiment(f, r, m, ev) for f in facts for r in RULES if (m := r.test(f)) is not None]
    host = host_experiment(ev) if kernel is None else None
    dominates = host is not None and host[1]
    found += [host[0]] if host is not None else []
    # the host first when it dominates: no kernel change can win back time the GPU spent waiting for it
    found.sort(key=lambda e: (not (dominates and e.lever == "host_overhead"), -e.score, LEVERS.index(e.lever),
                              e.kernel.name))  # fmt: skip
    for i, e in enumerate(found, 1):
        e.rank = i
    silent = len(facts) - len({e.kernel.name for e in found})
    if silent:
        notes.append(f"{silent} of {len(facts)} kernel(s) triggered no rule")
    notes += _hot_but_silent(facts, found)
    if len(found) > top:
        notes.append(f"{len(found) - top} more experiment(s) below the top {top}")
    return SuggestResult(experiments=found[:top], evidence_used={k: list(v) for k, v in ev.inputs.items()},
                         notes=[*ev.notes, *notes])  # fmt: skip
