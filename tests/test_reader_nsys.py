"""Nsight Systems SQLite reader, checked against the real Kineto trace its fixture was laid out from.

``tests/data/nsys/h100_transformer_eager.sqlite`` holds the CUPTI records of
``tests/data/kineto/h100_transformer_eager.json.gz`` in the nsys export schema (see make_fixture.py). The
expected values here are computed from the Kineto trace directly with json/gzip, not through any reader.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from kernelscope.errors import FormatError
from kernelscope.model import Dim3
from kernelscope.readers import detect, nsys_sqlite

DATA = Path(__file__).parent / "data"
DB = DATA / "nsys" / "h100_transformer_eager.sqlite"
TRACE = DATA / "kineto" / "h100_transformer_eager.json.gz"


@pytest.fixture(scope="module")
def trace() -> dict[str, Any]:
    return json.loads(gzip.decompress(TRACE.read_bytes()))  # type: ignore[no-any-return]


def _events(trace: dict[str, Any], cat: str) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e.get("cat") == cat and e.get("ph") == "X"]


def _per_kernel(pairs: list[tuple[str, int]]) -> tuple[dict[str, int], dict[str, int]]:
    calls: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    for name, dur in pairs:
        calls[name] += 1
        total[name] += dur
    return dict(calls), dict(total)


def test_sniffed() -> None:
    assert detect(DB) == "nsys-sqlite"


def test_per_kernel_calls_and_totals_equal_the_kineto_trace(trace: dict[str, Any]) -> None:
    got = _per_kernel([(k.name, k.duration_ns) for k in nsys_sqlite.read(DB).launches])
    want = _per_kernel([(e["name"], round(e["dur"] * 1000)) for e in _events(trace, "kernel")])
    assert got == want and sum(got[0].values()) == 129


def test_launch_fields(trace: dict[str, Any]) -> None:
    launches = {k.correlation_id: k for k in nsys_sqlite.read(DB, rank=1).launches}
    api = {
        e["args"]["correlation"]: round(e["ts"] * 1000)
        for c in ("cuda_runtime", "cuda_driver")
        for e in _events(trace, c)
    }
    for e in _events(trace, "kernel"):
        a = e["args"]
        k = launches[a["correlation"]]
        grid, block = Dim3(*a["grid"]), Dim3(*a["block"])
        assert (k.name, k.start_ns, k.device, k.stream) == (e["name"], round(e["ts"] * 1000), a["device"], a["stream"])
        assert (k.grid_blocks, k.block) == (grid, block)
        assert k.grid_items == Dim3(grid.x * block.x, grid.y * block.y, grid.z * block.z)
        assert (k.registers, k.lds_bytes, k.scratch_bytes) == (a["registers per thread"], a["shared memory"], 0)
        assert k.launch_ns == api[a["correlation"]]
        assert (k.vendor, k.rank, k.mangled, k.source_format) == ("nvidia", 1, None, "nsys-sqlite")


def test_memory_ops(trace: dict[str, Any]) -> None:
    ops = nsys_sqlite.read(DB).memory_ops
    copies = _events(trace, "gpu_memcpy")
    fills = _events(trace, "gpu_memset")
    assert Counter(o.kind for o in ops) == {"memcpy": len(copies), "memset": len(fills)}
    assert sorted((o.start_ns, o.duration_ns, o.bytes) for o in ops) == sorted(
        (round(e["ts"] * 1000), round(e["dur"] * 1000), e["args"]["bytes"]) for e in copies + fills
    )
    assert {o.name for o in ops} == {"[CUDA memcpy Device-to-Host]", "[CUDA memset]"}


def test_nvtx_ranges(trace: dict[str, Any]) -> None:
    notes = nsys_sqlite.read(DB).annotations
    ops = _events(trace, "cpu_op")
    assert sorted((n.name, n.start_ns, n.end_ns, n.thread) for n in notes) == sorted(
        (e["name"], round(e["ts"] * 1000), round(e["ts"] * 1000) + round(e["dur"] * 1000), e["tid"]) for e in ops
    )  # inline text and textId labels both resolved; the mark (eventType 34) is not a range
    assert {n.domain for n in notes} == {"host"}


def test_start_end_range_read_and_mark_skipped(tmp_path: Path) -> None:
    db = tmp_path / "nvtx.sqlite"
    shutil.copy(DB, db)
    with sqlite3.connect(db) as con:
        con.execute("DELETE FROM NVTX_EVENTS")
        con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (10, 90, 60, 'step', 7)")
        con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (20, NULL, 34, 'mark', 7)")
    [note] = nsys_sqlite.read(db).annotations
    assert (note.name, note.start_ns, note.end_ns, note.thread) == ("step", 10, 90, 7)


def test_emit_nvtx_labels_read_as_the_op_name(tmp_path: Path) -> None:
    """``torch.autograd.profiler.emit_nvtx`` labels every call with its ids (and shapes): the op's name is kept,
    so the host activity the GPU waited under groups by op (a real 2-GPU export showed 18,499 distinct labels);
    a label that merely contains commas is left whole."""
    db = tmp_path / "nvtx.sqlite"
    shutil.copy(DB, db)
    labels = [
        "aten::mul, seq = 45328, op_id = 990726",
        "aten::empty, op_id = 990346",
        "aten::addmm, seq = 7, op_id = 8, sizes = [[64], [64, 64]], input_op_ids = [1, 2]",
        "step 3, rank 0",
        12345,  # a number in the text column (fuzzing: a bit flip), read as text
    ]
    with sqlite3.connect(db) as con:  # columns without a declared type keep what is stored, as damage can
        con.execute("DROP TABLE NVTX_EVENTS")
        con.execute("CREATE TABLE NVTX_EVENTS (start, end, eventType, text, globalTid, textId)")
        for i, label in enumerate(labels):
            con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?, ?, 59, ?, 7)",
                        (10 * i, 10 * i + 5, label))  # fmt: skip
    names = [n.name for n in nsys_sqlite.read(db).annotations]
    assert names == ["aten::mul", "aten::empty", "aten::addmm", "step 3, rank 0", "12345"]


def test_devices(trace: dict[str, Any]) -> None:
    [props] = trace["deviceProperties"]
    [dev] = nsys_sqlite.read(DB).devices
    assert (dev.index, dev.name, dev.compute_units, dev.vendor) == (
        props["id"],
        props["name"],
        props["numSms"],
        "nvidia",
    )
    assert dev.arch == f"sm_{props['computeMajor']}{props['computeMinor']}"


def test_names_stored_as_text(tmp_path: Path) -> None:
    db = tmp_path / "text_names.sqlite"
    shutil.copy(DB, db)
    with sqlite3.connect(db) as con:
        con.execute(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = "
            "(SELECT value FROM StringIds WHERE id = demangledName), mangledName = '_Z3fooi'"
        )
    got = nsys_sqlite.read(db).launches
    assert [k.name for k in got] == [k.name for k in nsys_sqlite.read(DB).launches]
    assert {k.mangled for k in got} == {"_Z3fooi"}


def test_minimal_old_export(tmp_path: Path) -> None:
    """Only the columns every version has; missing tables and columns read as absent, not errors."""
    db = tmp_path / "old.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
        con.execute(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, "
            "streamId INTEGER, shortName INTEGER)"
        )
        con.execute("INSERT INTO StringIds VALUES (1, 'gemm')")
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 150, 0, 7, 1)")
    prof = nsys_sqlite.read(db)
    [k] = prof.launches
    assert (k.name, k.duration_ns, k.stream, k.grid_blocks, k.launch_ns, k.lds_bytes) == (
        "gemm",
        50,
        7,
        None,
        None,
        None,
    )
    assert prof.memory_ops == [] and prof.annotations == [] and prof.devices == []


def test_sqlite_db_lacking_the_tables(tmp_path: Path) -> None:
    db = tmp_path / "other.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE results (x INTEGER)")
    with pytest.raises(FormatError, match=r"expected an Nsight Systems SQLite export.*without its tables.*results"):
        nsys_sqlite.read(db)


def test_kernel_table_without_time_columns(tmp_path: Path) -> None:
    db = tmp_path / "odd.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (foo INTEGER)")
    with pytest.raises(FormatError, match=r"a database SQLite cannot query.*start"):
        nsys_sqlite.read(db)


@pytest.mark.parametrize(
    "content", [b"\x00garbage, not SQLite\n" * 50, DB.read_bytes()[:2000]], ids=["text", "truncated"]
)
def test_non_sqlite_or_truncated_file(tmp_path: Path, content: bytes) -> None:
    db = tmp_path / "report.sqlite"
    db.write_bytes(content)
    with pytest.raises(FormatError, match="expected an Nsight Systems SQLite export"):
        nsys_sqlite.read(db)
