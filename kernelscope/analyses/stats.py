"""Statistics for comparing two samples of timings: robust summaries, bootstrap CIs, Mann-Whitney U.

Generic on purpose (sequences of floats in, frozen results out): ``kscope diff`` compares per-launch
kernel durations with it, and any A/B of repeated measurements can do the same.

Medians rather than means: kernel timings are right-skewed (clock ramps, preemption, cold caches), and
one outlier moves a mean but not a median. The tests are nonparametric for the same reason.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kernelscope.errors import InputError
from kernelscope.model.stats import ALPHA, MIN_SAMPLES, RESAMPLES, Comparison, Interval, MannWhitney, Summary

Sample = Sequence[float] | np.ndarray


def _array(xs: Sample, what: str = "sample") -> np.ndarray:
    arr = np.asarray(xs, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise InputError(f"{what}: expected a non-empty sequence of numbers, found shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise InputError(f"{what}: expected finite numbers, found NaN or infinity")
    return arr


def summarize(xs: Sample) -> Summary:
    arr = _array(xs)
    q1, median, q3 = np.percentile(arr, [25, 50, 75])
    return Summary(
        n=int(arr.size),
        mean=float(arr.mean()),
        median=float(median),
        q1=float(q1),
        q3=float(q3),
        iqr=float(q3 - q1),
        min=float(arr.min()),
        max=float(arr.max()),
    )


def resampled_medians(xs: Sample, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of ``resamples`` bootstrap resamples of ``xs``, in O(resamples) after one sort.

    Exact, not an approximation: a resample draws n indices uniformly, so its k-th smallest value is
    ``sorted(xs)[floor(n * U_(k))]`` where ``U_(k)`` is the k-th order statistic of n uniforms,
    ~ Beta(k, n - k + 1). Given ``U_(k) = u`` the larger uniforms are uniform on (u, 1), so the next one
    is ``u + (1 - u) * Beta(1, n - k)``. Resampling n values each time instead costs O(n) per
    resample: minutes for kernels launched 10^5 times.
    """
    x = np.sort(_array(xs))
    n = x.size
    k = (n + 1) // 2  # the median is the k-th smallest (odd n) or the mean of the k-th and next (even n)
    u = rng.beta(k, n - k + 1, size=resamples)
    lower: np.ndarray = x[np.minimum((u * n).astype(np.int64), n - 1)]  # u can round to 1.0
    if n % 2:
        return lower
    v = u + (1.0 - u) * rng.beta(1, n - k, size=resamples)
    upper: np.ndarray = x[np.minimum((v * n).astype(np.int64), n - 1)]
    middle: np.ndarray = (lower + upper) / 2
    return middle


def _interval(estimate: float, draws: np.ndarray, confidence: float) -> Interval:
    if not 0.0 < confidence < 1.0:
        raise InputError(f"confidence {confidence}: expected a level between 0 and 1, e.g. 0.99")
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(draws, [tail, 1.0 - tail])
    return Interval(
        estimate=estimate, low=float(low), high=float(high), confidence=confidence, resamples=int(draws.size)
    )


def bootstrap_median(
    xs: Sample, *, confidence: float = 1 - ALPHA, resamples: int = RESAMPLES, seed: int | None = None
) -> Interval:
    """Percentile bootstrap CI of the median of ``xs``; a fixed ``seed`` makes it reproducible."""
    rng = np.random.default_rng(seed)
    return _interval(float(np.median(_array(xs))), resampled_medians(xs, resamples, rng), confidence)


