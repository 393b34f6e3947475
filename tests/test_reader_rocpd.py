"""rocpd SQLite reader, checked against rocprofv3's own CSV output of the same dispatches.

``tests/data/rocpd/rmsnorm_results.db`` holds the real rows of ``rmsnorm_kernel_trace.csv`` in the rocpd
schema (see make_fixture.py); ``rmsnorm_kernel_stats.csv`` is rocprofv3's --stats output of that run.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import shutil
import sqlite3
import sys
from pathlib import Path
from types import ModuleType

import pytest
from truth import assert_launch_matches_trace_row, assert_matches_rocprof_stats

from kernelscope.errors import FormatError
from kernelscope.readers import detect, rocpd

DATA = Path(__file__).parent / "data" / "rocpd"
DB = DATA / "rmsnorm_results.db"


def _csv(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(newline="") as f:
        return list(csv.DictReader(f))


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rocpd_make_fixture", DATA / "make_fixture.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_sniffed() -> None:
    assert detect(DB) == "rocpd"


def test_per_kernel_calls_and_totals_equal_rocprofv3_stats() -> None:
    assert_matches_rocprof_stats(rocpd.read(DB).launches, DATA / "rmsnorm_kernel_stats.csv")


def test_launch_fields_match_the_kernel_trace_rows() -> None:
    prof = rocpd.read(DB, rank=2)
    rows = sorted(_csv("rmsnorm_kernel_trace.csv"), key=lambda r: int(r["Start_Timestamp"]))
    assert len(prof.launches) == len(rows)
    with sqlite3.connect(DB) as con:  # "Agent 3" is logical index 3; the reader reports the index among GPUs
        [(gpu,)] = con.execute("SELECT type_index FROM rocpd_info_agent WHERE logical_index = 3").fetchall()
    for k, r in zip(prof.launches, rows, strict=True):
        assert_launch_matches_trace_row(k, r)
        assert k.correlation_id == int(r["Correlation_Id"])  # the internal id (stack_id), not corr_id
        assert (k.device, k.rank, k.vendor, k.source_format) == (gpu, 2, "amd", "rocpd")
    rms = next(k for k in prof.launches if k.name == "rmsnorm_kernel_0")
    assert rms.mangled == "rmsnorm_kernel_0.kd" and rms.lds_bytes == 32


def test_devices() -> None:
    devices = rocpd.read(DB).devices
    assert [d.index for d in devices] == list(range(8))
    assert {(d.arch, d.name, d.compute_units, d.vendor) for d in devices} == {
        ("gfx950", "AMD Instinct MI350X", 256, "amd")
    }


def test_memory_copies(tmp_path: Path) -> None:
    db = tmp_path / "copies.db"
    shutil.copy(DB, db)
    guid = _generator().GUID
    uuid = "_" + guid.replace("-", "_")
    with sqlite3.connect(db) as con:
        con.execute(
            f"INSERT INTO rocpd_string{uuid} (id, guid, string) VALUES (900, ?, 'MEMORY_COPY_DEVICE_TO_HOST')", (guid,)
        )
        con.execute(
            f"INSERT INTO rocpd_event{uuid} (id, guid, category_id, stack_id, correlation_id) "
            "VALUES (900, ?, 900, 41, 0)",
            (guid,),
        )
        con.execute(
            f"INSERT INTO rocpd_memory_copy{uuid} (id, guid, nid, pid, tid, start, end, name_id, dst_agent_id, "
            "src_agent_id, size, queue_id, stream_id, event_id) VALUES (1, ?, 1, 1, 1, 500, 800, 900, 0, 4, "
            "1024, 1, 0, 900)",
            (guid,),
        )
    [op] = rocpd.read(db).memory_ops
    assert (op.name, op.kind, op.start_ns, op.duration_ns, op.bytes) == (
        "MEMORY_COPY_DEVICE_TO_HOST",
        "memcpy",
        500,
        300,
        1024,
    )
    assert (op.device, op.correlation_id, op.stream) == (2, 41, 0)  # node 4 is the third GPU


def test_multi_guid_database_without_views(tmp_path: Path) -> None:
    gen = _generator()
    db = tmp_path / "merged.db"
    rows = _csv("rmsnorm_kernel_trace.csv")
    proc = json.loads((DATA.parent / "rocprof_json" / "rmsnorm_results.json").read_bytes())
    with sqlite3.connect(db) as con:
        for uuid in (gen.UUID, "_0195f0e2_0000_7000_8000_000000000001"):
            gen.create_schema(con, uuid, views=False)
            gen.fill(con, rows[:3], proc["rocprofiler-sdk-tool"][0], uuid)
    assert detect(db) == "rocpd"
    with pytest.raises(
        FormatError, match=r"only UUID-suffixed rocpd tables \(rocpd_kernel_dispatch_0195.*`kernels` view"
    ):
        rocpd.read(db)


def test_sqlite_db_lacking_the_tables(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE KERN (name TEXT)")
    with pytest.raises(
        FormatError, match=r"expected a rocpd SQLite database.*found an SQLite database without it.*KERN"
    ):
        rocpd.read(db)


def test_view_over_missing_table(tmp_path: Path) -> None:
    db = tmp_path / "broken.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.execute("CREATE VIEW kernels AS SELECT * FROM t")
        con.execute("DROP TABLE t")
    with pytest.raises(FormatError, match="a database SQLite cannot query"):
        rocpd.read(db)


@pytest.mark.parametrize(
    "content", [b"not a database at all, just text\n" * 10, DB.read_bytes()[:3000]], ids=["text", "truncated"]
)
def test_non_sqlite_or_truncated_file(tmp_path: Path, content: bytes) -> None:
    db = tmp_path / "results.db"
    db.write_bytes(content)
    with pytest.raises(FormatError, match="expected a rocpd SQLite database"):
        rocpd.read(db)
