"""The decision rule of ``kscope eval``: is the candidate's metric better than the baseline's?

With speedup S = median(baseline) / median(candidate) for a ``lower`` metric (candidate / baseline for a
``higher`` one), its bootstrap CI at 1 - alpha, and the two-sided Mann-Whitney p-value:

- ``improved``  iff p < alpha, CI low > 1 and S >= 1 + min_effect;
- ``regressed`` iff p < alpha, CI high < 1 and S <= 1 / (1 + min_effect);
- ``unstable``  otherwise, if IQR / median exceeds ``max_spread`` on either side (the noise, not the
  code, decided it: quiet the machine or add runs);
- ``neutral``   otherwise.

Under the null a two-sided test at alpha calls a win in at most alpha / 2 of evals, and requiring the
CI as well can only lower that; the minimum effect keeps a 0.3% shift that thousands of runs make
"significant" from counting as a win. ``docs/eval.md`` has the measured error rates.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelscope.analyses.stats import Sample, compare, summarize
from kernelscope.model.stats import Summary
from kernelscope.model.task import Direction, Rule, Status


@dataclass(frozen=True)
class Verdict:
    status: Status
    reason: str
    speedup: float | None
    ci: tuple[float, float] | None
    p_value: float | None
    baseline: Summary
    candidate: Summary


def spread(s: Summary) -> float:
    """IQR / median: the relative noise of one side (infinite for a non-positive median)."""
    return s.iqr / s.median if s.median > 0 else float("inf")


def decide(baseline: Sample, candidate: Sample, direction: Direction, rule: Rule | None = None) -> Verdict:
    """Apply the rule (``Rule()`` by default) to the samples of the two sides."""
    rule = rule or Rule()
    base, cand = summarize(baseline), summarize(candidate)
    if base.min <= 0:
        return Verdict("needs_baseline", "the baseline reported zero or negative values", None, None, None, base, cand)
    if direction == "lower" and cand.min <= 0:
        why = "the candidate reported zero or negative values of a lower-is-better metric"
        return Verdict("failed", why, None, None, None, base, cand)
    # compare() reports median(b) / median(a) with its CI: a is the side the speedup divides by
    a, b = (candidate, baseline) if direction == "lower" else (baseline, candidate)
    c = compare(a, b, alpha=rule.alpha, resamples=rule.resamples, seed=rule.seed)
    if c.ci is None or c.test is None or c.ratio is None:
        return Verdict("neutral", c.reason or "not comparable", c.ratio, None, None, base, cand)
    s, lo, hi, p = c.ratio, c.ci.low, c.ci.high, c.test.p_value
    level = f"{100 * (1 - rule.alpha):g}%"
    stated = f"speedup {s:.4f} ({level} CI {lo:.4f}-{hi:.4f}), p={p:.2g}"
    noisy = max(spread(base), spread(cand))
    status: Status
    if p < rule.alpha and lo > 1 and s >= 1 + rule.min_effect:
        status, why = "improved", f"{stated}: p < {rule.alpha:g}, CI above 1, >= {1 + rule.min_effect:g}"
    elif p < rule.alpha and hi < 1 and s <= 1 / (1 + rule.min_effect):
        status, why = "regressed", f"{stated}: p < {rule.alpha:g}, CI below 1, <= 1/{1 + rule.min_effect:g}"
    elif noisy > rule.max_spread:
        status = "unstable"
        why = (
            f"{stated}; IQR/median {100 * noisy:.1f}% exceeds {100 * rule.max_spread:g}%: quiet the machine or add runs"
        )
    else:
        status, why = "neutral", f"{stated}: no significant change of at least {100 * rule.min_effect:g}%"
    return Verdict(status, why, s, (lo, hi), p, base, cand)
