"""Stage 2 of ``kscope tune``: which config wins a shape, or which configs tie — pure over the timings.

The finalists were timed in interleaved rounds on one device (``times[r][i]``: config ``i``'s median in
round ``r``). The fastest by its median over rounds is the leader; every other finalist whose paired
ratio to the leader has a CI reaching 1 is tied with it. A winner is declared only when no finalist ties;
a tie is broken deterministically — the incumbent first, then fewer registers, less shared memory, then
the config's canonical text — and reported as a tie, never as a win.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from kernelscope.analyses.stats import bootstrap_median, paired_ratio
from kernelscope.model.tune import Best, Outcome, Params, TuneResult, key

CONFIDENCE = 0.95


def _cost(o: Outcome | None, config: Params, incumbent: Params | None) -> tuple[int, float, float, str]:
    regs = o.registers if o is not None and o.registers is not None else math.inf
    shared = o.shared_bytes if o is not None and o.shared_bytes is not None else math.inf
    return (0 if incumbent is not None and key(config) == key(incumbent) else 1, regs, shared, key(config))


def decide(
    shape: Params,
    configs: Sequence[Params],
    times: Sequence[Sequence[float]],
    *,
    incumbent: Params | None = None,
    stage1: Sequence[Outcome | None] = (),
    device: str = "",
    seed: int = 0,
) -> Best:
    """The shape's ``Best`` from ``times`` (rounds x configs, µs); ``stage1`` (same order) gives the
    registers and shared bytes for the tie-break."""
    t = np.asarray(times, dtype=np.float64)
    medians = np.median(t, axis=0)
    order = [int(i) for i in np.argsort(medians, kind="stable")]
    lead = order[0]
    ratios = {j: paired_ratio(t[:, lead], t[:, j], confidence=CONFIDENCE, seed=seed) for j in order[1:]}
    tied = [lead] + [j for j in order[1:] if ratios[j].low <= 1.0]
    info = list(stage1) + [None] * (len(configs) - len(stage1))
    chosen = min(tied, key=lambda i: _cost(info[i], configs[i], incumbent)) if len(tied) > 1 else lead
    runner = next((i for i in order if i != chosen), None)  # the fastest of the others
    ratio = None if runner is None else paired_ratio(t[:, chosen], t[:, runner], confidence=CONFIDENCE, seed=seed)
    ci = bootstrap_median(t[:, chosen], confidence=CONFIDENCE, seed=seed)
    inc = next((i for i, c in enumerate(configs) if incumbent is not None and key(c) == key(incumbent)), None)
    return Best(
        shape=dict(shape),
        config=dict(configs[chosen]),
        median_us=float(medians[chosen]),
        ci_us=[ci.low, ci.high],
        tie=[dict(configs[i]) for i in tied] if len(tied) > 1 else [],
        runner_up=dict(configs[runner]) if runner is not None else None,
        runner_up_ratio=[ratio.estimate, ratio.low, ratio.high] if ratio is not None else None,
        incumbent_us=float(medians[inc]) if inc is not None else None,
        speedup=float(medians[inc] / medians[chosen]) if inc is not None else None,
        rounds=int(t.shape[0]),
        device=device,
    )


def alone(o: Outcome, incumbent: Params | None) -> Best:
    """The only candidate of a shape that ran: best by default, no stage 2."""
    same = incumbent is not None and key(o.config) == key(incumbent)
    return Best(
        shape=dict(o.shape),
        config=dict(o.config),
        median_us=float(o.median_us or 0.0),
        ci_us=list(o.ci_us or [o.median_us or 0.0, o.median_us or 0.0]),
        incumbent_us=o.median_us if same else None,
        speedup=1.0 if same else None,
        device=o.device,
    )


def finalists(ok: Sequence[Outcome], *, within: float, top: int, incumbent: Params | None) -> list[Outcome]:
    """Stage 2's entrants: every ok candidate within ``within`` of the fastest stage-1 median (at least two,
    at most ``top``), plus the incumbent so the speedup is measured in the same rounds."""
    ranked = sorted(ok, key=lambda o: (o.median_us or math.inf, key(o.config)))
    if not ranked:
        return []
    cut = (ranked[0].median_us or 0.0) * (1 + within)
    picked = [o for o in ranked if (o.median_us or math.inf) <= cut][:top]
    if len(picked) < 2:
        picked = ranked[:2]
    if incumbent is not None and all(key(o.config) != key(incumbent) for o in picked):
        picked += [o for o in ranked if key(o.config) == key(incumbent)]
    return picked


def busy_share(r: TuneResult) -> dict[str, float] | None:
    """How well a sweep kept its devices busy: the share of each worker's time, from when it was ready to the
    end, spent running items (``busy``); the shares of that busy time spent on set-up (``setup``: compile,
    load, first run, check) and on stage 2 (``stage2``); the slowest worker's start (``ready_s``), the time
    after the last stage-1 result (``tail_s``: stage 2 of the shapes that ended last, and stopping) and the
    time stopping the workers took (``stop_s``). None when nothing ran."""
    if not r.usage:
        return None
    up = sum(max(r.wall_s - u.ready_s, 0.0) for u in r.usage)
    busy = sum(u.busy_s for u in r.usage)
    return {
        "busy": busy / up if up else 0.0,
        "setup": sum(u.setup_s for u in r.usage) / busy if busy else 0.0,
        "stage2": sum(u.stage2_s for u in r.usage) / busy if busy else 0.0,
        "ready_s": max(u.ready_s for u in r.usage),
        "tail_s": r.wall_s - r.stage1_end_s if r.stage1_end_s is not None else 0.0,
        "stop_s": r.wall_s - r.work_end_s if r.work_end_s is not None else 0.0,
    }
