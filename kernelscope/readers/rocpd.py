"""rocprofv3 rocpd SQLite database (``--output-format rocpd``, ``<...>_results.db``).

Reads the ``kernels`` view (and ``memory_copies`` when present), the same views rocpd's own tools query,
rather than the tables: the views already join names, agents and correlation ids. Rows are read by
column name, so columns added or missing in other schema versions do not break the reader; the file is
opened read-only and rows are converted as the cursor yields them.

Vendor quirks, all here:
* Every table is named with a ``_<uuid>`` suffix; a single-process database also has unsuffixed views.
  Databases merged from several processes may have only suffixed tables (rocpd's Python importer builds
  the views at load time); those are refused with a message saying so, not half-read.
* ``grid_x..z`` count work-items, not workgroups; ``grid_blocks`` is derived with ``blocks_from_items``.
  ``lds_size`` is the dispatch's runtime group segment (static + dynamic, per workgroup); ``scratch_size``
  the runtime private segment per work-item; ``static_lds_size`` (the symbol's) is not used.
* ``device`` is ``agent_type_index``: the GPU's index among GPUs (``logical_node_type_id``), the same
  index the rocprofv3 JSON reader uses. ``agent_log_index`` and ``agent_abs_index`` also count CPU agents.
* ``corr_id`` is the *external* correlation id (roctx / user); the internal one, which links dispatches to
  HIP API records and is what rocprofv3's CSV and JSON call the correlation id, is in ``stack_id``.
  ``correlation_id`` is ``stack_id``, falling back to ``corr_id`` when the view lacks it.
* ``stream_id``/``queue_id`` are row ids of ``rocpd_info_stream``/``rocpd_info_queue``, not HIP handles.
* ``name`` is the symbol's display (formatted) name; the mangled symbol is only in
  ``rocpd_info_kernel_symbol.kernel_name``, looked up by ``(guid, kernel_id)``: ids are unique per process.
* Timestamps are nanoseconds on ``CLOCK_BOOTTIME``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from kernelscope.errors import FormatError
from kernelscope.model import DeviceInfo, Dim3, KernelLaunch, MemoryOp, Profile, numbers, text
from kernelscope.model.records import blocks_from_items
from kernelscope.readers._io import SQL_ERRORS, connect_sqlite, sql_rows, sqlite_names

FORMAT = "rocpd"
_EXPECTED = "a rocpd SQLite database with the `kernels` view (rocprofv3 --output-format rocpd)"

Row = dict[str, Any]
# columns that hold integers (times, ids, sizes): read through numbers.to_int, whatever SQLite stored there
_INTS = frozenset(
    {"start", "end", "agent_type_index", "stream_id", "queue_id", "stack_id", "corr_id", "kernel_id", "size"}
    | {"vgpr_count", "accum_vgpr_count", "sgpr_count", "lds_size", "scratch_size", "type_index"}
    | {f"{p}_{a}" for p in ("grid", "workgroup") for a in "xyz"}
    | {f"{e}_agent_type_index" for e in ("src", "dst")}
)


def _connect(path: Path) -> sqlite3.Connection:
    try:
        con = connect_sqlite(path)
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opening is lazy: this reads the header
    except SQL_ERRORS as exc:
        raise FormatError(path, _EXPECTED, f"a file SQLite cannot open ({exc})") from None
    return con


def _rows(con: sqlite3.Connection, sql: str) -> Iterator[Row]:
    return sql_rows(con.execute(sql), _INTS)


def _dim(r: Row, prefix: str, cache: dict[tuple[int, int, int], Dim3]) -> Dim3 | None:
    x, y, z = r.get(f"{prefix}_x"), r.get(f"{prefix}_y"), r.get(f"{prefix}_z")
    if x is None or y is None or z is None:
        return None
    key = (int(x), int(y), int(z))
    d = cache.get(key)
    if d is None:
        d = cache[key] = Dim3(*key)
    return d


def _check_names(con: sqlite3.Connection, path: Path) -> set[str]:
    names = sqlite_names(con)
    if "kernels" in names:
        return names
    suffixed = sorted(n for n in names if n.startswith("rocpd_kernel_dispatch_"))
    if suffixed:
        raise FormatError(
            path,
            _EXPECTED,
            f"only UUID-suffixed rocpd tables ({', '.join(suffixed)}) and no `kernels` view",
            "this is a multi-process (merged) database; open it with rocpd's Python API, which builds the views, "
            "or read each process's own _results.db",
        )
    shown = ", ".join(sorted(names)[:8]) or "none"
    raise FormatError(path, _EXPECTED, f"an SQLite database without it (tables and views: {shown})")


def _devices(con: sqlite3.Connection, names: set[str], rank: int | None) -> list[DeviceInfo]:
    if "rocpd_info_agent" not in names:
        return []
    out: list[DeviceInfo] = []
    for a in _rows(con, "SELECT * FROM rocpd_info_agent WHERE type = 'GPU' ORDER BY type_index"):
        raw, extra = a.get("extdata"), None
        if isinstance(
            raw, str | bytes
        ):  # the agent record as JSON text when the writer kept it; cu_count is only there
            try:
                extra = text.json(raw)
            except msgspec.DecodeError:  # binary JSONB, or not JSON: no CU count then
                extra = None
        cus = extra.get("cu_count") if isinstance(extra, dict) else None
        type_index = a.get("type_index")
        d = DeviceInfo(
            index=int(type_index) if type_index is not None else len(out),
            vendor="amd",
            name=a.get("product_name"),
            arch=a.get("name"),
            compute_units=cus if isinstance(cus, int) else None,
            rank=rank,
        )
        if d not in out:  # merged databases repeat each agent once per process
            out.append(d)
    return out


def _launches(con: sqlite3.Connection, names: set[str], src: str, rank: int | None) -> list[KernelLaunch]:
    mangled: dict[tuple[str, int], str] = {}
    if "rocpd_info_kernel_symbol" in names:
        for guid, kid, sym in con.execute("SELECT guid, id, kernel_name FROM rocpd_info_kernel_symbol"):
            if sym:
                mangled[(guid, kid)] = sym
    dims: dict[tuple[int, int, int], Dim3] = {}
    out: list[KernelLaunch] = []
    dropped = 0
    for r in _rows(con, "SELECT * FROM kernels ORDER BY start"):
        duration = numbers.span(r["start"], r["end"])
        if duration is None or r["start"] is None or r["start"] < 0:
            dropped += 1
            continue
        items, block = _dim(r, "grid", dims), _dim(r, "workgroup", dims)
        corr = r.get("stack_id", r.get("corr_id"))
        out.append(
            KernelLaunch(
                name=r.get("name") or r.get("region") or f"kernel_id {r.get('kernel_id')}",
                mangled=mangled.get((r.get("guid"), r.get("kernel_id"))),  # type: ignore[arg-type]
                start_ns=r["start"],
                duration_ns=duration,
                vendor="amd",
                device=r.get("agent_type_index"),
                rank=rank,
                stream=r.get("stream_id"),
                queue=r.get("queue_id"),
                correlation_id=corr,
                grid_items=items,
                grid_blocks=blocks_from_items(items, block) if items and block else None,
                block=block,
                vgpr=r.get("vgpr_count"),
                agpr=r.get("accum_vgpr_count"),
                sgpr=r.get("sgpr_count"),
                lds_bytes=r.get("lds_size"),
                scratch_bytes=r.get("scratch_size"),
                source=src,
                source_format=FORMAT,
            )
        )
    numbers.count_dropped("kernel launches", dropped, src)
    return out


def _memory_ops(con: sqlite3.Connection, names: set[str], src: str, rank: int | None) -> list[MemoryOp]:
    if "memory_copies" not in names:
        return []
    out: list[MemoryOp] = []
    dropped = 0
    for r in _rows(con, "SELECT * FROM memory_copies ORDER BY start"):
        duration = numbers.span(r["start"], r["end"])
        if duration is None or r["start"] is None or r["start"] < 0:
            dropped += 1
            continue
        gpu_end = "dst" if r.get("dst_agent_type") == "GPU" else "src"  # the GPU end of the copy, destination first
        out.append(
            MemoryOp(
                name=r.get("name") or "MEMORY_COPY",
                kind="memcpy",
                start_ns=r["start"],
                duration_ns=duration,
                device=r.get(f"{gpu_end}_agent_type_index") if r.get(f"{gpu_end}_agent_type") == "GPU" else None,
                rank=rank,
                stream=r.get("stream_id"),
                correlation_id=r.get("stack_id", r.get("corr_id")),
                bytes=r.get("size"),
                source=src,
                source_format=FORMAT,
            )
        )
    numbers.count_dropped("memory operations", dropped, src)
    return out


def read(path: Path, *, rank: int | None = None) -> Profile:
    """Read kernel dispatches, memory copies and GPU agents from a rocpd database."""
    con = _connect(path)
    try:
        names = _check_names(con, path)
        src = str(path)
        return Profile(
            launches=_launches(con, names, src, rank),
            memory_ops=_memory_ops(con, names, src, rank),
            devices=_devices(con, names, rank),
            sources=[src],
            formats=[FORMAT],
        )
    except SQL_ERRORS as exc:  # damaged pages, or views over tables that are missing
        raise FormatError(path, _EXPECTED, f"a database SQLite cannot query ({exc})") from None
    except KeyError as exc:
        raise FormatError(path, _EXPECTED, f"a `kernels` view without the column {exc}") from None
    finally:
        con.close()
