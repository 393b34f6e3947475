"""The decision rule of ``kscope eval`` validated by simulation through the stats API.

Samples are lognormal (timings are right-skewed) with a controlled coefficient of variation; every
trial has its own seed for both the draws and the bootstrap, so the rates below are exact and repeatable.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from kernelscope.loop.decision import decide
from kernelscope.model.task import Direction, Rule

N = 20  # runs per side, the task default


def _trials(trials: int, shift: float, cv: float, seed: int, direction: Direction = "lower") -> Counter[str]:
    """Statuses of ``trials`` evals whose candidate median is the baseline's times ``shift``."""
    rng = np.random.default_rng(seed)
    out: Counter[str] = Counter()
    for i in range(trials):
        base = 100.0 * rng.lognormal(0.0, cv, N)
        cand = 100.0 * shift * rng.lognormal(0.0, cv, N)
        out[decide(base, cand, direction, Rule(seed=i)).status] += 1
    return out


@pytest.mark.parametrize(("cv", "trials"), [(0.01, 1000), (0.03, 400)])
def test_a_a_false_win_rate_is_at_most_one_percent(cv: float, trials: int) -> None:
    """A/A comparisons (the same distribution on both sides): at most 1% called improved."""
    got = _trials(trials, 1.0, cv, seed=11)
    assert got["improved"] <= trials / 100, got
    assert got["improved"] + got["regressed"] <= trials / 50, got


def test_a_three_percent_speedup_is_found_with_one_percent_noise() -> None:
    """The candidate 3% faster, 1% CV, N=20: improved in at least 95% of 300 trials."""
    got = _trials(300, 1 / 1.03, 0.01, seed=12)
    assert got["improved"] >= 0.95 * 300, got
    assert got["regressed"] == 0


def test_a_three_percent_slowdown_is_regressed() -> None:
    got = _trials(200, 1.03, 0.01, seed=13)
    assert got["regressed"] >= 0.95 * 200, got


def test_higher_is_better_mirrors_lower() -> None:
    """For a throughput the candidate must be larger: same samples, opposite verdicts."""
    rng = np.random.default_rng(14)
    base = 100.0 * rng.lognormal(0.0, 0.01, N)
    cand = 110.0 * rng.lognormal(0.0, 0.01, N)
    up = decide(base, cand, "higher")
    down = decide(base, cand, "lower")
    assert (up.status, down.status) == ("improved", "regressed")
    assert up.speedup is not None and up.speedup == pytest.approx(float(np.median(cand) / np.median(base)))
    assert down.speedup == pytest.approx(1 / up.speedup)
    assert up.ci is not None and up.ci[0] > 1 and up.p_value == pytest.approx(down.p_value)


def test_a_significant_but_tiny_shift_is_neutral() -> None:
    """0.5% faster with 0.1% noise is significant, but below the 1% minimum effect."""
    got = _trials(50, 1 / 1.005, 0.001, seed=15)
    assert got["neutral"] == 50, got


def test_high_spread_without_a_decision_is_unstable() -> None:
    got = _trials(50, 1.0, 0.2, seed=16)
    assert got["unstable"] >= 45, got


def test_the_same_seed_gives_the_same_interval() -> None:
    rng = np.random.default_rng(17)
    base, cand = rng.lognormal(0, 0.05, N), rng.lognormal(0, 0.05, N)
    assert decide(base, cand, "lower", Rule(seed=3)).ci == decide(base, cand, "lower", Rule(seed=3)).ci


def test_non_positive_values_cannot_be_judged() -> None:
    ok = [1.0] * 5
    assert decide([0.0, *ok], ok, "lower").status == "needs_baseline"
    assert decide(ok, [-1.0, *ok], "lower").status == "failed"
    assert decide(ok, [0.0] * 5, "higher").status == "regressed"  # zero throughput is just worse
