"""nsys stats' cuda_gpu_trace report, against plain SQL over the export nsys made it from.

``tests/data/nsys/stats/h100_gpu_trace*`` are what nsys 2025.3.1 printed (``nsys stats --report cuda_gpu_trace``, on the
lent H200, ``bench/gpu/nsys_gpu_trace.sh``) for ``tests/data/nsys/h100_nsys_small.sqlite.gz``: CSV in ns and in us, and
the column form. The expected values come from that export by SQL, not through any kscope reader.
"""

from __future__ import annotations

import gzip
import sqlite3
import warnings
from pathlib import Path

import pytest

from kernelscope.errors import FormatError
from kernelscope.model import Dim3
from kernelscope.readers import detect, nsys_gpu_trace

DATA = Path(__file__).parent / "data" / "nsys"
FORMS = ["h100_gpu_trace.csv.gz", "h100_gpu_trace_us.csv.gz", "h100_gpu_trace_column.txt.gz"]
Export = tuple[dict[tuple[int, int], tuple[object, ...]], int, int]


@pytest.fixture(scope="module")
def sql(tmp_path_factory: pytest.TempPathFactory) -> Export:
    """Kernels by (correlation id, start): name, duration, grid, block, registers, shared bytes, device, stream; the
    number of copies and fills and their total duration."""
    db = tmp_path_factory.mktemp("nsys") / "small.sqlite"
    db.write_bytes(gzip.decompress((DATA / "h100_nsys_small.sqlite.gz").read_bytes()))
    con = sqlite3.connect(db)
    kernels = {
        (r[0], r[1]): r[2:]
        for r in con.execute(
            "SELECT k.correlationId, k.start, s.value, k.end - k.start, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY,"
            " k.blockZ, k.registersPerThread, k.staticSharedMemory + k.dynamicSharedMemory, k.deviceId, k.streamId "
            "FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName"
        )
    }
    n, total = con.execute(
        "SELECT count(*), sum(d) FROM (SELECT end - start AS d FROM CUPTI_ACTIVITY_KIND_MEMCPY "
        "UNION ALL SELECT end - start FROM CUPTI_ACTIVITY_KIND_MEMSET)"
    ).fetchone()
    con.close()
    return kernels, n, total


@pytest.mark.parametrize("name", FORMS)
def test_every_launch_is_the_exports(name: str, sql: Export) -> None:
    """Times exact in ns and in us (three decimals); the column form cuts long names, and says so."""
    path = DATA / "stats" / name
    assert detect(path) == "nsys-gpu-trace"
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        prof = nsys_gpu_trace.read(path)
    kernels, copies, copy_ns = sql
    assert len(prof.launches) == len(kernels) == 344
    for k in prof.launches:
        text, duration, gx, gy, gz, bx, by, bz, regs, shared, device, stream = kernels[(k.correlation_id, k.start_ns)]  # type: ignore[index]
        assert k.name == text or (k.name.endswith("…") and str(text).startswith(k.name[:-1]))
        assert k.duration_ns == duration
        assert (k.grid_blocks, k.block) == (Dim3(gx, gy, gz), Dim3(bx, by, bz))  # type: ignore[arg-type]
        assert (k.registers, k.device, k.stream) == (regs, device, stream)
        assert k.lds_bytes == pytest.approx(shared, abs=500)  # MB to three decimals
    assert len(prof.memory_ops) == copies and sum(m.duration_ns for m in prof.memory_ops) == copy_ns
    assert [d.name for d in prof.devices] == ["NVIDIA H100 80GB HBM3"]
    cut = sum(k.name.endswith("…") for k in prof.launches)
    assert bool(cut) == ("column" in name) and [str(w.message) for w in said if "cut" in str(w.message)] == (
        [f"{path}: nsys cut {cut} of 344 kernel names to its column ('…')"] if cut else []
    )


def test_without_its_header_it_is_one_error(tmp_path: Path) -> None:
    cut = tmp_path / "trace.csv"
    text = gzip.decompress((DATA / "stats" / "h100_gpu_trace.csv.gz").read_bytes()).decode()
    cut.write_text("\n".join(text.splitlines()[2:]) + "\n")  # rows only
    with pytest.raises(FormatError, match="cuda_gpu_trace"):
        nsys_gpu_trace.read(cut)
