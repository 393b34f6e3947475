"""``kernelscope.analyses.stats`` against independent ground truth: numpy, exhaustive enumeration of
bootstrap resamples, brute-force resampling, exact Mann-Whitney p-values by counting, and scipy."""

from __future__ import annotations

import itertools
from collections import Counter
from math import comb

import numpy as np
import pytest
from scipy import stats as scipy_stats

from kernelscope.analyses import stats
from kernelscope.errors import InputError
from kernelscope.model.stats import RESAMPLES

RNG = np.random.default_rng(20251122)
SKEWED = RNG.lognormal(mean=3.0, sigma=0.3, size=41)  # timing-like: positive, right-skewed


def test_summary_matches_numpy() -> None:
    s = stats.summarize(SKEWED.tolist())
    q1, med, q3 = np.percentile(SKEWED, [25, 50, 75])
    assert (s.n, s.median, s.q1, s.q3) == (41, med, q1, q3)
    assert s.iqr == pytest.approx(q3 - q1)
    assert s.mean == pytest.approx(SKEWED.mean())
    assert (s.min, s.max) == (SKEWED.min(), SKEWED.max())


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [[1.0, 2.0]]], ids=["empty", "nan", "2d"])
def test_bad_samples_are_input_errors(bad: list[object]) -> None:
    with pytest.raises(InputError):
        stats.summarize(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("sample", [[1.0, 2.0, 4.0, 8.0], [3.0, 1.0, 7.0, 7.0, 10.0]], ids=["even", "odd-ties"])
def test_resampled_medians_follow_the_exact_bootstrap_distribution(sample: list[float]) -> None:
    """Every one of the n^n equally likely resamples, enumerated, against 200,000 draws."""
    n = len(sample)
    exact = Counter(float(np.median(r)) for r in itertools.product(sample, repeat=n))
    draws = Counter(stats.resampled_medians(sample, 200_000, np.random.default_rng(1)).tolist())
    total_variation = 0.5 * sum(abs(exact[k] / n**n - draws[k] / 200_000) for k in exact.keys() | draws.keys())
    assert set(draws) <= set(exact)
    assert total_variation < 0.01


def test_resampled_medians_match_brute_force_resampling() -> None:
    fast = stats.resampled_medians(SKEWED, 20_000, np.random.default_rng(2))
    idx = np.random.default_rng(3).integers(0, SKEWED.size, (20_000, SKEWED.size))
    brute = np.median(SKEWED[idx], axis=1)
    assert scipy_stats.ks_2samp(fast, brute).statistic < 0.02  # the 1% critical value is 0.016


def test_bootstrap_is_reproducible_with_a_seed() -> None:
    one = stats.bootstrap_ratio_of_medians(SKEWED, SKEWED * 1.1, seed=7)
    assert one == stats.bootstrap_ratio_of_medians(SKEWED, SKEWED * 1.1, seed=7)
    assert one != stats.bootstrap_ratio_of_medians(SKEWED, SKEWED * 1.1, seed=8)
    assert one.estimate == pytest.approx(1.1)
    assert one.low < 1.1 < one.high
    assert (one.confidence, one.resamples) == (0.99, RESAMPLES)
    med = stats.bootstrap_median(SKEWED, confidence=0.9, resamples=500, seed=1)
    assert med.low <= med.estimate == np.median(SKEWED) <= med.high
    assert med.resamples == 500


def test_ratio_needs_a_positive_baseline() -> None:
    with pytest.raises(InputError, match="positive"):
        stats.bootstrap_ratio_of_medians([0.0, 1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(InputError, match="confidence"):
        stats.bootstrap_median([1.0, 2.0], confidence=1.0)


def test_mann_whitney_exact_p_by_counting() -> None:
    """Complete separation of 5 vs 5 without ties: 2 of the C(10, 5) rank arrangements are as extreme."""
    res = stats.mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert res.p_value == pytest.approx(2 / comb(10, 5))
    assert (res.u, res.n_a, res.n_b) == (0.0, 5, 5)


def test_mann_whitney_matches_scipy_with_ties() -> None:
    a, b = np.round(SKEWED), np.round(SKEWED * 1.05)
    want = scipy_stats.mannwhitneyu(a, b, alternative="two-sided")
    got = stats.mann_whitney(a, b)
    assert got.u == pytest.approx(want.statistic)
    assert got.p_value == pytest.approx(want.pvalue)


def test_compare_scaled_is_significant_and_identical_is_not() -> None:
    slower = stats.compare(SKEWED, SKEWED * 1.25, seed=0)
    assert slower.significant is True
    assert slower.ratio == pytest.approx(1.25)
    assert slower.ci is not None and slower.ci.low > 1.0 and slower.ci.low < 1.25 < slower.ci.high
    same = stats.compare(SKEWED, SKEWED, seed=0)
    assert same.significant is False
    assert same.test is not None and same.test.p_value == pytest.approx(1.0)


def test_compare_says_why_it_cannot_decide() -> None:
    few = stats.compare([1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0, 8.0])
    assert few.significant is None and few.ci is None and few.test is None
    assert few.reason is not None and "fewer than 5" in few.reason
    assert few.ratio == pytest.approx(6.0 / 2.0)
    zero = stats.compare([0.0] * 6, [1.0] * 6)
    assert zero.significant is None and zero.ratio is None
    with pytest.raises(InputError, match="alpha"):
        stats.compare(SKEWED, SKEWED, alpha=0.0)


def test_false_positives_stay_below_alpha_and_power_is_high() -> None:
    """Under the null (both samples from one distribution) the combined rule fires at most ~alpha."""
    rng = np.random.default_rng(11)
    null = [stats.compare(*rng.lognormal(3, 0.3, (2, 30)), resamples=1000, seed=i).significant for i in range(200)]
    assert sum(bool(s) for s in null) <= 6  # alpha = 1%: 2 expected
    shifted = [
        stats.compare(x, 1.2 * y, resamples=1000, seed=i).significant
        for i, (x, y) in enumerate(rng.lognormal(3, 0.1, (50, 2, 30)))
    ]
    assert all(shifted)
