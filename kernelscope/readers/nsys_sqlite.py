"""Nsight Systems SQLite export (``nsys export --type sqlite`` / ``nsys stats`` side product).

Kernels come from ``CUPTI_ACTIVITY_KIND_KERNEL``, launch times from ``CUPTI_ACTIVITY_KIND_RUNTIME``
(joined on the correlation id within one process), copies and fills from ``CUPTI_ACTIVITY_KIND_MEMCPY``
/ ``MEMSET``, host ranges from ``NVTX_EVENTS`` and devices from ``TARGET_INFO_GPU``. The file is opened
read-only; columns are checked with ``PRAGMA table_info`` and absent ones read as NULL, because nsys
creates tables lazily and the column set changes between versions.

Vendor quirks, all here:
* Names are ids into ``StringIds(id, value)``: ``demangledName`` (the name), ``mangledName`` (recent
  versions, may be NULL) and ``shortName`` (the fallback name). Very old exports may hold TEXT inline;
  a TEXT value is used as is.
* CUPTI's record fields (grids, shared memory, copy kinds) mean what ``_cupti`` says.
* ``deviceId`` is the CUDA device ordinal of the launching process. ``TARGET_INFO_GPU.id`` is nsys's GPU
  id, mapped to that ordinal through ``TARGET_INFO_CUDA_DEVICE(gpuId, cudaId)`` when the table exists.
* ``globalPid``/``globalTid`` pack ids as ``hw << 56 | vm << 48 | pid << 24 | tid``; correlation ids are
  unique only per process, so the runtime join matches ``>> 24`` of both (the process part).
* ``NVTX_EVENTS.eventType`` 59 is a push/pop range and 60 a start/end range; marks (34) have no end.
  The label is ``text`` inline or ``textId`` into ``StringIds``. ``thread`` is the OS tid (low 24 bits).
  ``torch.autograd.profiler.emit_nvtx`` labels each op ``aten::mul, seq = 45328, op_id = 990726[, sizes = ...]``:
  the op's name is kept, so that every call of an op is one name (its ids and shapes differ per call).
* Timestamps are integer nanoseconds on nsys's session clock.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kernelscope.errors import FormatError
from kernelscope.model import Annotation, DeviceInfo, KernelLaunch, Profile, numbers
from kernelscope.readers._cupti import COPY_KINDS_NSYS, KERNEL_COLS, Db, Described, Row, kernel_launches, memory_ops
from kernelscope.readers._io import SQL_ERRORS

FORMAT = "nsys-sqlite"
_EXPECTED = "an Nsight Systems SQLite export (nsys export --type sqlite)"
_NSYS_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "StringIds", "NVTX_EVENTS", "TARGET_INFO_GPU", "META_DATA_EXPORT")
_NVTX_RANGES = (59, 60)  # NvtxPushPopRange, NvtxStartEndRange
_EMIT_NVTX = re.compile(r"^(?P<op>[^,]+), (?:seq = \d+, )?op_id = \d+")


def is_nvprof(tables: set[str]) -> bool:
    """nvprof's database: it shares ``CUPTI_ACTIVITY_KIND_KERNEL`` with nsys exports, not the schema (its names are in
    ``StringTable``, concurrent kernels in another table)."""
    return "StringTable" in tables and "StringIds" not in tables


def _string_join(db: Db, table: str, alias: str, col: str) -> tuple[str, str]:
    """Select list entries (raw column, joined StringIds value) and the LEFT JOIN that resolves ``col``."""
    if col not in db.cols(table):
        return f'NULL AS "{col}", NULL AS "{col}_s"', ""
    if "StringIds" not in db.tables:
        return f'{alias}."{col}", NULL AS "{col}_s"', ""
    j = f"s_{col}"
    return f'{alias}."{col}", {j}.value AS "{col}_s"', f'LEFT JOIN StringIds {j} ON {j}.id = {alias}."{col}"'


def _text(r: Row, col: str) -> str | None:
    raw = r[col]
    return raw if isinstance(raw, str) else r[f"{col}_s"]


def _launch_times(db: Db) -> dict[tuple[int | None, int], int]:
    """Host start of the runtime/driver call per (process part of globalTid, correlation id)."""
    runtime = "CUPTI_ACTIVITY_KIND_RUNTIME"
    if runtime not in db.tables or not all(
        "correlationId" in db.cols(t) for t in (runtime, "CUPTI_ACTIVITY_KIND_KERNEL")
    ):
        return {}
    tid = db.col("CUPTI_ACTIVITY_KIND_RUNTIME", "r", "globalTid")
    sql = (
        f"SELECT r.correlationId AS corr, {tid}, r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
        "WHERE r.correlationId IN (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL)"
    )
    out: dict[tuple[int | None, int], int] = {}
    for r in db.rows(sql):
        key = (r["globalTid"] >> 24 if r["globalTid"] is not None else None, r["corr"])
        out.setdefault(key, r["start"])
    return out


def _launch_ns(times: dict[tuple[int | None, int], int], gpid: int | None, corr: int | None) -> int | None:
    if corr is None:
        return None
    found = times.get((gpid >> 24, corr)) if gpid is not None else None
    return found if found is not None else times.get((None, corr))  # runtime rows without globalTid


def _launches(db: Db, src: str, rank: int | None) -> list[KernelLaunch]:
    t = "CUPTI_ACTIVITY_KIND_KERNEL"
    if t not in db.tables:
        return []
    names = [_string_join(db, t, "k", c) for c in ("demangledName", "shortName", "mangledName")]
    cols = (db.col(t, "k", c) for c in (*KERNEL_COLS, "globalPid"))
    select = ", ".join(["k.start", 'k."end"', *cols, *(s for s, _ in names)])
    joins = " ".join(j for _, j in names)
    launch_ns = _launch_times(db)

    def describe(r: Row) -> Described:
        name = _text(r, "demangledName") or _text(r, "shortName") or "<unnamed kernel>"
        return name, _text(r, "mangledName") or None, _launch_ns(launch_ns, r["globalPid"], r["correlationId"])

    rows = db.rows(f"SELECT {select} FROM {t} k {joins} ORDER BY k.start")
    return kernel_launches(rows, describe, fmt=FORMAT, src=src, rank=rank)


def _copy_label(db: Db) -> tuple[str, str]:
    if "ENUM_CUDA_MEMCPY_OPER" not in db.tables:
        return "NULL AS label", ""
    return "e.label AS label", "LEFT JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind"


def _annotations(db: Db, rank: int | None) -> list[Annotation]:
    t = "NVTX_EVENTS"
    if t not in db.tables or "eventType" not in db.cols(t):
        return []
    text, join = _string_join(db, t, "e", "textId")
    sql = (
        f'SELECT e.start, e."end", {db.col(t, "e", "text")}, {text}, {db.col(t, "e", "globalTid")} FROM {t} e {join} '
        f'WHERE e.eventType IN {_NVTX_RANGES} AND e."end" IS NOT NULL ORDER BY e.start'
    )
    return [
        Annotation(
            name=_op_name(r["text"] or r["textId_s"] or ""),
            start_ns=r["start"],
            end_ns=r["end"],
            domain="host",
            rank=rank,
            thread=r["globalTid"] & 0xFFFFFF if r["globalTid"] is not None else None,
        )
        for r in db.rows(sql)
        if numbers.span(r["start"], r["end"]) is not None
    ]


def _op_name(label: object) -> str:
    """The range's name as text (SQLite may hold a number in a damaged text column), an op's without its ids."""
    text = label if isinstance(label, str) else str(label)
    m = _EMIT_NVTX.match(text)
    return m["op"] if m else text


def _devices(db: Db, rank: int | None) -> list[DeviceInfo]:
    t = "TARGET_INFO_GPU"
    if t not in db.tables or "id" not in db.cols(t):
        return []
    cuda_id: dict[int, int] = {}
    if "TARGET_INFO_CUDA_DEVICE" in db.tables and {"gpuId", "cudaId"} <= db.cols("TARGET_INFO_CUDA_DEVICE"):
        for gpu, cuda in db.con.execute("SELECT gpuId, cudaId FROM TARGET_INFO_CUDA_DEVICE ORDER BY pid"):
            cuda_id.setdefault(gpu, cuda)  # per process in principle; the first mapping is kept
    cols = ", ".join(db.col(t, "g", c) for c in ("name", "smCount", "computeMajor", "computeMinor"))
    out = []
    for r in db.rows(f"SELECT g.id, {cols} FROM {t} g ORDER BY g.id"):
        gpu, major, minor = r["id"], r["computeMajor"], r["computeMinor"]
        if gpu is None:
            continue
        out.append(
            DeviceInfo(
                index=cuda_id.get(gpu, gpu),
                vendor="nvidia",
                name=r["name"],
                arch=f"sm_{major}{minor or 0}" if major is not None else None,
                compute_units=r["smCount"],
                rank=rank,
            )
        )
    return out


def read(path: Path, *, rank: int | None = None) -> Profile:
    """Read kernels, memory operations, NVTX ranges and GPUs from an Nsight Systems SQLite export."""
    return read_as(path, str(path), rank=rank)


def read_as(path: Path, src: str, *, rank: int | None = None) -> Profile:
    """``read``, the records naming ``src`` as their file (the report an export was made from)."""
    db = Db(path, _EXPECTED)
    try:
        if not any(t in db.tables for t in _NSYS_TABLES):
            shown = ", ".join(sorted(db.tables)[:8]) or "none"
            raise FormatError(src, _EXPECTED, f"an SQLite database without its tables (tables: {shown})")
        if is_nvprof(db.tables):
            found = "nvprof's database (StringTable, no StringIds)"
            raise FormatError(src, _EXPECTED, found, "read it as --format nvprof")
        meta: dict[str, Any] = {}
        if "META_DATA_EXPORT" in db.tables:
            meta = {str(k): v for k, v in db.con.execute("SELECT name, value FROM META_DATA_EXPORT")}
        return Profile(
            launches=_launches(db, src, rank),
            memory_ops=memory_ops(db, COPY_KINDS_NSYS, fmt=FORMAT, src=src, rank=rank, label=_copy_label),
            annotations=_annotations(db, rank),
            devices=_devices(db, rank),
            sources=[src],
            formats=[FORMAT],
            metadata=meta,
        )
    except SQL_ERRORS as exc:  # damaged pages, or tables without the columns every version has
        raise FormatError(src, _EXPECTED, f"a database SQLite cannot query ({exc})") from None
    finally:
        db.con.close()
