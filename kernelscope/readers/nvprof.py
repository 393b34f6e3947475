"""nvprof's database: ``nvprof --export-profile FILE`` (``-o``), a ``.nvvp`` or ``.nvprof`` file that ``nvprof -i`` and
the Visual Profiler read back. nvprof profiled CUDA up to sm_75 (CUDA 5 to 12); its files are what older papers,
courses and repositories keep.

The records are CUPTI's, as in an Nsight Systems export (``_cupti`` says what their fields mean), under nvprof's own
schema. Its quirks, all here:
* Names are ids into ``StringTable(_id_, value)``. A kernel's is its mangled symbol: nvprof demangles only when it
  prints, so ``name`` is the symbol and the presenters demangle it.
* Kernels are in ``CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`` (nvprof's default) or ``CUPTI_ACTIVITY_KIND_KERNEL``
  (``--concurrent-kernels off``, and runs that replay kernels); both are read.
* A file is one process (``--profile-child-processes`` writes one per process), so a correlation id is unique in it:
  the launch time is the start of the runtime or driver API call with the kernel's correlation id. A multi-device
  cooperative launch is one call for a kernel on each device.
* A run that collected metrics or events (``--metrics``, ``--events``, ``--analysis-metrics``) replayed each kernel
  serialized, so its kernel times are not the run's: nvprof leaves them out of its summary. They are read, and the
  result says so.
* Devices are ``CUPTI_ACTIVITY_KIND_DEVICE``, whose ``id`` is the CUDA ordinal a kernel's ``deviceId`` holds.
* Peer copies (``CUPTI_ACTIVITY_KIND_MEMCPY2``) and NVTX markers are not read: no file seen held any.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kernelscope.errors import FormatError, partial_input
from kernelscope.model import DeviceInfo, KernelLaunch, Profile
from kernelscope.readers._cupti import COPY_KINDS_NVPROF, KERNEL_COLS, Db, Described, Row, kernel_launches, memory_ops
from kernelscope.readers._io import SQL_ERRORS

FORMAT = "nvprof"
_EXPECTED = "an nvprof database (nvprof --export-profile, .nvvp / .nvprof)"
_KERNEL_TABLES = ("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", "CUPTI_ACTIVITY_KIND_KERNEL")
_API_TABLES = ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER")
_REPLAY_TABLES = (
    *("CUPTI_ACTIVITY_KIND_METRIC", "CUPTI_ACTIVITY_KIND_EVENT"),
    *("CUPTI_ACTIVITY_KIND_INSTANTANEOUS_METRIC", "CUPTI_ACTIVITY_KIND_INSTANTANEOUS_EVENT"),
)


def _string(db: Db, table: str, alias: str, as_: str) -> tuple[str, str]:
    """The select entry and join that resolve the ``name`` id of ``table`` to its text in ``StringTable``."""
    if "name" not in db.cols(table) or "StringTable" not in db.tables:
        return f'NULL AS "{as_}"', ""
    return f'n.value AS "{as_}"', f'LEFT JOIN StringTable n ON n._id_ = {alias}."name"'


def _has_rows(db: Db, table: str) -> bool:
    return table in db.tables and db.con.execute(f'SELECT 1 FROM "{table}" LIMIT 1').fetchone() is not None


def _launch_times(db: Db) -> dict[int, int]:
    """Host start of the API call per correlation id (runtime calls first: a driver call they made has its own id)."""
    out: dict[int, int] = {}
    for t in _API_TABLES:
        if t in db.tables and {"correlationId", "start"} <= db.cols(t):
            for r in db.rows(f'SELECT correlationId AS corr, start FROM "{t}"'):
                if r["corr"] is not None and r["start"] is not None:
                    out.setdefault(r["corr"], r["start"])
    return out


def _kernel_rows(db: Db) -> Iterator[Row]:
    for t in _KERNEL_TABLES:
        if t in db.tables:
            cols = ", ".join(["k.start", 'k."end"', *(db.col(t, "k", c) for c in KERNEL_COLS)])
            named, join = _string(db, t, "k", "kernel")
            yield from db.rows(f"SELECT {cols}, {named} FROM {t} k {join}")


def _launches(db: Db, src: str, rank: int | None) -> list[KernelLaunch]:
    launch_ns = _launch_times(db)

    def describe(r: Row) -> Described:
        name = r["kernel"] if isinstance(r["kernel"], str) and r["kernel"] else "<unnamed kernel>"
        corr = r["correlationId"]
        return name, name if name.startswith("_Z") else None, launch_ns.get(corr) if corr is not None else None

    out = kernel_launches(_kernel_rows(db), describe, fmt=FORMAT, src=src, rank=rank)
    out.sort(key=lambda k: k.start_ns or 0)  # the two tables, merged
    return out


def _devices(db: Db, rank: int | None) -> list[DeviceInfo]:
    t = "CUPTI_ACTIVITY_KIND_DEVICE"
    if t not in db.tables or "id" not in db.cols(t):
        return []
    counts = ("numMultiprocessors", "computeCapabilityMajor", "computeCapabilityMinor")
    cols = ", ".join(db.col(t, "d", c) for c in counts)
    named, join = _string(db, t, "d", "device")
    out = []
    for r in db.rows(f"SELECT d.id, {cols}, {named} FROM {t} d {join} ORDER BY d.id"):
        major, minor = r["computeCapabilityMajor"], r["computeCapabilityMinor"]
        if r["id"] is None:
            continue
        out.append(
            DeviceInfo(
                index=r["id"],
                vendor="nvidia",
                name=r["device"] if isinstance(r["device"], str) else None,
                arch=f"sm_{major}{minor or 0}" if major is not None else None,
                compute_units=r["numMultiprocessors"],
                rank=rank,
            )
        )
    return out


def read(path: Path, *, rank: int | None = None) -> Profile:
    """Read kernels, copies and fills, and GPUs from an nvprof database."""
    src = str(path)
    db = Db(path, _EXPECTED)
    try:
        if "StringTable" not in db.tables or not any(t in db.tables for t in _KERNEL_TABLES):
            shown = ", ".join(sorted(db.tables)[:8]) or "none"
            raise FormatError(src, _EXPECTED, f"an SQLite database without its tables (tables: {shown})")
        launches = _launches(db, src, rank)
        if launches and any(_has_rows(db, t) for t in _REPLAY_TABLES):
            partial_input(
                f"{src}: nvprof collected metrics or events in this run, so it replayed each kernel serialized: "
                "the kernel times are the replays', not the run's"
            )
        return Profile(
            launches=launches,
            memory_ops=memory_ops(db, COPY_KINDS_NVPROF, fmt=FORMAT, src=src, rank=rank),
            devices=_devices(db, rank),
            sources=[src],
            formats=[FORMAT],
        )
    except SQL_ERRORS as exc:  # damaged pages, or tables without the columns every version has
        raise FormatError(src, _EXPECTED, f"a database SQLite cannot query ({exc})") from None
    finally:
        db.con.close()
