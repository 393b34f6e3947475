"""Nsight Systems ``nsys stats --report cuda_gpu_kern_sum`` output: per-kernel statistics nsys computed itself.

The report nsys users share most (``--format csv`` or ``tsv``, to a file or captured from stdout with its
``Processing [...]`` line before the header): Time (%), Total Time, Instances, Avg, Med, Min, Max, StdDev,
Name, each time column in the unit ``--timeunit`` chose (``(ns)`` by default, ``(us)``, ``(ms)``, ``(s)``);
nsys before 2022 (``gpukernsum``) printed Average, Minimum and Maximum in ns and no median. The ``:base`` and
``:mangled`` variants change only the names; ``cuda_gpu_kern_gb_sum`` (a row per grid and block of a kernel) reads
as one row per kernel. Like rocprofv3's ``kernel_stats.csv`` there is no timeline: the
profile has ``timing="none"`` and only ``stats``.

The human forms are read too, since they are what gets shared as ``.txt`` files and logs: the default
``column`` format (a dashed rule under the header, thousands separators) and ``--format table`` (``|`` cells
between ``+---+`` borders), alone, among the other default reports of ``nsys stats``, at the end of an
``nsys profile --stats=true`` log, or as nsys before 2022 printed them ("CUDA Kernel Statistics:", Average/
Minimum/Maximum). Those forms cut names longer than 100 characters to 99 and ``…``; the result says so, and
rows left with the same cut name are added together.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from kernelscope.errors import FormatError
from kernelscope.model import KernelStats, Profile, numbers
from kernelscope.readers._csv import norm, rows, to_float, to_int
from kernelscope.readers._tables import by_name, cut_note, lines, say

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
_KERNEL_COLUMNS = {"totaltime", "instances", "name"}  # what makes a header this report's
HEADER_LINES = 8  # nsys prints a "Processing [...]" line (and a blank one) before the CSV when writing to stdout


def header_columns(line: str) -> list[str] | None:
    """The columns of ``line`` when it is this report's header (tab- or comma-separated), else None."""
    sep = "\t" if "\t" in line else ","
    cols = [c.strip().strip('"') for c in line.split(sep)]
    return cols if set(_names(cols)) >= _KERNEL_COLUMNS else None


def _names(cols: list[str]) -> list[str]:
    """The columns' names without their unit, normalized (``Total Time (ns)`` -> ``totaltime``)."""
    return [norm(_UNIT.sub("", c)) for c in cols]


def read(path: Path, *, rank: int | None = None) -> Profile:
    del rank  # statistics are already aggregated over the report
    out = Profile(sources=[str(path)], formats=[FORMAT], timing="none")
    head = _head(path)
    if not any(header_columns(line) for line in head):
        out.stats = _read_human(path)
        return out
    it = rows(path, _EXPECTED, delimiter="\t" if any("\t" in h and header_columns(h) for h in head) else ",")
    cols = None
    while cols is None and (first := next(it, None)) is not None:
        cols = header_columns(",".join(first))
    if cols is None:  # the head said otherwise: the file changed while it was read
        raise FormatError(path, _EXPECTED, "its header is gone")
    out.stats = by_name(_stats(path, cols, it))
    return out


