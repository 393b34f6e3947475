"""Nsight Compute readers: the CSV pages and the .ncu-rep, checked against each other and against bad input.

Ground truth comes from the fixtures themselves, parsed here with the csv module alone: the details page
prints durations rounded to two decimals of its display unit, so comparisons allow half a last digit.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import pickle
import sys
from pathlib import Path

import pytest

from kernelscope import readers
from kernelscope.errors import FormatError, MissingToolError
from kernelscope.model import Dim3, Profile
from kernelscope.readers import _ncu, ncu_csv, ncu_rep

DATA = Path(__file__).parent / "data" / "ncu"
REP = DATA / "h100_triton_softmax_mm.ncu-rep"
TRITON_DETAILS = DATA / "h100_triton_details.csv"
GEMM_DETAILS = DATA / "h100_gemm_softmax_ln_details.csv.gz"
GEMM_RAW = DATA / "h100_gemm_softmax_ln_raw.csv.gz"
_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def _text(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode()


def _details_truth(path: Path) -> dict[str, dict[str, object]]:
    """Per kernel name: duration (ns) and its rounding tolerance, grid, block, registers, from the CSV."""
    out: dict[str, dict[str, object]] = {}
    for row in csv.DictReader(io.StringIO(_text(path))):
        k = out.setdefault(
            row["Kernel Name"],
            {"grid": row["Grid Size"], "block": row["Block Size"]},
        )
        if row["Section Name"] == "GPU Speed Of Light Throughput" and row["Metric Name"] == "Duration":
            value = row["Metric Value"]
            decimals = len(value.partition(".")[2])
            k["duration_ns"] = float(value) * _NS[row["Metric Unit"]]
            k["tolerance_ns"] = 0.5 * 10**-decimals * _NS[row["Metric Unit"]]
        if row["Section Name"] == "Launch Statistics" and row["Metric Name"] == "Registers Per Thread":
            k["registers"] = int(row["Metric Value"])
    return out


def _dim(text: object) -> Dim3:
    x, y, z = (int(v) for v in str(text).strip("()").split(","))
    return Dim3(x, y, z)


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


# --- sniffing and dispatch ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "fmt"),
    [(REP, "ncu-rep"), (TRITON_DETAILS, "ncu-csv"), (GEMM_DETAILS, "ncu-csv"), (GEMM_RAW, "ncu-csv")],
)
def test_detect(path: Path, fmt: str) -> None:
    assert readers.detect(path) == fmt


def test_detect_ignores_the_extension(tmp_path: Path) -> None:
    renamed = _write(tmp_path, "export.txt", TRITON_DETAILS.read_bytes())
    assert readers.detect(renamed) == "ncu-csv"


# --- CSV -------------------------------------------------------------------------------------------------


def test_details_page_records() -> None:
    prof = readers.read(TRITON_DETAILS)
    assert prof.timing == "serialized"
    assert prof.formats == ["ncu-csv"] and prof.metadata["ncu_page"] == "details"
    assert [k.name for k in prof.launches] == ["softmax_k", "mm_k"]
    soft, mm = prof.launches
    assert all(k.start_ns is None and k.end_ns is None and k.correlation_id is None for k in prof.launches)
    assert all(k.vendor == "nvidia" and k.device == 0 and k.stream == 7 for k in prof.launches)
    assert soft.duration_ns == 42910 and mm.duration_ns == 238050  # "42.91 us", "238.05 us"
    assert mm.grid_blocks == Dim3(32, 32, 1) and mm.block == Dim3(256, 1, 1)
    assert mm.grid_items == Dim3(32 * 256, 32, 1)
    assert (soft.registers, mm.registers) == (32, 110)
    assert soft.lds_bytes == 32  # 0 static + 32 dynamic, "byte/block"
    assert mm.lds_bytes == 98_300  # "98.30 Kbyte/block": the details page rounds 98,304
    assert [(d.index, d.vendor, d.arch) for d in prof.devices] == [(0, "nvidia", "sm_90")]


def test_details_metrics_are_numeric_and_in_base_units() -> None:
    soft = ncu_csv.read(TRITON_DETAILS).launches[0]
    m = soft.metrics or {}
    units = ncu_csv.read(TRITON_DETAILS).metadata["metric_units"]
    assert m["GPU Speed Of Light Throughput/Elapsed Cycles"] == 67_711  # "67,711"
    assert m["GPU Speed Of Light Throughput/DRAM Frequency"] == pytest.approx(2.62e9)  # "2.62 Ghz"
    assert units["GPU Speed Of Light Throughput/DRAM Frequency"] == "hz"
    assert m["Memory Workload Analysis/Memory Throughput"] == pytest.approx(2.64e12)  # "2.64 Tbyte/s"
    assert units["Memory Workload Analysis/Memory Throughput"] == "byte/s"
    assert m["GPU Speed Of Light Throughput/Memory Throughput"] == 78.81  # same name, other section: "%"
    assert "Launch Statistics/Enabled TPC IDs" not in m  # "all": text, not a number
    assert all(isinstance(v, float) for v in m.values())


def test_details_and_raw_pages_agree() -> None:
    details, raw = ncu_csv.read(GEMM_DETAILS), ncu_csv.read(GEMM_RAW)
    assert raw.metadata["ncu_page"] == "raw"
    assert len(details.launches) == len(raw.launches) == 10
    for d, r in zip(details.launches, raw.launches, strict=True):
        assert d.name == r.name
        assert abs(d.duration_ns - r.duration_ns) <= 5, d.name  # details: 2 decimals of us
        assert (d.grid_blocks, d.block, d.grid_items) == (r.grid_blocks, r.block, r.grid_items)
        assert d.registers == r.registers
        assert d.stream == r.stream and d.device == r.device
        assert d.lds_bytes is not None and r.lds_bytes is not None and abs(d.lds_bytes - r.lds_bytes) <= 5
    nvjet = raw.launches[2]
    assert nvjet.name.startswith("nvjet_sm90")
    assert nvjet.duration_ns == 207_616  # "207.616000 us" in the raw page
    assert nvjet.lds_bytes == 213_188  # 0 static + "213.188000 Kbyte/block" dynamic
    assert nvjet.registers == 168 and nvjet.grid_blocks == Dim3(2, 66, 1)
    assert raw.devices[0].name == "NVIDIA H100 80GB HBM3" and raw.devices[0].compute_units == 132


def test_negative_or_infinite_metric_cells_are_damage_not_values(tmp_path: Path) -> None:
    """ncu's counters, rates and percentages are never negative: fuzzing put -1e18 in a raw-page cell and it
    reached the profile as a metric. Such a cell (or an infinite one) is read as absent, like NaN."""
    rows = list(csv.reader(io.StringIO(gzip.decompress((DATA / "h100_softmax_slow_raw.csv.gz").read_bytes()).decode())))
    header = rows[0]
    col = header.index("dram__bytes_read.sum")
    tensor = next(i for i, h in enumerate(header) if h.startswith("sm__pipe_tensor_op_hmma_cycles_active"))
    rows[2][col], rows[2][tensor] = "-1e+18", "inf"
    damaged = tmp_path / "raw.csv"
    with damaged.open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    (k,) = readers.read(damaged).launches
    assert k.metrics is not None and "dram__bytes_read.sum" not in k.metrics and header[tensor] not in k.metrics
    assert all(v >= 0 for v in k.metrics.values())
    (good,) = readers.read(DATA / "h100_softmax_slow_raw.csv.gz").launches
    assert good.metrics is not None and "dram__bytes_read.sum" in good.metrics


def test_raw_metrics_exclude_device_constants() -> None:
    raw = ncu_csv.read(GEMM_RAW)
    m = raw.launches[0].metrics or {}
    assert m["launch__grid_size"] == 1056  # "1,056"
    assert m["gpu__time_duration.sum"] == pytest.approx(52_896)
    assert raw.metadata["metric_units"]["launch__shared_mem_per_block_dynamic"] == "byte/block"
    assert not any(k.startswith(("device__attribute_", "profiler__")) for k in m)


@pytest.mark.parametrize(
    ("unit", "factor", "base"),
    [
        ("us", 1e3, "ns"),
        ("msecond", 1e6, "ns"),
        ("ns", 1.0, "ns"),
        ("Kbyte/block", 1e3, "byte/block"),
        ("Tbyte/s", 1e12, "byte/s"),
        ("Gbyte/second", 1e9, "byte/s"),
        ("Ghz", 1e9, "hz"),
        ("cycle/nsecond", 1e9, "hz"),
        ("sector/ms", 1e3, "sector/s"),
        ("%/Kbyte", 1e-3, "%/byte"),
        ("inst/cycle", 1.0, "inst/cycle"),
        ("%", 1.0, "%"),
        ("", 1.0, ""),
    ],
)
def test_unit_scale(unit: str, factor: float, base: str) -> None:
    got_factor, got_base = _ncu.unit_scale(unit)
    assert got_factor == pytest.approx(factor) and got_base == base


def test_profile_round_trips_metrics() -> None:
    prof = ncu_csv.read(TRITON_DETAILS)
    back = Profile.from_json(prof.to_json())
    assert back.launches == prof.launches and back.timing == "serialized"


def test_a_bad_saved_profile_is_one_format_error_with_its_fields(tmp_path: Path) -> None:
    bad = tmp_path / "p.json"
    bad.write_text("[1,")
    with pytest.raises(FormatError) as info:
        Profile.load(bad)
    e = info.value
    assert (e.path, e.expected, e.fix) == (bad, "a kernelscope.profile.v1 document", "")
    assert str(e) == f"{bad}: expected {e.expected}, found {e.found}" and "expected" not in e.found
    again = pickle.loads(pickle.dumps(e))  # what a worker process sends back
    assert (type(again), str(again), again.found) == (FormatError, str(e), e.found)


# --- .ncu-rep ---------------------------------------------------------------------------------------


def test_report_matches_its_details_export() -> None:
    pytest.importorskip("ncu_report")
    prof = readers.read(REP)
    truth = _details_truth(TRITON_DETAILS)
    assert prof.timing == "serialized" and prof.formats == ["ncu-rep"]
    assert [k.name for k in prof.launches] == ["softmax_k", "mm_k"]
    for k in prof.launches:
        t = truth[k.name]
        assert abs(k.duration_ns - float(t["duration_ns"])) <= float(t["tolerance_ns"]), k.name  # type: ignore[arg-type]
        assert k.grid_blocks == _dim(t["grid"]) and k.block == _dim(t["block"])
        assert k.registers == t["registers"]
        assert k.start_ns is None and k.vendor == "nvidia" and k.stream == 7 and k.device == 0
    soft, mm = prof.launches
    assert (soft.duration_ns, mm.duration_ns) == (42_912, 238_048)  # exact in the report
    assert (soft.lds_bytes, mm.lds_bytes) == (32, 98_304)  # 3 stages x (128x64 + 64x128) bf16
    assert mm.mangled is None  # Triton kernels are extern "C"
    dev = prof.devices[0]
    assert (dev.index, dev.name, dev.arch, dev.compute_units) == (0, "NVIDIA H100 80GB HBM3", "sm_90", 132)


def test_report_metrics_use_the_raw_page_names_and_units() -> None:
    pytest.importorskip("ncu_report")
    rep = ncu_rep.read(REP)
    raw = ncu_csv.read(GEMM_RAW)
    rep_units, raw_units = rep.metadata["metric_units"], raw.metadata["metric_units"]
    assert set(rep_units) == set(raw_units)
    # the one difference is Nsight's own: the report says "request", the raw page prints no unit
    assert {k for k in rep_units if rep_units[k] != raw_units[k]} <= {"idc__requests.sum"}
    m = rep.launches[1].metrics or {}
    assert m["gpu__time_duration.sum"] == 238_048 and m["launch__grid_size"] == 1024
    assert all(isinstance(v, float) for v in m.values())


def test_report_without_the_wheel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # makes `import ncu_report` raise ImportError
    with pytest.raises(MissingToolError, match="ncu-report"):
        ncu_rep.read(REP)


# --- bad input ------------------------------------------------------------------------------------


def test_truncated_details_csv(tmp_path: Path) -> None:
    data = TRITON_DETAILS.read_bytes()
    for cut in (len(data) // 2, len(data) - 3, data.rindex(b'"0"') + 3):  # mid-row, mid-field, after a field
        with pytest.raises(FormatError, match="truncated"):
            ncu_csv.read(_write(tmp_path, f"cut{cut}.csv", data[:cut]))


def test_truncated_raw_csv(tmp_path: Path) -> None:
    text = gzip.decompress(GEMM_RAW.read_bytes())
    with pytest.raises(FormatError):
        ncu_csv.read(_write(tmp_path, "cut.csv", text[: len(text) * 2 // 3]))
    with pytest.raises(FormatError):  # the gzip stream itself cut short
        ncu_csv.read(_write(tmp_path, "cut.csv.gz", GEMM_RAW.read_bytes()[:30_000]))


def test_header_only_csv(tmp_path: Path) -> None:
    header = TRITON_DETAILS.read_bytes().split(b"\n", 1)[0] + b"\n"
    with pytest.raises(FormatError, match="no kernel rows"):
        ncu_csv.read(_write(tmp_path, "empty.csv", header))


@pytest.mark.parametrize(
    "text",
    [
        # rocprofv3 kernel_trace.csv
        '"Kind","Agent_Id","Queue_Id","Kernel_Id","Kernel_Name","Start_Timestamp","End_Timestamp"\n'
        '"KERNEL_DISPATCH",1,1,3,"add_kernel",100,200\n',
        # Nsight Compute's own source page: a CSV, but no launches
        '"Kernel Name","softmax_k",\n"Address","Source","# Samples"\n"0x7f0","MOV R1, c[0x0][0x28]","0"\n',
        "",
    ],
    ids=["rocprof", "ncu-source-page", "empty"],
)
def test_csv_of_another_tool(tmp_path: Path, text: str) -> None:
    with pytest.raises(FormatError, match="Nsight Compute CSV header"):
        ncu_csv.read(_write(tmp_path, "other.csv", text.encode()))


def test_random_bytes_named_ncu_rep(tmp_path: Path) -> None:
    # the magic is checked before the wheel is imported: this test needs no ncu_report
    rnd = _write(tmp_path, "random.ncu-rep", os.urandom(4096))
    with pytest.raises(FormatError, match="NVR"):
        ncu_rep.read(rnd)


def test_tiny_ncu_rep(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="at least"):
        ncu_rep.read(_write(tmp_path, "tiny.ncu-rep", REP.read_bytes()[:16]))


@pytest.mark.parametrize("keep", [0.5, 0.99, 0.9999])
def test_truncated_ncu_rep(tmp_path: Path, keep: float) -> None:
    pytest.importorskip("ncu_report")
    data = REP.read_bytes()
    cut = _write(tmp_path, "cut.ncu-rep", data[: int(len(data) * keep)])
    with pytest.raises(FormatError, match="truncated"):
        ncu_rep.read(cut)


def test_ncu_magic_then_garbage(tmp_path: Path) -> None:
    pytest.importorskip("ncu_report")
    junk = _write(tmp_path, "junk.ncu-rep", ncu_rep.MAGIC + os.urandom(4096))
    with pytest.raises(FormatError):
        ncu_rep.read(junk)
