"""nvprof's GPU trace (``nvprof --print-gpu-trace``): a row per kernel, copy and fill — printed, as tutorials and
logs show it, or as CSV (``--csv``, often with ``--log-file``), as people keep it for a spreadsheet.

The CSV's header names the columns (``Start``, ``Duration``, ``Grid X`` ..., ``Registers Per Thread``, ``Static SMem``,
``Dynamic SMem``, ``Size``, ``Device``, ``Context``, ``Stream``, ``Name``, ``Correlation_ID``; older nvprof has fewer)
and the row under it their units (``s``/``ms``/``us``/``ns``, ``B``/``KB``/``MB``, with MB = 2^20 bytes). The printed
trace right-aligns each cell under its header label (``Start``, ``Duration``, ``Grid Size`` as ``(2 1 1)``, ``Regs*``,
``SSMem*``, ...), every number with its unit, the name last with the correlation id after it (``name [4322]``); its
``Device`` is the GPU's name cut to the column, so the CUDA ordinal is known only where it fits (``Tesla T4 (0)``),
and times have five or six significant digits. Rows are read by column name in both. ``Start`` counts from the
process's first GPU activity (nvprof's zero); a log of several processes has a header each. Kernel rows have a grid;
copies and fills are named ``[CUDA memcpy HtoD]``, ``[CUDA memset]``; API rows of ``--print-api-trace``, Unified
Memory events and the legend after the table are not read. Names are nvprof's: demangled in its own style, or
mangled with ``--demangling off``. The header may follow the program's own output or, in a CSV re-saved by a
spreadsheet, rows it spoiled (``Err:510``). The trace of a ``--metrics``/``--events`` run (counters, no times) is
not read.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path

from kernelscope.errors import FormatError
from kernelscope.model import Profile, numbers
from kernelscope.readers._cupti import TraceRow, trace_profile
from kernelscope.readers._tables import lines

FORMAT = "nvprof-trace"
_EXPECTED = "nvprof's GPU trace (nvprof --print-gpu-trace, printed or --csv: Start, Duration, ..., Name)"
_TIME_NS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
_SIZE_B = {"B": 1.0, "KB": 1024.0, "MB": 1024.0**2, "GB": 1024.0**3}


# the printed trace's header labels, each naming the CSV column it prints (None: read otherwise or not at all)
_PRINTED = {
    "Start": "Start",
    "Duration": "Duration",
    "Grid Size": None,
    "Block Size": None,
    "Regs*": "Registers Per Thread",
    "SSMem*": "Static SMem",
    "DSMem*": "Dynamic SMem",
    "Size": "Size",
    "Throughput": None,
    "SrcMemType": None,
    "DstMemType": None,
    "Device": "Device",
    "Context": "Context",
    "Stream": "Stream",
    "Unified Memory": None,
    "Virtual Address": None,
}
_WITH_UNIT = re.compile(r"^(?P<v>[-+\d.]+)(?P<unit>[A-Za-z]+)$")
_DIM = re.compile(r"^\((\d+) (\d+) (\d+)\)$")
_CORR = re.compile(r"^(?P<name>.*?) \[(?P<corr>\d+)\]$")

Row = tuple[dict[str, str], dict[str, str]]  # a row's cells and their units, by CSV column name


def _csv_header(line: str) -> list[str] | None:
    """The columns when ``line`` is the CSV trace's header (quoted by nvprof, or bare after a spreadsheet)."""
    if "Start" not in line or "Duration" not in line or "," not in line:
        return None
    cols = [c.strip() for c in next(csv.reader([line]), [])]
    return cols if {"Start", "Duration", "Name"} <= set(cols) and {"Device", "Stream"} & set(cols) else None


def _printed_header(line: str) -> dict[str, tuple[int, int]] | None:
    """The span of each label when ``line`` is the printed trace's header (labels right-aligned over their cells)."""
    words = line.split()
    if words[:2] != ["Start", "Duration"] or words[-1:] != ["Name"]:
        return None
    spans: dict[str, tuple[int, int]] = {}
    at = 0
    for label in (*_PRINTED, "Name"):
        i = line.find(label, at)
        if i >= 0 and (i == 0 or line[i - 1] == " "):
            spans[label] = (i, i + len(label))
            at = i + len(label)
    return spans if "Grid Size" in spans and "Stream" in spans else None


def looks_like(head: bytes) -> bool:
    """``head`` holds the trace's header, CSV or printed."""
    text = head.decode("utf-8", "replace").splitlines()
    return any(_csv_header(line) is not None or _printed_header(line) is not None for line in text)


