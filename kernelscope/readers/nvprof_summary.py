"""nvprof's printed summary (``==PID== Profiling result:``): per-kernel statistics as nvprof printed them after the
program's own output, the form nvprof profiles travel in as logs, READMEs and course notes.

Every layout nvprof printed is read, alone or at the end of a log:
* CUDA 9 and later: a ``Type`` column, ``GPU activities:`` on the first GPU row, ``API calls:`` starting the host
  rows (``--print-gpu-summary`` prints only the first section);
* before CUDA 9: no ``Type`` column, the GPU rows under the header and the API rows after a
  ``==PID== API calls:`` line;
* ``--print-summary-per-gpu``: a table per ``Device "..."`` (the rows of each device are added together);
* ``--csv`` (quoted cells, a row of units under the header) and ``-u``/``--normalized-time-unit`` (a row of units,
  plain numbers), where cells otherwise carry their unit (``768ns``, ``50.389us``, ``1.2345ms``, ``6.16521s``).
Only GPU activities that are kernels are kept: copies and fills (``[CUDA memcpy HtoD]``, ``[CUDA memset]``) are not
kernel time, and the API, NVTX, metric and event results are host calls or counters. A log of several processes
(``--profile-child-processes``) has a summary each; their kernels are added together. nvprof's names are demangled in
its own style (``int=128``, ``bool=0``), or mangled with ``--demangling off``. No timeline: ``timing="none"``.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from kernelscope.errors import FormatError
from kernelscope.model import KernelStats, Profile, numbers
from kernelscope.readers._tables import by_name, lines

FORMAT = "nvprof-summary"
_EXPECTED = "nvprof's printed summary (==PID== Profiling result:, Time(%) Time Calls Avg Min Max Name)"
_MARK = re.compile(r"^==(?:\d+|=+)==\s?(.*)$")  # "==47590== ..." live, "======== ..." for nvprof -i
_COLUMNS = ["Time(%)", "Time", "Calls", "Avg", "Min", "Max", "Name"]
_TIME = re.compile(r"^([-+\d.eE]+)(ns|us|ms|s)?$")
_NS_PER = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
_GPU = "GPU activities"
_NONE = "No kernels were profiled."
_TYPE = re.compile(r"^\s*([A-Za-z][\w ()]*?):\s+(?=[-+\d.])")  # the Type cell, where a section starts
_ENDS = ("API calls:", "NVTX result:", "Metric result:", "Event result:", "Unified Memory", "OpenACC", "OpenMP")


def looks_like(head: bytes) -> bool:
    """``head`` holds a summary's start: the result line, then its header (or nvprof's line saying it saw no kernel)."""
    state = False
    for line in head.decode("utf-8", "replace").splitlines():
        m = _MARK.match(line)
        if m is not None:
            state = m.group(1).strip() == "Profiling result:" or (state and m.group(1).startswith("Device "))
        elif state and (_header(line) is not None or line.startswith(_NONE)):
            return True
    return False


def _header(line: str) -> tuple[bool, bool] | None:
    """(typed, csv) when ``line`` is a summary header (with or without the ``Type`` column, printed or CSV)."""
    is_csv = line.lstrip().startswith('"')
    cells = next(csv.reader([line])) if is_csv else line.split()
    cells = [c.strip() for c in cells]
    if cells == _COLUMNS:
        return False, is_csv
    if cells == ["Type", *_COLUMNS]:
        return True, is_csv
    return None


class _Row(NamedTuple):
    name: str
    calls: int
    total: float
    avg: float | None
    low: float | None
    high: float | None


def _cells(line: str, typed: bool, is_csv: bool) -> list[str] | None:
    """A data row as [type, %, time, calls, avg, min, max, name] (type "" on continuation rows), or None."""
    if is_csv:
        row = [c.strip() for c in next(csv.reader([line]), [])]
        if len(row) != 7 + typed:
            return None
        return row if typed else ["", *row]
    kind = ""
    if typed and (m := _TYPE.match(line)) is not None:  # " GPU activities:   68.90%  ..."
        kind, line = m.group(1), line[m.end() :]
    parts = line.split(None, 6)
    return [kind, *parts] if len(parts) == 7 else None


def _ns(cell: str, unit: str | None) -> float | None:
    m = _TIME.match(cell)
    if m is None:
        return None
    v, u = numbers.to_float(m.group(1)), m.group(2) or unit
    return None if v is None or u is None else v * _NS_PER[u]


def _units(line: str, is_csv: bool) -> list[str] | None:
    """The time units of a ``--csv`` or ``-u`` units row (``,%,ms,,us,us,ms,``) for Time, Avg, Min and Max; None
    when the line is a data row (cells carry their unit)."""
    cells = [c.strip() for c in (next(csv.reader([line]), []) if is_csv else line.split())]
    if not cells or not all(c in ("", "%", *_NS_PER) for c in cells):
        return None
    units = [c for c in cells if c in _NS_PER]
    return units if len(units) == 4 else None


def _rows(path: Path, summaries: list[str]) -> Iterator[_Row]:
    """Every GPU-activity row of every summary in the file, its times in ns; ``summaries`` gets a line per summary
    found (nvprof prints one with no rows, "No kernels were profiled.", for a run without kernels)."""
    on = False  # inside a summary, before its API, NVTX, metric or event results
    layout: tuple[bool, bool] | None = None
    units: list[str] | None = None
    kind = _GPU
    first = False  # the next line after the header may be a units row
    for raw in lines(path, _EXPECTED):
        line = raw.rstrip("\r\n")
        m = _MARK.match(line)
        text = m.group(1).strip() if m is not None else line.strip()
        if text == "Profiling result:" or (text.startswith('Device "') and (m is not None or on)):
            on, layout, units, kind = True, None, None, _GPU
            summaries.append(text)
            continue
        if m is not None:
            on = on and not text.startswith(_ENDS)
            continue
        if not on or not line.strip():
            continue
        if layout is None:
            layout = _header(line)
            first = layout is not None
            continue
        if first:
            first, units = False, _units(line, layout[1])
            if units is not None:
                continue
        cells = _cells(line, *layout)
        time, avg, low, high = units or (None, None, None, None)
        calls, total = (numbers.to_int(cells[3]), _ns(cells[2], time)) if cells is not None else (None, None)
        if cells is None or calls is None or total is None:
            on = False  # the table is over: what follows is the log's (a note's prose, a fence, a prompt)
            continue
        kind = cells[0] or kind
        if kind == _GPU:
            yield _Row(cells[7], calls, total, _ns(cells[4], avg), _ns(cells[5], low), _ns(cells[6], high))


def read(path: Path, *, rank: int | None = None) -> Profile:
    """Read the kernels' statistics of every summary in the file."""
    del rank  # statistics are already aggregated over the run
    out: list[KernelStats] = []
    dropped = 0
    summaries: list[str] = []
    for r in _rows(path, summaries):
        if r.name.startswith("[CUDA "):
            continue
        if r.calls < 0 or r.total < 0 or any(t is not None and t < 0 for t in (r.avg, r.low, r.high)):
            dropped += 1
            continue
        out.append(
            KernelStats(
                name=r.name,
                calls=r.calls,
                total_ns=r.total,
                avg_ns=r.avg,
                min_ns=r.low,
                max_ns=r.high,
                source=str(path),
            )
        )
    if not summaries:
        raise FormatError(path, _EXPECTED, "no 'Profiling result:' line (not nvprof's output, or the file is cut)")
    numbers.count_dropped("kernel statistics", dropped, path)
    return Profile(sources=[str(path)], formats=[FORMAT], timing="none", stats=by_name(out))
