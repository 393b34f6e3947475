"""Compare two profiles kernel by kernel: what was added or removed, what got slower or faster.

Both sides are aggregated as ``kscope gap`` does (same grouping, same totals); rows are matched by
their label (the kernel name, or the function/category/kind with ``group_by``). Definitions (also in
``docs/diff.md``):
- delta: total time in B minus total time in A; ``delta_pct`` is relative to A's total;
- delta share: the row's delta over the change in total kernel time (rows sum to 100%; a share can
  exceed 100% or be negative when other rows move the other way);
- when call counts differ the total delta splits exactly into ``count_effect`` ((calls B - calls A) x
  A's mean) and ``per_call_effect`` (calls B x the change of the mean);
- significance is about per-launch durations only (``analyses.stats.compare``): p < alpha for the
  two-sided Mann-Whitney U test and the bootstrap CI of median(B) / median(A) excludes 1.
"""

from __future__ import annotations

import numpy as np

from kernelscope.analyses import stats
from kernelscope.analyses.gap import GapAccumulator
from kernelscope.errors import InputError
from kernelscope.model import Profile
from kernelscope.model.diff import Change, DiffCounts, DiffOptions, DiffResult, DiffRow, Status
from kernelscope.model.gap import GapOptions, GapResult, GroupBy, KernelRow

_NS_PER_US = 1000
_UNMATCHED_WARNING_SHARE = 0.2  # warn when kernels found on one side only hold more of the time than this


def _ns(us: float | None) -> int | None:
    return None if us is None else round(us * _NS_PER_US)


def _pct(delta: float, base: float | None) -> float | None:
    return 100.0 * delta / base if base else None


def _change(a: int | None, b: int | None) -> Change:
    delta = None if a is None or b is None else b - a
    return Change(a=a, b=b, delta=delta, delta_pct=None if delta is None else _pct(delta, a))


class _Side:
    """One side's gap rows by label, with each row's per-launch durations where the format has them."""

    def __init__(self, source: Profile | GapAccumulator, group_by: GroupBy) -> None:
        if isinstance(source, Profile):
            acc = GapAccumulator(GapOptions(group_by=group_by))
            acc.add(source)
        else:
            if source.options.group_by != group_by or source.options.per_rank:
                raise InputError(f"diff: the accumulator must group by {group_by!r}, without per_rank")
            acc = source
        self.gap: GapResult = acc.result()
        self.rows: dict[str, KernelRow] = {r.name: r for r in self.gap.kernels}
        self.durations: dict[str, np.ndarray] = {name: d for (_, name), d in acc.durations().items()}

    def total_ns(self, name: str) -> int:
        d, row = self.durations.get(name), self.rows.get(name)
        if d is not None:
            return int(d.sum())
        return 0 if row is None else round(row.total_us * _NS_PER_US)

    def spread(self, name: str) -> tuple[float | None, float | None]:
        """(median, IQR) in ns; rows from profiler statistics have no IQR, and a median only where the profiler
        computed one (nsys stats)."""
        d = self.durations.get(name)
        if d is None:
            row = self.rows.get(name)
            return (row.median_us * _NS_PER_US if row is not None and row.median_us is not None else None), None
        s = stats.summarize(d)
        return s.median, s.iqr


def _row(name: str, a: _Side, b: _Side, options: DiffOptions) -> DiffRow:
    ra, rb = a.rows.get(name), b.rows.get(name)
    ident = rb or ra
    assert ident is not None  # names come from the union of both sides' rows
    status: Status = "added" if ra is None else "removed" if rb is None else "common"
    ta, tb = a.total_ns(name), b.total_ns(name)
    (median_a, iqr_a), (median_b, iqr_b) = a.spread(name), b.spread(name)
    row = DiffRow(
        name=name,
        status=status,
        verdict=status if status != "common" else "n/a",
        calls_a=ra.calls if ra else 0,
        calls_b=rb.calls if rb else 0,
        total_a_ns=ta,
        total_b_ns=tb,
        delta_ns=tb - ta,
        delta_pct=_pct(tb - ta, ta),
        delta_share_pct=None,
        count_effect_ns=None,
        per_call_effect_ns=None,
        median_a_ns=median_a,
        median_b_ns=median_b,
        iqr_a_ns=iqr_a,
        iqr_b_ns=iqr_b,
        median_ratio=median_b / median_a if median_a and median_b is not None else None,
        ci_low=None,
        ci_high=None,
        p_value=None,
        significant=None,
        kind=ident.kind,
        category=ident.category,
        function=ident.function,
        dtype=ident.dtype,
    )
    if status == "common":
        row.count_effect_ns = (row.calls_b - row.calls_a) * ta / row.calls_a
        row.per_call_effect_ns = row.delta_ns - row.count_effect_ns
        _test(row, a.durations.get(name), b.durations.get(name), options)
    return row


