"""nvprof's database, its printed summary and its CSV trace, checked against nvprof itself.

``tests/data/nvprof/nccl_v100.nvvp.gz`` is a public nvprof database (8 V100s running NCCL collectives; provenance
and licence in that folder's README). ``nccl_v100.gpu-trace.csv`` is what nvprof 11.8 printed for it
(``nvprof -i FILE --demangling off -u ns --csv --print-gpu-trace``): every kernel, copy and fill as nvprof reads
its own file. The expected values here come from that CSV, not from any kscope reader.
"""

from __future__ import annotations

import csv
import gzip
import json
import shutil
import sqlite3
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelscope.cli import app
from kernelscope.errors import FormatError
from kernelscope.model import Dim3, KernelLaunch, Profile
from kernelscope.readers import detect, nsys_sqlite, nvprof, nvprof_summary, nvprof_trace

DATA = Path(__file__).parent / "data" / "nvprof"
DB = DATA / "nccl_v100.nvvp.gz"
TRACE = DATA / "nccl_v100.gpu-trace.csv"


def _nvprof_rows() -> list[dict[str, str]]:
    lines = [ln for ln in TRACE.read_text().splitlines() if not ln.startswith("==")]
    rows = list(csv.DictReader(lines))
    return rows[1:]  # the first row holds the units (ns, KB, B, MB)


def _device(cell: str) -> int:
    return int(cell.rsplit("(", 1)[1].rstrip(")"))  # "Tesla V100-SXM2-32GB (3)"


def _fields(k: KernelLaunch, t0: int) -> tuple[object, ...]:
    """A launch as nvprof's trace shows it: start from nvprof's zero ``t0``, grid and block as triples."""
    return (
        k.name,
        k.start_ns - t0 if k.start_ns is not None else None,
        k.duration_ns,
        k.grid_blocks and (k.grid_blocks.x, k.grid_blocks.y, k.grid_blocks.z),
        k.block and (k.block.x, k.block.y, k.block.z),
        k.registers,
        k.lds_bytes,
        k.device,
        k.stream,
        k.correlation_id,
    )


@pytest.fixture(scope="module")
def profile() -> Profile:
    return nvprof.read(DB)


def test_every_kernel_is_nvprofs_own(profile: Profile) -> None:
    rows = _nvprof_rows()
    t0 = min(r.start_ns for r in [*profile.launches, *profile.memory_ops] if r.start_ns is not None)
    ours = Counter(_fields(k, t0) for k in profile.launches)
    theirs = Counter(
        (
            r["Name"],
            round(float(r["Start"])),
            round(float(r["Duration"])),
            (int(r["Grid X"]), int(r["Grid Y"]), int(r["Grid Z"])),
            (int(r["Block X"]), int(r["Block Y"]), int(r["Block Z"])),
            int(r["Registers Per Thread"]),
            round(float(r["Static SMem"]) * 1024) + int(r["Dynamic SMem"]),
            _device(r["Device"]),
            int(r["Stream"]),
            int(r["Correlation_ID"]),
        )
        for r in rows
        if not r["Name"].startswith("[CUDA ")
    )
    assert len(profile.launches) == 24
    assert ours == theirs


def test_every_copy_and_fill_is_nvprofs_own(profile: Profile) -> None:
    rows = [r for r in _nvprof_rows() if r["Name"].startswith("[CUDA ")]
    t0 = min(r.start_ns for r in [*profile.launches, *profile.memory_ops] if r.start_ns is not None)
    ours = Counter(
        (m.name, (m.start_ns or 0) - t0, m.duration_ns, m.device, m.stream, m.correlation_id)
        for m in profile.memory_ops
    )
    theirs = Counter(
        (
            r["Name"],
            round(float(r["Start"])),
            round(float(r["Duration"])),
            _device(r["Device"]),
            int(r["Stream"]),
            int(r["Correlation_ID"]),
        )
        for r in rows
    )
    assert ours == theirs
    sizes = {(m.correlation_id, m.start_ns - t0): m.bytes for m in profile.memory_ops if m.start_ns is not None}
    for r in rows:  # nvprof prints MB (2^20 bytes) to six decimals
        size = sizes[(int(r["Correlation_ID"]), round(float(r["Start"])))]
        assert size is not None and abs(size / 2**20 - float(r["Size"])) <= 5e-7


def test_devices_and_launch_times(profile: Profile) -> None:
    names = {_device(r["Device"]): r["Device"].rsplit(" (", 1)[0] for r in _nvprof_rows()}
    ours = {d.index: d for d in profile.devices}
    assert {i: ours[i].name for i in names} == names
    assert {d.arch for d in profile.devices} == {"sm_70"}  # V100
    # every kernel was launched by a runtime or driver call before it ran
    assert all(k.launch_ns is not None and k.launch_ns <= (k.start_ns or 0) for k in profile.launches)


