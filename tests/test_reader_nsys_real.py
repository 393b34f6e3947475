"""The Nsight Systems reader on a REAL export: ``nsys profile --export sqlite`` of
``examples/workloads/transformer.py --train-steps 1 --decode-steps 2 --layers 2`` on an H100
(Nsight Systems 2025.3.1, driver 580.159.04, 2026-11-22; ``bench/gpu/run_nsys_overhead.sh``).

Ground truth is plain SQL over the export's own tables, not any kernelscope reader.
"""

from __future__ import annotations

import gzip
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

from kernelscope import gap
from kernelscope.readers import detect, read

REAL = Path(__file__).parent / "data" / "nsys" / "h100_nsys_small.sqlite.gz"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("nsys") / "h100_nsys_small.sqlite"
    out.write_bytes(gzip.decompress(REAL.read_bytes()))
    return out


def _sql_truth(db: Path) -> tuple[dict[str, int], dict[str, int], int, int]:
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT s.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName"
    ).fetchall()
    mem = con.execute(
        "SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY) + (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET)"
    ).fetchone()[0]
    con.close()
    calls: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    for name, dur in rows:
        calls[name] += 1
        total[name] += dur
    return calls, total, len(rows), mem


def test_real_export_is_detected(db: Path) -> None:
    assert detect(db) == "nsys-sqlite"


def test_real_export_matches_sql(db: Path) -> None:
    calls, total, n, mem = _sql_truth(db)
    prof = read(db)
    assert len(prof.launches) == n == 344
    assert len(prof.memory_ops) == mem
    result = gap(prof)
    assert {r.name: r.calls for r in result.kernels} == dict(calls)
    assert {r.name: round(r.total_us * 1000) for r in result.kernels} == dict(total)
    assert round(result.totals.kernel_time_us * 1000) == sum(total.values())


def test_real_export_fields(db: Path) -> None:
    con = sqlite3.connect(db)
    grid, block, regs = con.execute(
        "SELECT gridX * gridY * gridZ, blockX * blockY * blockZ, registersPerThread FROM CUPTI_ACTIVITY_KIND_KERNEL "
        "ORDER BY start LIMIT 1"
    ).fetchone()
    con.close()
    first = min(read(db).launches, key=lambda k: k.start_ns or 0)
    assert first.vendor == "nvidia"
    assert first.grid_blocks is not None and first.grid_blocks.total == grid
    assert first.block is not None and first.block.total == block
    assert first.registers == regs
    assert first.launch_ns is not None and first.launch_ns <= (first.start_ns or 0)