def bootstrap_ratio_of_medians(
    a: Sample, b: Sample, *, confidence: float = 1 - ALPHA, resamples: int = RESAMPLES, seed: int | None = None
) -> Interval:
    """Percentile bootstrap CI of median(b) / median(a), resampling each sample independently.

    ``a`` must be positive (durations): the ratio of a zero median is undefined.
    """
    base = _array(a, "baseline")
    if base.min() <= 0:
        raise InputError("baseline: a ratio of medians needs positive values, found zero or negative ones")
    rng = np.random.default_rng(seed)
    ratios = resampled_medians(b, resamples, rng) / resampled_medians(base, resamples, rng)
    return _interval(float(np.median(_array(b)) / np.median(base)), ratios, confidence)


def paired_ratio(
    a: Sample, b: Sample, *, confidence: float = 1 - ALPHA, resamples: int = RESAMPLES, seed: int | None = None
) -> Interval:
    """CI of the typical ratio b/a of *paired* timings (``a[i]`` and ``b[i]`` taken in the same round):
    the bootstrap of the median of log(b[i]/a[i]), exponentiated. Pairing cancels what drifts between
    rounds (clocks, temperature, a neighbour's load), which independent resampling would count as noise."""
    x, y = _array(a, "a"), _array(b, "b")
    if x.size != y.size:
        raise InputError(f"paired samples: {x.size} vs {y.size} values")
    if min(x.min(), y.min()) <= 0:
        raise InputError("paired ratio: timings must be positive")
    d = np.log(y / x)
    rng = np.random.default_rng(seed)
    draws = np.exp(resampled_medians(d, resamples, rng))
    return _interval(float(np.exp(np.median(d))), draws, confidence)


def mann_whitney(a: Sample, b: Sample) -> MannWhitney:
    """Two-sided Mann-Whitney U test (``scipy.stats.mannwhitneyu``, method ``auto``: exact for small
    samples without ties, else the normal approximation with tie and continuity corrections)."""
    from scipy.stats import mannwhitneyu  # slow to import; only commands that test pay for it

    x, y = _array(a, "a"), _array(b, "b")
    res = mannwhitneyu(x, y, alternative="two-sided")
    return MannWhitney(u=float(res.statistic), p_value=float(res.pvalue), n_a=int(x.size), n_b=int(y.size))


def compare(
    a: Sample,
    b: Sample,
    *,
    alpha: float = ALPHA,
    confidence: float | None = None,
    min_samples: int = MIN_SAMPLES,
    resamples: int = RESAMPLES,
    seed: int | None = None,
) -> Comparison:
    """Is ``b`` different from baseline ``a``? Both summaries, the median ratio, its CI and the U test.

    Significant means p < ``alpha`` and the ``confidence`` CI (default 1 - ``alpha``) of the median
    ratio excludes 1. The U test alone also answers a change of shape with equal medians, while the
    effect reported is the median ratio, so its CI must agree; the percentile CI alone is too narrow
    for small samples. Significance is not size: with 10^4 launches a 0.5% shift is significant, so
    read the ratio too. Fewer than ``min_samples`` on either side, or a non-positive baseline, gives
    ``significant=None`` and the reason.
    """
    if not 0.0 < alpha < 1.0:
        raise InputError(f"alpha {alpha}: expected a significance level between 0 and 1, e.g. 0.01")
    sa, sb = summarize(a), summarize(b)
    ratio = sb.median / sa.median if sa.median > 0 else None
    reason = None
    if min(sa.n, sb.n) < min_samples:
        reason = f"fewer than {min_samples} samples on a side ({sa.n} vs {sb.n})"
    elif sa.min <= 0:
        reason = "the baseline has zero or negative values: no ratio"
    if reason is not None:
        return Comparison(a=sa, b=sb, ratio=ratio, ci=None, test=None, alpha=alpha, significant=None, reason=reason)
    ci = bootstrap_ratio_of_medians(
        a, b, confidence=1 - alpha if confidence is None else confidence, resamples=resamples, seed=seed
    )
    test = mann_whitney(a, b)
    return Comparison(
        a=sa, b=sb, ratio=ratio, ci=ci, test=test, alpha=alpha, significant=test.p_value < alpha and ci.excludes(1.0)
    )
