"""Regenerate ``h100_transformer_eager.sqlite``: real H100 GPU activity laid out as an Nsight Systems export.

No real nsys SQLite export is obtainable here (the GPU machine's nsys importer fails), so the events of a real
PyTorch profiler trace of the same kind of activity, ``../kineto/h100_transformer_eager.json.gz`` (CUPTI
records of an H100, eager transformer step), are written into the nsys schema as documented in
/tmp/research/formats.md §4 (table and column names of nsys's exporter; only the columns used are filled):

* ``kernel`` events → ``CUPTI_ACTIVITY_KIND_KERNEL``; names interned in ``StringIds`` and referenced by id
  (``demangledName``; ``shortName`` = the bare function name, derived here; ``mangledName`` NULL because
  Kineto does not record it). ``start`` = round(ts µs x 1000), ``end`` = start + round(dur µs x 1000), so
  durations equal the trace's to the nanosecond. ``grid`` (blocks), ``block``, ``registers per thread`` are
  copied; Kineto's ``shared memory`` is already static + dynamic, so it goes to ``staticSharedMemory``.
* ``cuda_runtime`` and ``cuda_driver`` events → ``CUPTI_ACTIVITY_KIND_RUNTIME`` (nsys traces both APIs there).
* ``gpu_memcpy`` / ``gpu_memset`` → ``CUPTI_ACTIVITY_KIND_MEMCPY`` / ``MEMSET``, copy kind from the name.
* ``cpu_op`` events → ``NVTX_EVENTS`` push/pop ranges (eventType 59), as ``torch.autograd.profiler.emit_nvtx``
  would emit them; even ones with inline ``text``, odd ones through ``textId``. One mark (34) is added, which
  readers must skip.
* ``deviceProperties`` → ``TARGET_INFO_GPU`` and ``TARGET_INFO_CUDA_DEVICE``.
* ``globalPid``/``globalTid`` pack the trace's pid/tid as nsys does (``pid << 24 | tid``).

Run from anywhere: ``python tests/data/nsys/make_fixture.py``.
"""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "kineto" / "h100_transformer_eager.json.gz"

SCHEMA = """
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT, busLocation TEXT, totalMemory INTEGER,
    smCount INTEGER, chipName TEXT, memoryBandwidth INTEGER, computeMajor INTEGER, computeMinor INTEGER);
CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER, pid INTEGER, uuid TEXT,
    numMultiprocessors INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
    demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER,
    cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
    gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
    staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
    localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,
    sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
    globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL,
    callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
    bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,
    srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
    graphNodeId INTEGER, virtualAddress INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
    value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
    category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
    domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
    int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
"""
COPY_KINDS = {"HtoD": 1, "DtoH": 2, "DtoD": 8, "HtoH": 9}  # CUpti_ActivityMemcpyKind
COPY_LABELS = [
    (1, "CUDA_MEMCPY_OPER_HTOD", "Host-to-Device"),
    (2, "CUDA_MEMCPY_OPER_DTOH", "Device-to-Host"),
    (8, "CUDA_MEMCPY_OPER_DTOD", "Device-to-Device"),
    (9, "CUDA_MEMCPY_OPER_HTOH", "Host-to-Host"),
]


def ns(us: float) -> int:
    return round(us * 1000)


def short_name(name: str) -> str:
    """The bare function name, as nsys's shortName: no return type, template or parameter list."""
    base = re.sub(r"^void ", "", name).replace("(anonymous namespace)", "").split("(")[0]
    depth, out = 0, ""
    for ch in base:
        depth += ch == "<"
        if depth == 0:
            out += ch
        depth -= ch == ">"
    return out.rsplit("::", 1)[-1] or name


def build(con: sqlite3.Connection, trace: dict[str, Any]) -> None:
    con.executescript(SCHEMA)
    strings: dict[str, int] = {}

    def sid(s: str) -> int:
        if s not in strings:
            strings[s] = len(strings) + 1
            con.execute("INSERT INTO StringIds VALUES (?, ?)", (strings[s], s))
        return strings[s]

    con.execute("INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SOURCE', 'kernelscope fixture from a Kineto trace')")
    con.executemany(
        "INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (?, ?, ?)",
        [
            (34, "NvtxMark", "NVTX Mark"),
            (59, "NvtxPushPopRange", "NVTX PushPop Range"),
            (60, "NvtxStartEndRange", "NVTX StartEnd Range"),
        ],
    )
    con.executemany("INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (?, ?, ?)", COPY_LABELS)
    host_pid = next(e["pid"] for e in trace["traceEvents"] if e.get("cat") == "cuda_runtime")
    gpid = host_pid << 24
    for p in trace["deviceProperties"]:
        con.execute(
            "INSERT INTO TARGET_INFO_GPU VALUES (?, ?, '', ?, ?, 'GH100', 0, ?, ?)",
            (p["id"], p["name"], p["totalGlobalMem"], p["numSms"], p["computeMajor"], p["computeMinor"]),
        )
        con.execute(
            "INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (?, ?, ?, '', ?)", (p["id"], p["id"], host_pid, p["numSms"])
        )
    nvtx = 0
    for e in trace["traceEvents"]:
        cat, a = e.get("cat"), e.get("args", {})
        if e.get("ph") != "X":
            continue
        start = ns(e["ts"])
        end = start + ns(e["dur"])
        if cat == "kernel":
            name = e["name"]
            con.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, "
                "globalPid, demangledName, shortName, mangledName, launchType, cacheConfig, registersPerThread, gridX, "
                "gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, "
                "localMemoryTotal, gridId, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, 0, 0, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, ?, 0, NULL, 0)",
                (
                    start,
                    end,
                    a["device"],
                    a["context"],
                    a["stream"],
                    a["correlation"],
                    gpid,
                    sid(name),
                    sid(short_name(name)),
                    a["registers per thread"],
                    *a["grid"],
                    *a["block"],
                    a["shared memory"],
                    a["correlation"],
                ),
            )
        elif cat in ("cuda_runtime", "cuda_driver"):
            con.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?, 0, NULL)",
                (start, end, (e["pid"] << 24) | e["tid"], a["correlation"], sid(e["name"])),
            )
        elif cat == "gpu_memcpy":
            kind = COPY_KINDS[e["name"].split()[1]]
            con.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, "
                "correlationId, globalPid, bytes, copyKind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (start, end, a["device"], a["context"], a["stream"], a["correlation"], gpid, a["bytes"], kind),
            )
        elif cat == "gpu_memset":
            con.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, "
                "correlationId, globalPid, value, bytes) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)",
                (start, end, a["device"], a["context"], a["stream"], a["correlation"], gpid, a["bytes"]),
            )
        elif cat == "cpu_op":
            text, text_id = (e["name"], None) if nvtx % 2 == 0 else (None, sid(e["name"]))
            con.execute(
                "INSERT INTO NVTX_EVENTS (start, end, eventType, text, textId, globalTid) VALUES (?, ?, 59, ?, ?, ?)",
                (start, end, text, text_id, (e["pid"] << 24) | e["tid"]),
            )
            if nvtx == 0:
                con.execute(
                    "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?, NULL, 34, "
                    "'a mark, not a range', ?)",
                    (start, (e["pid"] << 24) | e["tid"]),
                )
            nvtx += 1


def main() -> None:
    out = HERE / "h100_transformer_eager.sqlite"
    out.unlink(missing_ok=True)
    con = sqlite3.connect(out)
    with con:
        build(con, json.loads(gzip.decompress(SOURCE.read_bytes())))
    con.execute("VACUUM")
    con.close()


if __name__ == "__main__":
    main()
