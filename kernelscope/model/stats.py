"""Statistics summaries of timing samples, held by results in ``model/``; ``analyses/stats.py`` computes them."""

from __future__ import annotations

import msgspec

ALPHA = 0.01  # default significance level; the default CI level is 1 - ALPHA, so both tests agree
MIN_SAMPLES = 5  # with 5 vs 5 the exact two-sided Mann-Whitney p can reach 2/252 = 0.008 < ALPHA
RESAMPLES = 10_000


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    """Location and spread of one sample; quartiles by linear interpolation (numpy's default)."""

    n: int
    mean: float
    median: float
    q1: float
    q3: float
    iqr: float
    min: float
    max: float


class Interval(msgspec.Struct, frozen=True, kw_only=True):
    """A percentile bootstrap confidence interval around a point ``estimate``."""

    estimate: float
    low: float
    high: float
    confidence: float
    resamples: int

    def excludes(self, value: float) -> bool:
        return not self.low <= value <= self.high


class MannWhitney(msgspec.Struct, frozen=True, kw_only=True):
    """Two-sided Mann-Whitney U test: ``u`` is the statistic of the first sample."""

    u: float
    p_value: float
    n_a: int
    n_b: int


class Comparison(msgspec.Struct, frozen=True, kw_only=True):
    """Sample ``b`` against baseline ``a``.

    ``significant`` is True when the Mann-Whitney p-value is below ``alpha`` *and* the bootstrap CI of
    median(b) / median(a) excludes 1; None (with ``reason``) when the samples cannot decide it.
    """

    a: Summary
    b: Summary
    ratio: float | None  # median(b) / median(a); None when median(a) is not positive
    ci: Interval | None
    test: MannWhitney | None
    alpha: float
    significant: bool | None
    reason: str | None = None
