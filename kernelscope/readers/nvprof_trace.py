"""nvprof's GPU trace as CSV (``nvprof --print-gpu-trace --csv``, often with ``--log-file``): a row per kernel, copy and
fill, what people keep of an nvprof run when they want its timeline in a spreadsheet.

The header names the columns (``Start``, ``Duration``, ``Grid X`` ..., ``Registers Per Thread``, ``Static SMem``,
``Dynamic SMem``, ``Size``, ``Device``, ``Context``, ``Stream``, ``Name``, ``Correlation_ID``; older nvprof has fewer),
and the row under it their units (``s``/``ms``/``us``/``ns``, ``B``/``KB``/``MB``, with MB = 2^20 bytes). Rows are
read by column name. ``Start`` counts from the process's first GPU activity (nvprof's zero), a log of several
processes has a header each. Kernel rows have a grid; copies and fills are named ``[CUDA memcpy HtoD]``,
``[CUDA memset]``; API rows of ``--print-api-trace`` (no grid, no device) are host calls and not read. ``Device``
is ``<GPU name> (<CUDA ordinal>)``. Names are nvprof's: demangled in its own style, or mangled with
``--demangling off``. The header may follow the program's own output or, in a file re-saved by a spreadsheet, rows
it spoiled (``Err:510``); lines that are not rows of the table are skipped. The printed (non-CSV) trace and the
trace of a ``--metrics``/``--events`` run (counters, no times) are not read.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from kernelscope.errors import FormatError
from kernelscope.model import DeviceInfo, Dim3, KernelLaunch, MemoryOp, Profile, numbers
from kernelscope.model.records import items_from_blocks
from kernelscope.readers._tables import lines

FORMAT = "nvprof-trace"
_EXPECTED = "nvprof's GPU trace as CSV (nvprof --print-gpu-trace --csv: Start, Duration, ..., Name)"
_TIME_NS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
_SIZE_B = {"B": 1.0, "KB": 1024.0, "MB": 1024.0**2, "GB": 1024.0**3}
_DEVICE = re.compile(r"^(?P<name>.*?)\s*\((?P<index>\d+)\)$")


def _header(line: str) -> list[str] | None:
    """The columns when ``line`` is the trace's header (quoted by nvprof, or bare after a spreadsheet)."""
    if "Start" not in line or "Duration" not in line:
        return None
    cols = [c.strip() for c in next(csv.reader([line]), [])]
    return cols if {"Start", "Duration", "Name"} <= set(cols) and {"Device", "Stream"} & set(cols) else None


def looks_like(head: bytes) -> bool:
    """``head`` holds the trace's header."""
    return any(_header(line) is not None for line in head.decode("utf-8", "replace").splitlines())


class _Table:
    """One trace's columns (by name) and units."""

    def __init__(self, cols: list[str]) -> None:
        self.index = {c: i for i, c in enumerate(cols)}
        self.units: list[str] = []

    def cell(self, row: list[str], name: str) -> str:
        i = self.index.get(name)
        return row[i] if i is not None else ""

    def value(self, row: list[str], name: str, per: dict[str, float]) -> float | None:
        """The cell times its unit's scale (ns or bytes); None when empty, not a number or in an unknown unit."""
        i = self.index.get(name)
        v = numbers.to_float(row[i]) if i is not None and row[i] else None
        unit = self.units[i] if i is not None and i < len(self.units) else ""
        return None if v is None or unit not in per else v * per[unit]


def _record(t: _Table, row: list[str], src: str, rank: int | None) -> KernelLaunch | MemoryOp | None:
    """The kernel, copy or fill a row describes; None for rows that are neither (API calls). Raises ValueError for
    impossible times."""
    start, duration = t.value(row, "Start", _TIME_NS), t.value(row, "Duration", _TIME_NS)
    name = t.cell(row, "Name")
    if start is None or duration is None or not name:
        return None
    if start < 0 or duration < 0 or not numbers.is_int64(round(start + duration)):
        raise ValueError("impossible times")
    dev = _DEVICE.match(t.cell(row, "Device"))
    device = int(dev["index"]) if dev is not None else None
    stream, corr = numbers.to_int(t.cell(row, "Stream")), numbers.to_int(t.cell(row, "Correlation_ID"))
    if name.startswith(("[CUDA memcpy", "[CUDA memset")):
        size = t.value(row, "Size", _SIZE_B)
        return MemoryOp(
            name=name,
            kind="memset" if name.startswith("[CUDA memset") else "memcpy",
            start_ns=round(start),
            duration_ns=round(duration),
            device=device,
            rank=rank,
            stream=stream,
            correlation_id=corr,
            bytes=round(size) if size is not None else None,
            source=src,
            source_format=FORMAT,
        )
    grid = [numbers.to_int(t.cell(row, f"Grid {a}")) for a in "XYZ"]
    block = [numbers.to_int(t.cell(row, f"Block {a}")) for a in "XYZ"]
    if grid[0] is None or grid[1] is None or grid[2] is None:
        return None  # an API call of --print-api-trace
    g = Dim3(grid[0], grid[1], grid[2])
    b = Dim3(block[0], block[1], block[2]) if block[0] and block[1] and block[2] else None
    shared = [v for c in ("Static SMem", "Dynamic SMem") if (v := t.value(row, c, _SIZE_B)) is not None]
    return KernelLaunch(
        name=name,
        mangled=name if name.startswith("_Z") else None,
        start_ns=round(start),
        duration_ns=round(duration),
        vendor="nvidia",
        device=device,
        rank=rank,
        stream=stream,
        correlation_id=corr,
        grid_blocks=g,
        grid_items=items_from_blocks(g, b) if b is not None else None,
        block=b,
        registers=numbers.to_int(t.cell(row, "Registers Per Thread")),
        lds_bytes=round(sum(shared)) if shared else None,
        source=src,
        source_format=FORMAT,
    )


def read(path: Path, *, rank: int | None = None) -> Profile:
    """Read the kernels, copies and fills of every trace in the file."""
    launches: list[KernelLaunch] = []
    memory: list[MemoryOp] = []
    devices: dict[int, str] = {}
    table: _Table | None = None
    dropped = 0
    src = str(path)
    for raw in lines(path, _EXPECTED):
        line = raw.rstrip("\r\n")
        if (cols := _header(line)) is not None:
            table = _Table(cols)
            continue
        if table is None or not line.strip():
            continue
        row = [c.strip() for c in next(csv.reader([line]), [])]
        if not table.units:  # the row of units under the header
            table.units = row
            continue
        if len(row) != len(table.index):
            continue  # not a row of this table: a spoiled line, the log's own text
        try:
            rec = _record(table, row, src, rank)
        except ValueError:
            dropped += 1
            continue
        if isinstance(rec, MemoryOp):
            memory.append(rec)
        elif rec is not None:
            launches.append(rec)
        if rec is not None and (dev := _DEVICE.match(table.cell(row, "Device"))) is not None:
            devices.setdefault(int(dev["index"]), dev["name"])
    if table is None:
        raise FormatError(path, _EXPECTED, "no header with Start, Duration and Name columns")
    numbers.count_dropped("trace rows", dropped, path)
    return Profile(
        launches=launches,
        memory_ops=memory,
        devices=[DeviceInfo(index=i, vendor="nvidia", name=n, rank=rank) for i, n in sorted(devices.items())],
        sources=[src],
        formats=[FORMAT],
    )
