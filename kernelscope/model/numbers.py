"""The one place that converts a profiler's number into a record field: finite, within int64, and (for
durations) non-negative. Readers call these where a cell, a JSON value or an SQLite value becomes a record;
anything else (``inf``, ``NaN``, ``2**64``, text where a number belongs, bytes) comes back as ``None``, and
the reader decides: a missing optional field, or a record dropped and counted (``count_dropped``)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from kernelscope.errors import DroppedRecordsWarning

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def to_float(v: object) -> float | None:
    """A finite float from an int, a float or numeric text (``,`` thousands separators allowed); else None."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        f = float(v) if INT64_MIN <= v <= INT64_MAX else math.inf
    elif isinstance(v, float):
        f = v
    elif isinstance(v, str):
        s = v.strip().replace(",", "")
        try:
            f = float(s) if s else math.nan
        except ValueError:
            return None
    else:
        return None
    return f if math.isfinite(f) else None


def to_int(v: object) -> int | None:
    """An int within int64 from an int, a float (truncated, as ``int()`` does) or numeric text; else None."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return v if INT64_MIN <= v <= INT64_MAX else None
    if isinstance(v, str):
        s = v.strip().replace(",", "")
        try:
            n = int(s)
            return n if INT64_MIN <= n <= INT64_MAX else None
        except ValueError:
            pass
    f = to_float(v)
    if f is None or not INT64_MIN <= f < INT64_MAX:
        return None
    return int(f)


def to_duration(v: object) -> int | None:
    """A non-negative int64 duration (or count); None for negative, non-finite or out-of-range values."""
    n = to_int(v)
    return n if n is not None and n >= 0 else None


_tally: ContextVar[list[int] | None] = ContextVar("kscope_dropped", default=None)


@contextmanager
def tally_dropped() -> Iterator[list[int]]:
    """Inside: every ``count_dropped`` also adds to the yielded one-item list (a result's
    ``dropped_records``), besides its warning line."""
    box = [0]
    token = _tally.set(box)
    try:
        yield box
    finally:
        _tally.reset(token)


def count_dropped(what: str, n: int, source: object) -> None:
    """One warning line for ``n`` records dropped for impossible numbers (nothing when ``n`` is 0)."""
    box = _tally.get()
    if box is not None:
        box[0] += n
    if n:
        msg = f"{source}: dropped {n} {what} with impossible times (negative, non-finite or out of range)"
        warnings.warn(DroppedRecordsWarning(msg), stacklevel=3)


def is_int64(v: object) -> bool:
    """``v`` is already a record-ready int64 (an int, not a bool, within range)."""
    return type(v) is int and INT64_MIN <= v <= INT64_MAX


def is_duration(v: object) -> bool:
    """``v`` is a record-ready non-negative int64 duration."""
    return type(v) is int and 0 <= v <= INT64_MAX


def span(start: int | None, end: int | None) -> int | None:
    """``end - start`` as a duration; None when either is missing or the end comes before the start."""
    if start is None or end is None:
        return None
    return to_duration(end - start)


def ns_from_us(us: float) -> int | None:
    """Microseconds (Kineto's ``ts``/``dur``) as whole nanoseconds, rounded half to even; None when the
    value is not finite or the nanoseconds leave int64."""
    ns = us * 1000
    return round(ns) if math.isfinite(ns) and abs(ns) < INT64_MAX else None


def possible_span_us(ts: float, dur: float) -> bool:
    """One event's microsecond ``ts`` and ``dur`` make possible int64 nanoseconds (``possible_us`` for one)."""
    start, length = ns_from_us(ts), ns_from_us(dur)
    return start is not None and length is not None and start >= 0 and length >= 0


def possible_us(ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """Mask of the events whose microsecond ``ts`` and ``dur`` make possible int64 nanoseconds (finite,
    non-negative, in range): the columnar twin of ``ns_from_us`` plus the non-negative check."""
    with np.errstate(invalid="ignore", over="ignore"):
        t, d = ts * 1000, dur * 1000
        ok: np.ndarray = np.isfinite(t) & np.isfinite(d) & (t >= 0) & (d >= 0) & (t < INT64_MAX) & (d < INT64_MAX)
    return ok


def int64s(values: Sequence[object]) -> np.ndarray | None:
    """``values`` (integers a typed decoder checked) as an int64 array; None when one leaves int64."""
    try:
        return np.array(values, dtype=np.int64)
    except (OverflowError, TypeError, ValueError):
        return None


def possible_times(rec: object) -> bool:
    """A record's times are possible: ``duration_ns`` (when it has one) a non-negative int64, ``start_ns``,
    ``end_ns``, ``launch_ns`` and ``launch_dur_ns`` absent or non-negative int64 (profilers count from a
    session or boot)."""
    d = getattr(rec, "duration_ns", 0)
    if not is_duration(d):
        return False
    for name in ("start_ns", "end_ns", "launch_ns", "launch_dur_ns"):
        v = getattr(rec, name, None)
        if v is not None and not is_duration(v):
            return False
    end, start = getattr(rec, "end_ns", None), getattr(rec, "start_ns", None)
    return end is None or start is None or end >= start


def stats_possible(s: object) -> bool:
    """Aggregated statistics: every time and share present is finite and non-negative."""
    for name in ("total_ns", "avg_ns", "min_ns", "max_ns", "std_ns", "pct", "calls"):
        v = getattr(s, name, None)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < math.inf):
            return False
    return True
