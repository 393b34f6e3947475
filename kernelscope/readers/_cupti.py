"""What the forms of CUPTI activity records share: Nsight Systems' export (``nsys_sqlite``) and nvprof's database
(``nvprof``) keep CUPTI's records one row each in ``CUPTI_ACTIVITY_KIND_*`` tables, with CUPTI's field names and
meanings; nvprof's and nsys stats' GPU traces (``nvprof_trace``, ``nsys_gpu_trace``) print the same fields a row per
record. How each stores names, units and tables its module says.

CUPTI's meanings, all here:
* ``gridX..Z`` count blocks (CUDA semantics); ``grid_items`` = blocks x block. Shared memory is
  ``staticSharedMemory + dynamicSharedMemory`` per block; ``localMemoryPerThread`` is scratch per thread.
* ``copyKind`` is a ``CUpti_ActivityMemcpyKind``; times are integer nanoseconds.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelscope.errors import FormatError
from kernelscope.model import DeviceInfo, Dim3, KernelLaunch, MemoryOp, Profile, numbers
from kernelscope.model.records import items_from_blocks
from kernelscope.readers._io import SQL_ERRORS, connect_sqlite, sql_rows, sqlite_names

KERNEL_COLS = (
    *("deviceId", "streamId", "correlationId", "registersPerThread", "localMemoryPerThread"),
    *("staticSharedMemory", "dynamicSharedMemory", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ"),
)
# CUpti_ActivityMemcpyKind as each tool prints it in a copy's name
COPY_KINDS_NSYS = {
    1: "Host-to-Device",
    2: "Device-to-Host",
    8: "Device-to-Device",
    9: "Host-to-Host",
    10: "Peer-to-Peer",
}
_NVPROF_KINDS = ("", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP")
COPY_KINDS_NVPROF = dict(enumerate(_NVPROF_KINDS))

Row = dict[str, Any]
_DEVICE_CELL = re.compile(r"^(?P<name>.*?)\s*\((?P<index>\d+)\)$")  # a trace's "<GPU name> (<CUDA ordinal>)"
Described = tuple[str, str | None, int | None]  # a kernel's name, mangled name and launch time
# columns that hold integers (times, ids, sizes): read through numbers.to_int, whatever SQLite stored there
_INTS = frozenset(
    {*KERNEL_COLS, "start", "end", "globalPid", "globalTid", "corr", "bytes", "copyKind", "id", "smCount"}
    | {"computeMajor", "computeMinor", "numMultiprocessors", "computeCapabilityMajor", "computeCapabilityMinor"}
)


class Db:
    """A read-only connection that knows which tables and columns exist (tables come and go between versions)."""

    def __init__(self, path: Path, expected: str) -> None:
        self.path = path
        try:
            self.con = connect_sqlite(path)
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise FormatError(path, expected, f"a file SQLite cannot open ({exc})") from None
        try:
            self.tables = sqlite_names(self.con)
        except SQL_ERRORS as exc:
            self.con.close()
            raise FormatError(path, expected, f"a file SQLite cannot open ({exc})") from None
        self._cols: dict[str, set[str]] = {}

    def cols(self, table: str) -> set[str]:
        if table not in self._cols:
            self._cols[table] = {r[1] for r in self.con.execute(f'PRAGMA table_info("{table}")')}
        return self._cols[table]

    def col(self, table: str, alias: str, name: str) -> str:
        """``alias."name"`` when the column exists, else ``NULL`` under that name."""
        return f'{alias}."{name}"' if name in self.cols(table) else f'NULL AS "{name}"'

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> Iterator[Row]:
        return sql_rows(self.con.execute(sql, params), _INTS)


class _Dims:
    """One ``Dim3`` per distinct grid or block: a profile holds millions of launches and a few shapes."""

    def __init__(self) -> None:
        self._seen: dict[tuple[int, int, int], Dim3] = {}

    def __call__(self, x: int | None, y: int | None, z: int | None) -> Dim3 | None:
        if x is None or y is None or z is None:
            return None
        d = self._seen.get((x, y, z))
        if d is None:
            d = self._seen[(x, y, z)] = Dim3(x, y, z)
        return d


def _launch(
    r: Row, dims: _Dims, *, name: str, mangled: str | None, launch_ns: int | None, fmt: str, src: str, rank: int | None
) -> KernelLaunch | None:
    """The launch a kernel record describes; None when its times are impossible."""
    duration = numbers.span(r["start"], r["end"])
    if duration is None or r["start"] is None or r["start"] < 0:
        return None
    grid, block = dims(r["gridX"], r["gridY"], r["gridZ"]), dims(r["blockX"], r["blockY"], r["blockZ"])
    shared = [v for v in (r["staticSharedMemory"], r["dynamicSharedMemory"]) if v is not None]
    return KernelLaunch(
        name=name,
        mangled=mangled,
        start_ns=r["start"],
        duration_ns=duration,
        vendor="nvidia",
        device=r["deviceId"],
        rank=rank,
        stream=r["streamId"],
        correlation_id=r["correlationId"],
        launch_ns=launch_ns,
        grid_blocks=grid,
        grid_items=items_from_blocks(grid, block) if grid and block else None,
        block=block,
        registers=r["registersPerThread"],
        lds_bytes=sum(shared) if shared else None,
        scratch_bytes=r["localMemoryPerThread"],
        source=src,
        source_format=fmt,
    )


def kernel_launches(
    rows: Iterable[Row], describe: Callable[[Row], Described], *, fmt: str, src: str, rank: int | None
) -> list[KernelLaunch]:
    """The launches kernel records describe, ``describe(row)`` giving each one's name, mangled name and launch time (the
    schema's own); records with impossible times are dropped and counted."""
    dims = _Dims()
    out: list[KernelLaunch] = []
    dropped = 0
    for r in rows:
        name, mangled, launch_ns = describe(r)
        launch = _launch(r, dims, name=name, mangled=mangled, launch_ns=launch_ns, fmt=fmt, src=src, rank=rank)
        if launch is None:
            dropped += 1
        else:
            out.append(launch)
    numbers.count_dropped("kernel launches", dropped, src)
    return out


