"""The rocmProfileData (RPD) reader on real RPD traces (``tests/data/rpd/README.md``), checked against each file's
own SQL: rocmProfileData's ``top`` view (calls and µs per kernel name) and plain counts over ``rocpd_op``."""

from __future__ import annotations

import gzip
import sqlite3
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_kscope

from kernelscope import api
from kernelscope.readers import detect, read

RPD = Path(__file__).parent / "data" / "rpd"
FILES = ["vllm_mi300x.rpd.gz", "matmul_gfx90a.rpd.gz"]


@pytest.fixture(scope="module", params=FILES)
def trace(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the gzipped file as shipped, its decompressed copy for plain SQL)."""
    gz = RPD / request.param
    plain = tmp_path_factory.mktemp("rpd") / request.param.removesuffix(".gz")
    plain.write_bytes(gzip.decompress(gz.read_bytes()))
    return gz, plain


def _sql(db: Path, query: str) -> list[tuple[object, ...]]:
    con = sqlite3.connect(db)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def _op_count(db: Path, where: str) -> int:
    q = f"SELECT count(*) FROM rocpd_op o JOIN rocpd_string t ON t.id = o.opType_id WHERE {where}"
    return int(_sql(db, q)[0][0])  # type: ignore[call-overload]


def test_kernels_equal_rocmprofiledatas_own_top_view(trace: tuple[Path, Path]) -> None:
    gz, plain = trace
    assert detect(gz) == detect(plain) == "rpd"
    top = {str(n): (int(c), int(us)) for n, c, us, *_ in _sql(plain, "SELECT * FROM top")}  # type: ignore[call-overload]
    rows = api.gap_report([gz]).kernels
    assert rows
    for r in rows:
        calls, total_us = top[r.name]
        assert r.calls == calls and round(r.total_us * 1000) // 1000 == total_us  # the view divides ns by 1000


def test_graph_replays_launch_links_and_copies_are_told_apart(trace: tuple[Path, Path]) -> None:
    gz, plain = trace
    prof = read(gz)
    assert len(prof.launches) == _op_count(plain, "t.string IN ('KernelExecution', 'Task')")
    assert sum(k.graph for k in prof.launches) == _op_count(plain, "t.string = 'Task'")
    linked = "o.id IN (SELECT op_id FROM rocpd_api_ops) AND t.string IN ('KernelExecution', 'Task')"
    assert sum(k.launch_ns is not None for k in prof.launches) == _op_count(plain, linked)
    assert len(prof.memory_ops) == _op_count(plain, "t.string LIKE 'Copy%' OR t.string = 'FillBuffer'")
    assert all(k.vendor == "amd" and k.duration_ns >= 0 for k in prof.launches)


def test_the_vllm_trace_reads_as_the_serving_run_it_is() -> None:
    result = api.gap_report([RPD / "vllm_mi300x.rpd.gz"])
    assert result.totals.launches == 8948 and result.totals.idle_breakdown is not None
    kinds = {r.kind for r in result.kernels[:6]}
    assert {"tensile", "ck", "vllm"} <= kinds  # hipBLASLt GEMMs, CK attention, vLLM's own kernels
    assert result.host_activity  # roctx UserMarker ranges the GPU waited under


def test_damaged_rpd_files_are_one_error_line(tmp_path: Path) -> None:
    data = (RPD / "matmul_gfx90a.rpd.gz").read_bytes()
    cut = tmp_path / "cut.rpd.gz"
    cut.write_bytes(data[: len(data) // 2])
    assert_one_error_line(run_kscope("gap", cut))
    plain = tmp_path / "plain.rpd"
    plain.write_bytes(gzip.decompress(data))
    con = sqlite3.connect(plain)
    con.execute("DROP TABLE rocpd_api_ops")
    con.commit()
    con.close()
    assert_one_error_line(run_kscope("gap", plain))


def test_a_table_name_stored_as_a_blob_is_no_traceback(tmp_path: Path) -> None:
    """Fuzzing found it (a bit flip in sqlite_master): SQLite keeps any type anywhere, a table's name too.
    Every SQLite reader and the sniffer read names as text; the trace still reads."""
    db = tmp_path / "blob_name.rpd"
    db.write_bytes(gzip.decompress((RPD / "matmul_gfx90a.rpd.gz").read_bytes()))
    con = sqlite3.connect(db)
    con.execute("PRAGMA writable_schema=ON")
    con.execute("UPDATE sqlite_master SET name = CAST(name AS BLOB) WHERE name = 'rocpd_barrierop'")
    con.commit()
    con.close()
    proc = run_kscope("gap", db)
    assert proc.returncode == 0, proc.stderr
    assert api.gap_report([db]).totals.launches == 29
