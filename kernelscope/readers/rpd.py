"""rocmProfileData (RPD) SQLite trace: ``runTracer.sh`` / ``rpd_tracer``, what AMD's vLLM and SGLang work profiles with.

Not rocprofv3's rocpd (``readers/rocpd.py``): an RPD file has ``rocpd_op`` (GPU work), ``rocpd_api`` (host calls),
``rocpd_api_ops`` (which call queued which op), ``rocpd_kernelapi`` (launch arguments) and ``rocpd_string``
(every text, by id), plus views (``op``, ``top``, ``kernel``) that its own tools query.

Vendor quirks, all here:
* A GPU op's kind is its ``opType`` string: ``KernelExecution`` (a kernel launched one by one), ``Task`` (a kernel a
  ``hipGraphLaunch`` replayed), ``Copy*`` and ``FillBuffer`` (memory), ``Barrier``/``Marker`` (neither). A kernel's
  name is the op's ``description``.
* Times are nanoseconds; ``gpuId`` is the GPU and ``queueId`` the HIP stream's queue.
* ``rocpd_kernelapi.gridX..Z`` count blocks for ``hipLaunchKernel`` but work-items for ``hipExtModuleLaunchKernel``:
  only the workgroup size is read, never the grid.
* ``UserMarker`` host calls are roctx ranges (and, when the tracer hooked autograd, op names): host annotations.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kernelscope.errors import FormatError
from kernelscope.model import Annotation, Dim3, KernelLaunch, MemoryOp, Profile, numbers
from kernelscope.readers._io import SQL_ERRORS, connect_sqlite, sql_rows, sqlite_names

FORMAT = "rpd"
_EXPECTED = "a rocmProfileData (RPD) SQLite trace (rocpd_op, rocpd_api, rocpd_string tables)"
TABLES = frozenset({"rocpd_op", "rocpd_api", "rocpd_string"})
_KERNELS = ("KernelExecution", "Task")
_GRAPH = "Task"
_MARKER = "UserMarker"
_INTS = frozenset({"id", "gpuId", "queueId", "start", "end", "api_start", "api_end", "wx", "wy", "wz", "tid"})

# every GPU op with its type, name, and the host call that queued it (NULLs where none did)
_OPS = """
SELECT o.id, o.gpuId, o.queueId, o.start, o.end, t.string AS op_type, d.string AS name,
       a.start AS api_start, a.end AS api_end, k.workgroupX AS wx, k.workgroupY AS wy, k.workgroupZ AS wz
FROM rocpd_op o
JOIN rocpd_string t ON t.id = o.opType_id
JOIN rocpd_string d ON d.id = o.description_id
LEFT JOIN (SELECT op_id, min(api_id) AS api_id FROM rocpd_api_ops GROUP BY op_id) ao ON ao.op_id = o.id
LEFT JOIN rocpd_api a ON a.id = ao.api_id
LEFT JOIN rocpd_kernelapi k ON k.api_ptr_id = a.id
ORDER BY o.start
"""
_MARKS = """
SELECT a.start, a.end, a.tid, s.string AS name FROM rocpd_api a
JOIN rocpd_string n ON n.id = a.apiName_id JOIN rocpd_string s ON s.id = a.args_id
WHERE n.string = 'UserMarker' ORDER BY a.start
"""

Row = dict[str, Any]


def read(path: Path, *, rank: int | None = None) -> Profile:
    """Kernels (one by one and graph-replayed), memory operations and roctx ranges of an RPD trace."""
    try:
        con = connect_sqlite(path)
        names = sqlite_names(con)
    except SQL_ERRORS as exc:
        raise FormatError(path, _EXPECTED, f"a file SQLite cannot open ({exc})") from None
    try:
        if not names >= TABLES:
            shown = ", ".join(sorted(names)[:8]) or "none"
            raise FormatError(path, _EXPECTED, f"an SQLite database without them (tables and views: {shown})")
        src = str(path)
        launches, memory = _ops(sql_rows(con.execute(_OPS), _INTS), src, rank)
        return Profile(
            launches=launches,
            memory_ops=memory,
            annotations=_marks(sql_rows(con.execute(_MARKS), _INTS), rank),
            sources=[src],
            formats=[FORMAT],
        )
    except SQL_ERRORS as exc:  # damaged pages, or a schema without the columns joined on
        raise FormatError(path, _EXPECTED, f"a database SQLite cannot query ({exc})") from None
    finally:
        con.close()


def _ops(rows: Iterator[Row], src: str, rank: int | None) -> tuple[list[KernelLaunch], list[MemoryOp]]:
    launches: list[KernelLaunch] = []
    memory: list[MemoryOp] = []
    blocks: dict[tuple[int, int, int], Dim3] = {}
    dropped = 0
    for r in rows:
        kind = r["op_type"] if isinstance(r["op_type"], str) else ""
        is_kernel, is_memory = kind in _KERNELS, kind.startswith("Copy") or kind == "FillBuffer"
        if not (is_kernel or is_memory):
            continue
        duration = numbers.span(r["start"], r["end"])
        if duration is None or r["start"] is None or r["start"] < 0:
            dropped += 1
            continue
        name = r["name"] if isinstance(r["name"], str) and r["name"] else kind
        if is_memory:
            memory.append(
                MemoryOp(
                    name=name,
                    kind="memset" if kind == "FillBuffer" else "memcpy",
                    start_ns=r["start"],
                    duration_ns=duration,
                    device=r["gpuId"],
                    rank=rank,
                    stream=r["queueId"],
                    correlation_id=r["id"],
                    source=src,
                    source_format=FORMAT,
                )
            )
            continue
        call = numbers.span(r["api_start"], r["api_end"])
        linked = call is not None and r["api_start"] is not None and r["api_start"] >= 0
        launches.append(
            KernelLaunch(
                name=name,
                start_ns=r["start"],
                duration_ns=duration,
                vendor="amd",
                device=r["gpuId"],
                rank=rank,
                stream=r["queueId"],
                correlation_id=r["id"],
                launch_ns=r["api_start"] if linked else None,
                launch_dur_ns=call if linked else None,
                graph=kind == _GRAPH,
                block=_block(r, blocks),
                source=src,
                source_format=FORMAT,
            )
        )
    numbers.count_dropped("GPU operations", dropped, src)
    return launches, memory


def _block(r: Row, cache: dict[tuple[int, int, int], Dim3]) -> Dim3 | None:
    x, y, z = r["wx"], r["wy"], r["wz"]
    if x is None or y is None or z is None or min(x, y, z) < 1:
        return None
    return cache.setdefault((x, y, z), Dim3(x, y, z))


def _marks(rows: Iterator[Row], rank: int | None) -> list[Annotation]:
    out: list[Annotation] = []
    for r in rows:
        start, end = r["start"], r["end"]
        if numbers.span(start, end) is None or start < 0 or not isinstance(r["name"], str):
            continue
        out.append(Annotation(name=r["name"], start_ns=start, end_ns=end, rank=rank, thread=r["tid"]))
    return out