@dataclass(frozen=True)
class TraceRow:
    """One row of a tool's printed GPU trace (nvprof's, nsys stats'), its cells already in ns and bytes."""

    name: str
    start: float
    duration: float
    device: str  # the Device cell: "<GPU name> (<CUDA ordinal>)", the ordinal lost where the name fills the column
    stream: int | None
    correlation_id: int | None
    grid: tuple[int | None, int | None, int | None]
    block: tuple[int | None, int | None, int | None]
    registers: int | None
    shared: tuple[float | None, float | None]  # static, dynamic bytes per block
    size: float | None  # a copy's or fill's bytes


def _trace_device(cell: str) -> tuple[int, str] | None:
    """(CUDA ordinal, GPU name) of a trace's Device cell, or None when the ordinal is not printed."""
    m = _DEVICE_CELL.match(cell)
    return (int(m["index"]), m["name"]) if m is not None else None


def trace_profile(rows: Iterable[TraceRow], *, fmt: str, src: str, rank: int | None) -> Profile:
    """The kernels, copies and fills of a tool's GPU trace and the GPUs it names; rows with impossible times are
    dropped and counted, rows that are neither (API calls, Unified Memory events: no grid) skipped."""
    launches: list[KernelLaunch] = []
    memory: list[MemoryOp] = []
    devices: dict[int, str] = {}
    dropped = 0
    for row in rows:
        if row.start < 0 or row.duration < 0 or not numbers.is_int64(round(row.start + row.duration)):
            dropped += 1
            continue
        dev = _trace_device(row.device)
        rec = _trace_record(row, dev[0] if dev is not None else None, fmt=fmt, src=src, rank=rank)
        if rec is None:
            continue
        if isinstance(rec, MemoryOp):
            memory.append(rec)
        else:
            launches.append(rec)
        if dev is not None:
            devices.setdefault(*dev)
    numbers.count_dropped("trace rows", dropped, src)
    return Profile(
        launches=launches,
        memory_ops=memory,
        devices=[DeviceInfo(index=i, vendor="nvidia", name=n, rank=rank) for i, n in sorted(devices.items())],
        sources=[src],
        formats=[fmt],
    )