def test_sniffed_and_read_through_the_cli() -> None:
    assert detect(DB) == "nvprof"
    res = CliRunner().invoke(app, ["gap", str(DB), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    rows = [r for r in _nvprof_rows() if not r["Name"].startswith("[CUDA ")]
    calls = Counter(r["Name"] for r in rows)
    assert {k["name"]: k["calls"] for k in out["kernels"]} == dict(calls)
    total_us = sum(float(r["Duration"]) for r in rows) / 1e3
    assert out["totals"]["kernel_time_us"] == pytest.approx(total_us, rel=1e-9)
    # the table shows the symbols demangled, as nvprof does; --json keeps them as stored
    table = CliRunner().invoke(app, ["gap", str(DB)])
    assert table.exit_code == 0 and "ncclAllReduceTreeLLKernel" in table.output and "_Z33" not in table.output


def test_as_an_nsys_export_it_is_one_error_line_saying_which_format() -> None:
    """It shares CUPTI_ACTIVITY_KIND_KERNEL with nsys exports: read as one it would give nameless or no kernels."""
    with pytest.raises(FormatError, match="--format nvprof"):
        nsys_sqlite.read(DB)


def test_a_run_that_replayed_kernels_for_metrics_says_so(tmp_path: Path) -> None:
    db = tmp_path / "metrics.nvvp"
    with gzip.open(DB) as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    con = sqlite3.connect(db)
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_METRIC(id, value, correlationId, flags) VALUES (1, x'00', 4322, 0)")
    con.commit()
    con.close()
    with pytest.warns(UserWarning, match="replayed each kernel"):
        assert len(nvprof.read(db).launches) == 24


def test_a_database_without_nvprofs_tables_is_one_error_line(tmp_path: Path) -> None:
    db = tmp_path / "other.nvvp"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t(x)")
    con.close()
    with pytest.raises(FormatError, match="expected an nvprof database"):
        nvprof.read(db)


# --- nvprof's printed summary ----------------------------------------------------------------------------------
# What nvprof 11.8 printed for the same database (`nvprof -i FILE` with the options named), against its own trace of
# it: calls exact; times to the digits each form prints.
SUMMARIES = {
    "nccl_v100.summary.txt": 5e-5,  # default: five significant digits and a unit per cell
    "nccl_v100.summary.csv": 1e-8,  # --csv: ms to six decimals
    "nccl_v100.summary_ms.txt": 1e-6,  # -u ms: a units row, seven significant digits
    "nccl_v100.summary_per_gpu.txt": 2e-4,  # --print-summary-per-gpu: a table per device, each rounded
    "nccl_v100.gpu_summary_us.csv": 1e-8,  # --print-gpu-summary --csv -u us
}


def _trace_stats() -> dict[str, tuple[int, float, float, float]]:
    """(calls, total, min, max) ns per kernel of nvprof's trace, its mangled names demangled by binutils c++filt."""
    rows = [r for r in _nvprof_rows() if not r["Name"].startswith("[CUDA ")]
    mangled = sorted({r["Name"] for r in rows})
    out = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True, text=True, check=True).stdout
    names = dict(zip(mangled, out.splitlines(), strict=True))
    per: dict[str, list[float]] = {}
    for r in rows:
        per.setdefault(names[r["Name"]], []).append(float(r["Duration"]))
    return {n: (len(d), sum(d), min(d), max(d)) for n, d in per.items()}


@pytest.mark.parametrize("name", list(SUMMARIES))
def test_a_printed_summary_is_nvprofs_own_trace(name: str) -> None:
    path = DATA / name
    assert detect(path) == "nvprof-summary"
    stats = {s.name: s for s in nvprof_summary.read(path).stats}
    truth = _trace_stats()
    assert set(stats) == set(truth)  # the copies, fills and API calls are not kernels
    rel = SUMMARIES[name]
    for kernel, (calls, total, low, high) in truth.items():
        s = stats[kernel]
        assert s.calls == calls
        assert s.total_ns == pytest.approx(total, rel=rel, abs=1)
        assert (s.min_ns, s.max_ns) == (pytest.approx(low, rel=rel, abs=1), pytest.approx(high, rel=rel, abs=1))


def _old_layout(text: str) -> str:
    """The summary as nvprof before CUDA 9 printed it (no Type column; API calls after their own ``==PID==`` line),
    inside the program's log as a live run prints it."""
    out = ["step 1: loss 0.25", "==4242== NVPROF is profiling process 4242, command: ./demo"]
    out += ["==4242== Profiling result:"]
    for line in text.splitlines()[1:]:
        if line.lstrip().startswith("Type"):
            out.append(line.replace("Type  ", "", 1).strip())
        elif line.lstrip().startswith("API calls:"):
            out += ["", "==4242== API calls:", out[3], line.split(":", 1)[1].strip()]
        else:
            out.append(line.split(":", 1)[1].strip() if line.lstrip().startswith("GPU activities:") else line.strip())
    return "\n".join(out) + "\n"


def test_the_layout_before_cuda_9_in_a_log(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(_old_layout((DATA / "nccl_v100.summary.txt").read_text()))
    assert "API calls:" not in log.read_text().split("==4242== API calls:")[0]
    assert detect(log) == "nvprof-summary"
    ours = {s.name: (s.calls, s.total_ns) for s in nvprof_summary.read(log).stats}
    assert ours == {s.name: (s.calls, s.total_ns) for s in nvprof_summary.read(DATA / "nccl_v100.summary.txt").stats}


def test_a_run_without_kernels_is_empty_and_text_without_a_summary_is_one_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("==7== Profiling application: ./a\n==7== Profiling result:\nNo kernels were profiled.\n")
    assert nvprof_summary.read(empty).stats == []
    other = tmp_path / "other.log"
    other.write_text("Type  Time(%)      Time     Calls       Avg       Min       Max  Name\n")
    with pytest.raises(FormatError, match="no 'Profiling result:' line"):
        nvprof_summary.read(other)


def test_a_summary_in_notes_ends_where_the_table_does(tmp_path: Path) -> None:
    """As summaries are pasted in READMEs: inside a code fence with prose after it, followed by nvprof's Unified Memory
    result (whose ``Device`` line has no ``==PID==``), laid out as public nvprof 11 output is."""
    note = tmp_path / "README.md"
    note.write_text(
        "Profiling with nvprof:\n\n```\n==40417== NVPROF is profiling process 40417, command: ./MonteCarlo\n"
        "Test passed\n==40417== Profiling application: ./MonteCarlo\n==40417== Profiling result:\n"
        "            Type  Time(%)      Time     Calls       Avg       Min       Max  Name\n"
        " GPU activities:   99.72%  2.68361s         1  2.68361s  2.68361s  2.68361s  MonteCarloOneBlock(int)\n"
        "                    0.28%  7.6108ms         1  7.6108ms  7.6108ms  7.6108ms  rngSetupStates(int)\n"
        "      API calls:   93.07%  2.68369s         1  2.68369s  2.68369s  2.68369s  cudaEventSynchronize\n\n"
        '==40417== Unified Memory profiling result:\nDevice "Tesla P100-SXM2-16GB (0)"\n'
        "   Count  Avg Size  Min Size  Max Size  Total Size  Total Time  Name\n"
        "       8  2.0000MB  2.0000MB  2.0000MB  16.00000MB  1.428626ms  Host To Device\n```\n\n"
        "The kernel takes 2.7 s of the 2.69 s run, and the seven words of this sentence are not a row.\n"
    )
    assert detect(note) == "nvprof-summary"
    stats = {s.name: (s.calls, s.total_ns) for s in nvprof_summary.read(note).stats}
    assert stats == {"MonteCarloOneBlock(int)": (1, 2.68361e9), "rngSetupStates(int)": (1, 7.6108e6)}


# --- nvprof's GPU trace as CSV ----------------------------------------------------------------------------------
# The two CSV traces nvprof printed for the database, read back and checked against plain SQL over the database.


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """Kernels and copies/fills of the database by SQL: (name, start from the first record, duration, grid, block,
    registers, shared bytes, device, stream, correlation id) and (start, duration, bytes, device, stream, id)."""
    db = tmp_path_factory.mktemp("nvvp") / "nccl.nvvp"
    db.write_bytes(gzip.decompress(DB.read_bytes()))
    con = sqlite3.connect(db)
    kernels = con.execute(
        "SELECT s.value, k.start, k.end - k.start, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ, "
        "k.registersPerThread, k.staticSharedMemory + k.dynamicSharedMemory, k.deviceId, k.streamId, k.correlationId "
        "FROM CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL k JOIN StringTable s ON s._id_ = k.name"
    ).fetchall()
    copies = con.execute(
        "SELECT start, end - start, bytes, deviceId, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL "
        "SELECT start, end - start, bytes, deviceId, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET"
    ).fetchall()
    con.close()
    t0 = min([r[1] for r in kernels] + [r[0] for r in copies])
    k = [(r[0], r[1] - t0, r[2], (r[3], r[4], r[5]), (r[6], r[7], r[8]), *r[9:]) for r in kernels]
    return k, [(r[0] - t0, *r[1:]) for r in copies]


def test_the_csv_trace_is_the_database(records: tuple[list[tuple[object, ...]], list[tuple[object, ...]]]) -> None:
    """``--demangling off -u ns``: every field exactly the database's."""
    path = DATA / "nccl_v100.gpu-trace.csv"
    assert detect(path) == "nvprof-trace"
    prof = nvprof_trace.read(path)
    ours = Counter(_fields(k, 0) for k in prof.launches)
    kernels, copies = records
    assert ours == Counter(kernels)
    ops = Counter((m.start_ns, m.duration_ns, m.device, m.stream, m.correlation_id) for m in prof.memory_ops)
    assert ops == Counter((c[0], c[1], c[3], c[4], c[5]) for c in copies)
    by_id = {(m.correlation_id, m.start_ns): m.bytes for m in prof.memory_ops}
    # nvprof prints MB (2^20 bytes) to six decimals: bytes to within half a unit of the last digit
    assert all(abs((by_id[(c[5], c[0])] or 0) - c[2]) <= 0.5e-6 * 2**20 for c in copies)
    active = {int(str(r[-3])) for r in kernels} | {int(str(c[3])) for c in copies}  # the GPUs the trace shows
    assert {d.index: d.name for d in prof.devices} == dict.fromkeys(active, "Tesla V100-SXM2-32GB")


def test_the_default_csv_trace_in_seconds(records: tuple[list[tuple[object, ...]], list[tuple[object, ...]]]) -> None:
    """nvprof's default units (start in s to six decimals, durations in ms) and its demangled names."""
    prof = nvprof_trace.read(DATA / "nccl_v100.gpu-trace_default.csv")
    kernels, _ = records
    want = {(k[-3], k[-2], k[-1]): k for k in kernels}  # (device, stream, correlation id) is one launch here
    assert len(prof.launches) == len(want)
    for k in prof.launches:
        w = want[(k.device, k.stream, k.correlation_id)]
        assert abs((k.start_ns or 0) - int(str(w[1]))) <= 500 and abs(k.duration_ns - int(str(w[2]))) <= 1
        assert (k.registers, k.lds_bytes) == (w[5], w[6])
    assert {k.name for k in prof.launches} == {
        "ncclAllReduceTreeLLKernel_sum_i32(ncclColl)",
        "ncclBroadcastRingLLKernel_copy_i8(ncclColl)",
    }


def test_a_trace_a_spreadsheet_saved_again(tmp_path: Path) -> None:
    """As public traces were found: re-saved by a spreadsheet (cells unquoted, ``Err:510`` rows where the log's
    lines were) after the program's output."""
    text = (DATA / "nccl_v100.gpu-trace_default.csv").read_text().splitlines()[1:]
    sheet = ["Err:510, command: python example.py,,,,", "Err:510,,,,", *(ln.replace('"', "") for ln in text)]
    path = tmp_path / "trace.csv"
    path.write_text("\n".join(sheet) + "\n")
    assert detect(path) == "nvprof-trace"
    prof = nvprof_trace.read(path)
    assert (len(prof.launches), len(prof.memory_ops)) == (24, 296)


def test_the_printed_trace_is_the_database(records: tuple[list[tuple[object, ...]], list[tuple[object, ...]]]) -> None:
    """``--print-gpu-trace`` as printed: five or six significant digits, the GPU's name cut to its column."""
    path = DATA / "nccl_v100.gpu-trace_printed.txt"
    assert detect(path) == "nvprof-trace"
    prof = nvprof_trace.read(path)
    kernels, copies = records
    want = {(k[0], k[-2], k[-1]): k for k in kernels}  # (name, stream, correlation id) is one launch here
    assert len(prof.launches) == len(want) == 24 and len(prof.memory_ops) == len(copies)
    for k in prof.launches:
        w = want[(k.name, k.stream, k.correlation_id)]
        start, duration = int(str(w[1])), int(str(w[2]))
        assert k.start_ns == pytest.approx(start, rel=5e-5, abs=1) and k.duration_ns == pytest.approx(
            duration, rel=5e-5
        )
        assert (k.grid_blocks, k.block, k.registers) == (Dim3(*w[3]), Dim3(*w[4]), w[5])  # type: ignore[misc]
        assert k.lds_bytes == pytest.approx(w[6], abs=1) and k.device is None  # KB to three decimals
    total = sum(int(str(c[1])) for c in copies)
    assert sum(m.duration_ns for m in prof.memory_ops) == pytest.approx(total, rel=5e-5)