def _test(row: DiffRow, da: np.ndarray | None, db: np.ndarray | None, options: DiffOptions) -> None:
    """Fill the significance of a common row from its per-launch durations."""
    if da is None or db is None:
        row.reason = "no per-launch durations (profiler-computed statistics)"
        return
    cmp = stats.compare(
        da, db, alpha=options.alpha, min_samples=options.min_launches, resamples=options.resamples, seed=options.seed
    )
    row.significant, row.reason = cmp.significant, cmp.reason
    if cmp.ci is None or cmp.test is None:
        return
    row.ci_low, row.ci_high, row.p_value = cmp.ci.low, cmp.ci.high, cmp.test.p_value
    if cmp.significant:  # the CI excludes 1, so its side of 1 is the direction
        row.verdict = "slower" if cmp.ci.low > 1.0 else "faster"
    else:
        row.verdict = "not_significant"


def _totals(a: GapResult, b: GapResult, rows: list[DiffRow]) -> dict[str, Change]:
    ta, tb = a.totals, b.totals
    # kernel time from the rows' integer sums, so that the rows' deltas add up to its delta exactly
    out = {"kernel_time_ns": _change(sum(r.total_a_ns for r in rows), sum(r.total_b_ns for r in rows))}
    for key in ("busy_time", "wall_time", "idle_time"):
        out[f"{key}_ns"] = _change(_ns(getattr(ta, f"{key}_us")), _ns(getattr(tb, f"{key}_us")))
    out["launches"] = _change(ta.launches, tb.launches)
    out["kernels"] = _change(ta.kernels, tb.kernels)
    return out


def _counts(rows: list[DiffRow]) -> DiffCounts:
    def n(**match: object) -> int:
        return sum(all(getattr(r, k) == v for k, v in match.items()) for r in rows)

    return DiffCounts(
        common=n(status="common"),
        added=n(status="added"),
        removed=n(status="removed"),
        slower=n(verdict="slower"),
        faster=n(verdict="faster"),
        not_significant=n(verdict="not_significant"),
        untested=n(status="common", verdict="n/a"),
        calls_changed=sum(r.status == "common" and r.calls_a != r.calls_b for r in rows),
        added_time_ns=sum(r.total_b_ns for r in rows if r.status == "added"),
        removed_time_ns=sum(r.total_a_ns for r in rows if r.status == "removed"),
    )


def _warnings(a: _Side, b: _Side, counts: DiffCounts, options: DiffOptions) -> list[str]:
    out = [f"A: {w}" for w in a.gap.warnings] + [f"B: {w}" for w in b.gap.warnings]
    kernel_ns = max(a.gap.totals.kernel_time_us, b.gap.totals.kernel_time_us) * _NS_PER_US
    unmatched = max(counts.added_time_ns, counts.removed_time_ns)
    if kernel_ns and unmatched > _UNMATCHED_WARNING_SHARE * kernel_ns:
        alternatives = " or ".join(g for g in ("function", "category", "kind") if g != options.group_by)
        out.append(
            f"{100 * unmatched / kernel_ns:.0f}% of the kernel time is in kernels found on one side only "
            f"(renamed or fused kernels): --group-by {alternatives} compares them by role"
        )
    if options.group_by != "name":
        out.append(
            f"rows are {options.group_by} groups: their significance pools launches of different kernels, "
            "so a change in the mix of kernels reads as a change in duration"
        )
    if counts.calls_changed:
        out.append(
            f"{counts.calls_changed} common kernel(s) ran a different number of times: their delta splits into "
            "count_effect (calls) and per_call_effect (duration); significance is about per-launch duration only"
        )
    return out


def diff(a: Profile | GapAccumulator, b: Profile | GapAccumulator, options: DiffOptions | None = None) -> DiffResult:
    """Compare B against baseline A, kernel by kernel, ranked by |delta|.

    A side is a ``Profile`` or, for inputs streamed as columns (``api.diff``), a ``GapAccumulator``
    fed with them and grouped as ``options.group_by``.
    """
    options = options or DiffOptions()
    sa, sb = _Side(a, options.group_by), _Side(b, options.group_by)
    names = list(dict.fromkeys([*sa.rows, *sb.rows]))
    rows = [_row(name, sa, sb, options) for name in names]
    total_delta = sum(r.delta_ns for r in rows)
    for r in rows:
        r.delta_share_pct = _pct(r.delta_ns, total_delta)
    rows.sort(key=lambda r: (-abs(r.delta_ns), r.name))
    counts = _counts(rows)
    return DiffResult(
        totals=_totals(sa.gap, sb.gap, rows),
        counts=counts,
        kernels=rows,
        options=options,
        sources_a=sa.gap.sources,
        sources_b=sb.gap.sources,
        warnings=_warnings(sa, sb, counts, options),
    )