def _trace_record(
    row: TraceRow, device: int | None, *, fmt: str, src: str, rank: int | None
) -> KernelLaunch | MemoryOp | None:
    if row.name.startswith(("[CUDA memcpy", "[CUDA memset")):
        return MemoryOp(
            name=row.name,
            kind="memset" if row.name.startswith("[CUDA memset") else "memcpy",
            start_ns=round(row.start),
            duration_ns=round(row.duration),
            device=device,
            rank=rank,
            stream=row.stream,
            correlation_id=row.correlation_id,
            bytes=round(row.size) if row.size is not None else None,
            source=src,
            source_format=fmt,
        )
    gx, gy, gz = row.grid
    if gx is None or gy is None or gz is None:
        return None
    bx, by, bz = row.block
    grid = Dim3(gx, gy, gz)
    block = Dim3(bx, by, bz) if bx and by and bz else None
    shared = [v for v in row.shared if v is not None]
    return KernelLaunch(
        name=row.name,
        mangled=row.name if row.name.startswith("_Z") else None,
        start_ns=round(row.start),
        duration_ns=round(row.duration),
        vendor="nvidia",
        device=device,
        rank=rank,
        stream=row.stream,
        correlation_id=row.correlation_id,
        grid_blocks=grid,
        grid_items=items_from_blocks(grid, block) if block is not None else None,
        block=block,
        registers=row.registers,
        lds_bytes=round(sum(shared)) if shared else None,
        source=src,
        source_format=fmt,
    )


def memory_ops(
    db: Db,
    copy_kinds: dict[int, str],
    *,
    fmt: str,
    src: str,
    rank: int | None,
    label: Callable[[Db], tuple[str, str]] | None = None,
) -> list[MemoryOp]:
    """Copies and fills from ``CUPTI_ACTIVITY_KIND_MEMCPY`` / ``MEMSET``; ``label(db)``, where the file names copy
    kinds itself, gives the select entry (``... AS label``) and join of that name."""
    out: list[MemoryOp] = []
    dropped = 0
    for table, kind in (("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy"), ("CUPTI_ACTIVITY_KIND_MEMSET", "memset")):
        if table not in db.tables:
            continue
        cols = ", ".join(db.col(table, "m", c) for c in ("deviceId", "streamId", "correlationId", "bytes", "copyKind"))
        labelled, join = "NULL AS label", ""
        if label is not None and kind == "memcpy" and "copyKind" in db.cols(table):
            labelled, join = label(db)
        for r in db.rows(f'SELECT m.start, m."end", {cols}, {labelled} FROM {table} m {join} ORDER BY m.start'):
            duration = numbers.span(r["start"], r["end"])
            if duration is None or r["start"] is None or r["start"] < 0:
                dropped += 1
                continue
            what = r["label"] or copy_kinds.get(r["copyKind"], "")
            out.append(
                MemoryOp(
                    name=f"[CUDA memcpy {what}]" if kind == "memcpy" and what else f"[CUDA {kind}]",
                    kind=kind,  # type: ignore[arg-type]
                    start_ns=r["start"],
                    duration_ns=duration,
                    device=r["deviceId"],
                    rank=rank,
                    stream=r["streamId"],
                    correlation_id=r["correlationId"],
                    bytes=r["bytes"],
                    source=src,
                    source_format=fmt,
                )
            )
    numbers.count_dropped("memory operations", dropped, src)
    return out