def _csv_row(cols: list[str], units: list[str], line: str) -> Row | None:
    row = [c.strip() for c in next(csv.reader([line]), [])]
    if len(row) != len(cols):
        return None  # not a row of this table: a spoiled line, the log's own text
    return dict(zip(cols, row, strict=True)), dict(zip(cols, units, strict=False))


def _printed_row(spans: dict[str, tuple[int, int]], line: str) -> Row | None:
    """A printed row as CSV cells: each cell from the end of the label before it to the end of its own."""
    cells: dict[str, str] = {}
    units: dict[str, str] = {}
    prev = 0
    for label, (_, end) in spans.items():
        if label == "Name":
            break
        text = line[prev:end].strip()
        prev = end
        if label in ("Grid Size", "Block Size") and (d := _DIM.match(text)) is not None:
            for axis, v in zip("XYZ", d.groups(), strict=True):
                cells[f"{label.split()[0]} {axis}"] = v
        elif (col := _PRINTED[label]) is not None:
            m = _WITH_UNIT.match(text) if col in ("Start", "Duration", "Static SMem", "Dynamic SMem", "Size") else None
            cells[col], units[col] = (m["v"], m["unit"]) if m else (text, "")
    if "Name" not in spans or not units.get("Start"):
        return None  # the legend after the table, the log's own text
    name = line[spans["Name"][0] :].strip()
    if (c := _CORR.match(name)) is not None:
        name, cells["Correlation_ID"] = c["name"], c["corr"]
    cells["Name"] = name
    return cells, units


def _value(row: Row, name: str, per: dict[str, float]) -> float | None:
    """The cell times its unit's scale (ns or bytes); None when empty, not a number or in an unknown unit."""
    cells, units = row
    v = numbers.to_float(cells[name]) if cells.get(name) else None
    unit = units.get(name, "")
    return None if v is None or unit not in per else v * per[unit]


def _traced(row: Row) -> TraceRow | None:
    """A row's cells as ``_cupti``'s trace row; None for rows without a time or a name."""
    cells = row[0]
    start, duration = _value(row, "Start", _TIME_NS), _value(row, "Duration", _TIME_NS)
    name = cells.get("Name", "")
    if start is None or duration is None or not name:
        return None

    def whole(col: str) -> int | None:
        return numbers.to_int(cells.get(col, ""))

    return TraceRow(
        name=name,
        start=start,
        duration=duration,
        device=cells.get("Device", ""),
        stream=whole("Stream"),
        correlation_id=whole("Correlation_ID"),
        grid=(whole("Grid X"), whole("Grid Y"), whole("Grid Z")),
        block=(whole("Block X"), whole("Block Y"), whole("Block Z")),
        registers=whole("Registers Per Thread"),
        shared=(_value(row, "Static SMem", _SIZE_B), _value(row, "Dynamic SMem", _SIZE_B)),
        size=_value(row, "Size", _SIZE_B),
    )


def _rows(path: Path, headers: list[str]) -> Iterator[Row]:
    """Every row of every trace in the file, CSV or printed, as cells by CSV column name; ``headers`` gets a line per
    header found (a trace without rows has one)."""
    cols: list[str] | None = None
    units: list[str] | None = None
    spans: dict[str, tuple[int, int]] | None = None
    for raw in lines(path, _EXPECTED):
        line = raw.rstrip("\r\n")
        if (found := _csv_header(line)) is not None:
            cols, units, spans = found, None, None
            headers.append(line)
            continue
        if (printed := _printed_header(line)) is not None:
            cols, spans = None, printed
            headers.append(line)
            continue
        if not line.strip():
            continue
        row: Row | None = None
        if cols is not None and units is None:  # the row of units under the CSV header
            units = [c.strip() for c in next(csv.reader([line]), [])]
        elif cols is not None and units is not None:
            row = _csv_row(cols, units, line)
        elif spans is not None:
            row = _printed_row(spans, line)
        if row is not None:
            yield row


def read(path: Path, *, rank: int | None = None) -> Profile:
    """Read the kernels, copies and fills of every trace in the file."""
    headers: list[str] = []
    rows = (t for row in _rows(path, headers) if (t := _traced(row)) is not None)
    profile = trace_profile(rows, fmt=FORMAT, src=str(path), rank=rank)
    if not headers:
        raise FormatError(path, _EXPECTED, "no header with Start, Duration and Name columns")
    return profile