def _stats(path: Path, cols: list[str], body: Iterable[list[str]]) -> list[KernelStats]:
    """The rows under one header; rows with impossible (negative) numbers dropped and counted."""
    col, scale = _layout(cols)
    out: list[KernelStats] = []
    dropped = 0
    for n, row in enumerate(body, start=1):
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
        out.append(
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
    return out


def _head(path: Path) -> list[str]:
    """The first lines, where a CSV/TSV report has its header."""
    return list(itertools.islice(lines(path, _EXPECTED), HEADER_LINES))


def _layout(cols: list[str]) -> tuple[dict[str, int], dict[str, float]]:
    """Column index per field (``instances``, ``name``, ``time`` for the %, and the time fields) and each time
    field's ns per unit."""
    col: dict[str, int] = {}
    scale: dict[str, float] = {}
    for i, (c, key) in enumerate(zip(cols, _names(cols), strict=True)):
        unit = _UNIT.search(c)
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


# --- the human forms -------------------------------------------------------------------------------------
_RULE = re.compile(r"^\s*-+(?: +-+)*\s*$")  # column format: a dashed run under each header
_BORDER = re.compile(r"^\s*\+-[-+]*\s*$")  # table format: +----+----+
_CUT = "…"  # nsys ends a name it cut to 100 characters with this
_WIDE = {"gridxyz", "blockxyz"}  # columns printed as three numbers each


def looks_human(head: bytes) -> bool:
    """``head`` holds a kernel summary in nsys's column or table form."""
    return any(True for _ in _human_tables(head.decode("utf-8", "replace").splitlines()))


def _column_cells(header: str, rule: str) -> list[str]:
    """The header's cells under the rule's dashed runs (the last runs to the end of the line)."""
    spans = [m.span() for m in re.finditer(r"-+", rule)]
    return [header[a : (b if i + 1 < len(spans) else None)].strip() for i, (a, b) in enumerate(spans)]


def _bar_cells(line: str, width: int) -> list[str]:
    """A table row's cells; a name holding ``|`` (``operator|``) keeps it."""
    cells = line.strip().removeprefix("|").removesuffix("|").split("|")
    return [c.strip() for c in [*cells[: width - 1], "|".join(cells[width - 1 :])]]


def _token_cells(line: str, cols: list[str]) -> list[str]:
    """A column-format row by its tokens: one per number (three for a grid or block), the rest of the line is
    the name (nsys aligns the columns, but the tokens do not depend on it)."""
    wants = [3 if norm(c) in _WIDE else 1 for c in cols[:-1]]
    tokens = list(re.finditer(r"\S+", line))
    if len(tokens) <= sum(wants):  # a cut row: too few cells, which the row check reports
        return [t.group() for t in tokens]
    cells, i = [], 0
    for n in wants:
        cells.append(" ".join(t.group() for t in tokens[i : i + n]))
        i += n
    return [*cells, line[tokens[i].start() :].strip()]


def _kernel_header(cols: list[str]) -> bool:
    """The kernel summary's header in a human form, where the name is the last column."""
    names = _names(cols)
    return set(names) >= _KERNEL_COLUMNS and names[-1] == "name"


def _human_tables(lines: Iterable[str]) -> Iterator[tuple[list[str], list[list[str]]]]:
    """Each kernel summary in ``lines`` as (header cells, row cells), in either human form."""
    prev2 = prev = ""
    cols: list[str] | None = None
    split: Callable[[str], list[str]] = str.split
    body: list[list[str]] = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if cols is not None:
            if line.strip() and not _BORDER.match(line):
                body.append(split(line))
                prev2, prev = prev, line
                continue
            yield cols, body
            cols, body = None, []
        if _RULE.match(line) and prev.strip() and _kernel_header(c := _column_cells(prev, line)):
            cols, split = c, functools.partial(_token_cells, cols=c)
        elif _BORDER.match(line) and _BORDER.match(prev2) and prev.lstrip().startswith("|"):
            c = _bar_cells(prev, prev.count("|") - 1)
            if _kernel_header(c):
                cols, split = c, functools.partial(_bar_cells, width=len(c))
        prev2, prev = prev, line
    if cols is not None:
        yield cols, body


def _read_human(path: Path) -> list[KernelStats]:
    tables = list(_human_tables(lines(path, _EXPECTED)))
    if not tables:
        raise FormatError(
            path, _EXPECTED, f"no CSV/TSV header in its first {HEADER_LINES} lines, nor a table in nsys's human forms"
        )
    # the grid/block report repeats the kernel report's time: read it only where the kernel report is absent
    plain = [t for t in tables if not _WIDE & {norm(c) for c in t[0]}]
    stats = [s for cols, body in (plain or tables) for s in _stats(path, cols, body)]
    merged = by_name(stats)
    notes = []
    if len(plain) > 1:
        notes.append(f"{len(plain)} kernel summaries (one per input nsys processed) added together")
    # the grid/block report has a row per launch configuration: its rows share names whether or not nsys cut them
    if note := cut_note("nsys", _CUT, 100, stats if len(plain) == 1 else merged, merged):
        notes.append(note + " (`--format csv` keeps them whole)")
    say(path, notes)
    return merged
