"""Nsight Systems ``nsys stats --report cuda_gpu_kern_sum`` output: per-kernel statistics nsys computed itself.

The report nsys users share most (``--format csv`` or ``tsv``, to a file or captured from stdout with its
``Processing [...]`` line before the header): Time (%), Total Time, Instances, Avg, Med, Min, Max, StdDev,
Name, each time column in the unit ``--timeunit`` chose (``(ns)`` by default, ``(us)``, ``(ms)``, ``(s)``);
nsys before 2022 (``gpukernsum``) printed Average, Minimum and Maximum in ns and no median. The ``:base`` and
``:mangled`` variants change only the names; ``cuda_gpu_kern_gb_sum`` (a row per grid and block of a kernel) reads
as one row per kernel. Like rocprofv3's ``kernel_stats.csv`` there is no timeline: the
profile has ``timing="none"`` and only ``stats``.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

from kernelscope.errors import FormatError
from kernelscope.model import KernelStats, Profile, numbers
from kernelscope.readers._csv import norm, open_text, rows, to_float, to_int

FORMAT = "nsys-kern-sum"
_EXPECTED = "an nsys stats cuda_gpu_kern_sum report (Time (%), Total Time, Instances, ..., Name columns)"
_UNIT = re.compile(r"\((ns|nsec|us|usec|ms|msec|s|sec)\)\s*$")
_NS_PER = {"ns": 1.0, "nsec": 1.0, "us": 1e3, "usec": 1e3, "ms": 1e6, "msec": 1e6, "s": 1e9, "sec": 1e9}
# normalized header (unit removed) -> field; the pre-2022 names (no unit: ns) beside today's
_FIELDS = {
    "totaltime": "total",
    "avg": "avg",
    "average": "avg",
    "med": "median",
    "min": "min",
    "minimum": "min",
    "max": "max",
    "maximum": "max",
    "stddev": "std",
}
HEADER_LINES = 8  # nsys prints a "Processing [...]" line (and a blank one) before the CSV when writing to stdout


def header_columns(line: str) -> list[str] | None:
    """The columns of ``line`` when it is this report's header (tab- or comma-separated), else None."""
    sep = "\t" if "\t" in line else ","
    cols = [c.strip().strip('"') for c in line.split(sep)]
    names = {norm(_UNIT.sub("", c)) for c in cols}
    return cols if {"totaltime", "instances", "name"} <= names else None


def read(path: Path, *, rank: int | None = None) -> Profile:
    del rank  # statistics are already aggregated over the report
    it = rows(path, _EXPECTED, delimiter=_delimiter(path))
    cols = None
    for _ in range(HEADER_LINES):
        first = next(it, None)
        if first is None or (cols := header_columns(",".join(first))) is not None:
            break
    if not cols:
        raise FormatError(path, _EXPECTED, f"no Total Time/Instances/Name header in its first {HEADER_LINES} lines")
    col, scale = _layout(cols)
    out = Profile(sources=[str(path)], formats=[FORMAT], timing="none")
    dropped = 0
    for n, row in enumerate(it, start=1):
        if not row:
            continue
        if len(row) != len(cols):
            raise FormatError(path, _EXPECTED, f"a row with {len(row)} fields, not {len(cols)} (truncated?)")
        calls, total = to_int(row[col["instances"]]), _ns(row, col, scale, "total")
        if calls is None or total is None:
            raise FormatError(path, _EXPECTED, f"data row {n} without Instances/Total Time numbers")
        times = [_ns(row, col, scale, f) for f in ("avg", "median", "min", "max", "std")]
        if calls < 0 or total < 0 or any(t is not None and t < 0 for t in times):
            dropped += 1
            continue
        avg, median, low, high, std = times
        out.stats.append(
            KernelStats(
                name=row[col["name"]],
                calls=calls,
                total_ns=total,
                avg_ns=avg,
                median_ns=median,
                min_ns=low,
                max_ns=high,
                std_ns=std,
                pct=to_float(row[col["time"]]) if "time" in col else None,
                source=str(path),
            )
        )
    numbers.count_dropped("kernel statistics", dropped, path)
    out.stats = _by_name(out.stats)
    return out


def _by_name(stats: list[KernelStats]) -> list[KernelStats]:
    """One row per kernel: ``cuda_gpu_kern_gb_sum`` has a row per (grid, block) of a kernel. Calls, times and
    shares add up, min and max combine; a median or deviation of the whole is not in the rows."""
    out: dict[str, KernelStats] = {}
    for s in stats:
        if (o := out.get(s.name)) is None:
            out[s.name] = s
            continue
        calls, total = o.calls + s.calls, o.total_ns + s.total_ns
        out[s.name] = KernelStats(
            name=s.name,
            calls=calls,
            total_ns=total,
            avg_ns=total / calls if calls else None,
            min_ns=min((v for v in (o.min_ns, s.min_ns) if v is not None), default=None),
            max_ns=max((v for v in (o.max_ns, s.max_ns) if v is not None), default=None),
            pct=None if o.pct is None or s.pct is None else o.pct + s.pct,
            source=s.source,
        )
    return list(out.values())


def _delimiter(path: Path) -> str:
    """Tab for ``--format tsv``, else comma (damage is reported by ``rows``)."""
    try:
        with open_text(path) as f:
            head = [f.readline() for _ in range(HEADER_LINES)]
    except (UnicodeDecodeError, OSError, EOFError, zlib.error):
        return ","
    return "\t" if any("\t" in h and header_columns(h) is not None for h in head) else ","


def _layout(cols: list[str]) -> tuple[dict[str, int], dict[str, float]]:
    """Column index per field (``instances``, ``name``, ``time`` for the %, and the time fields) and each time
    field's ns per unit."""
    col: dict[str, int] = {}
    scale: dict[str, float] = {}
    for i, c in enumerate(cols):
        unit = _UNIT.search(c)
        key = norm(_UNIT.sub("", c))
        if key in _FIELDS:
            col[_FIELDS[key]] = i
            scale[_FIELDS[key]] = _NS_PER[unit.group(1)] if unit else 1.0
        elif key in ("instances", "name"):
            col[key] = i
        elif key == "time":  # Time (%)
            col["time"] = i
    return col, scale


def _ns(row: list[str], col: dict[str, int], scale: dict[str, float], field: str) -> float | None:
    if field not in col:
        return None
    v = to_float(row[col[field]])
    return None if v is None else v * scale[field]
