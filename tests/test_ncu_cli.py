"""``kscope ncu`` end to end (subprocess), its parity with ``api.ncu``, and ``roofline_costs`` against
independent counts (the raw-page CSV parsed with csv alone, the GEMM's 2*M*N*K, the details page's bandwidth)."""

from __future__ import annotations

import csv
import gzip
import importlib
import inspect
import io
import json
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
import typer
from conftest import assert_one_error_line

from kernelscope import api
from kernelscope.analyses.ncu import roofline_costs

Kscope = Callable[..., CompletedProcess[str]]
DATA = Path(__file__).parent / "data" / "ncu"
REP = DATA / "h100_triton_softmax_mm.ncu-rep"
SOURCE_CSV = DATA / "h100_triton_source_sass.csv.gz"
DETAILS = DATA / "h100_triton_details.csv"
GEMM_RAW = DATA / "h100_gemm_softmax_ln_raw.csv.gz"
# FLOPs per predicated-on thread instruction, as ncu's SpeedOfLight_Hierarchical{Double,Single,Half}RooflineChart
# sections weigh them (derived__..._x2 / _x4 metrics): FMA 2, packed half HADD2/HMUL2 2, HFMA2 4.
NCU_FLOP_WEIGHTS = {"dadd": 1, "dmul": 1, "dfma": 2, "fadd": 1, "fmul": 1, "ffma": 2, "hadd": 2, "hmul": 2, "hfma": 4}


def _json(proc: CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


@pytest.mark.parametrize("path", [REP, SOURCE_CSV], ids=["ncu-rep", "csv"])
def test_json_schema(kscope: Kscope, path: Path) -> None:
    if path == REP:
        pytest.importorskip("ncu_report")
    doc = _json(kscope("ncu", path, "--json", "--top", "3", "--context", "1"))
    assert doc["schema"] == "kernelscope.ncu.v1" and doc["source"] == str(path)
    assert [k["name"] for k in doc["kernels"]] == ["softmax_k", "mm_k"]
    for k in doc["kernels"]:
        assert {"name", "duration_ns", "stall_samples", "stall_breakdown", "hotspots", "lines", "headline"} <= set(k)
        assert len(k["hotspots"]) == 3
        for h in k["hotspots"]:
            assert {"address", "instruction", "stall_samples", "reasons", "executed", "source", "context"} <= set(h)
            assert len(h["context"]) == 3 and h["context"][1]["address"] == h["address"]
        assert sum(s["samples"] for s in k["stall_breakdown"]) == k["stall_samples"]
    soft = doc["kernels"][0]
    assert soft["hotspots"][0]["address"] == 0x7F61077AEBD0 and soft["hotspots"][0]["stall_samples"] == 1486
    if path == REP:
        assert soft["duration_ns"] == 42912 and soft["lines"][0]["source"] == "/tmp/tk.py:5"
    else:
        assert soft["duration_ns"] is None and soft["lines"] == []


def test_kernel_filter_and_text_outputs(kscope: Kscope, tmp_path: Path) -> None:
    doc = _json(kscope("ncu", SOURCE_CSV, "--json", "--kernel", "^mm"))
    assert [k["name"] for k in doc["kernels"]] == ["mm_k"]
    md = kscope("ncu", SOURCE_CSV, "--markdown", "--top", "2")
    assert md.returncode == 0, md.stderr
    assert "## [1] mm_k — top instructions by stall samples" in md.stdout
    assert "| 1 | 0x7f61077bc8b0 | +0xeb0 | 5363 |" in md.stdout
    text = kscope("ncu", SOURCE_CSV, "--top", "2")
    assert text.returncode == 0, text.stderr
    assert "long_scoreboard" in text.stdout and "> 0x01d0  PRMT R15, R4, 0x7632, R15" in text.stdout
    out = kscope("ncu", SOURCE_CSV, "-o", tmp_path / "ncu.json")
    assert out.returncode == 0 and json.loads((tmp_path / "ncu.json").read_text())["schema"] == "kernelscope.ncu.v1"


@pytest.mark.parametrize(
    "case",
    ["missing", "directory", "details-page", "random", "truncated-csv", "truncated-rep", "no-match", "top-0"],
)
def test_bad_input_is_one_error_line(kscope: Kscope, tmp_path: Path, case: str) -> None:
    if case == "truncated-rep":
        pytest.importorskip("ncu_report")
    cut = tmp_path / "cut.csv"
    cut.write_bytes(gzip.decompress(SOURCE_CSV.read_bytes())[:30_000])
    junk = tmp_path / "junk.ncu-rep"
    junk.write_bytes(bytes(range(256)) * 16)
    rep = tmp_path / "cut.ncu-rep"
    rep.write_bytes(REP.read_bytes()[: REP.stat().st_size // 2])
    cases: dict[str, list[str | Path]] = {
        "missing": [tmp_path / "missing.ncu-rep"],
        "directory": [tmp_path],
        "details-page": [DETAILS],
        "random": [junk],
        "truncated-csv": [cut],
        "truncated-rep": [rep],
        "no-match": [SOURCE_CSV, "--kernel", "nothing_like_this"],
        "top-0": [SOURCE_CSV, "--top", "0"],
    }
    assert_one_error_line(kscope("ncu", *cases[case]))


def test_cli_options_match_the_library() -> None:
    from kernelscope.cli import app

    lib = inspect.signature(api.ncu)
    cli = inspect.signature(importlib.import_module("kernelscope.cli.ncu").ncu, eval_str=True)
    params = {p.name: p for p in typer.main.get_command(app).commands["ncu"].params}  # type: ignore[attr-defined]
    assert "report" in params and params["report"].required  # the file is the argument (api: path)
    for name, param in lib.parameters.items():
        if name == "path":
            continue
        assert name in cli.parameters, name
        assert cli.parameters[name].default == param.default == params[name].default, name
        assert "--" + name in params[name].opts


# --- roofline_costs ---------------------------------------------------------------------------------------


def test_roofline_costs_of_the_report() -> None:
    pytest.importorskip("ncu_report")
    soft, mm = roofline_costs(REP)
    assert (soft.name, mm.name) == ("softmax_k", "mm_k")
    assert mm.flops == mm.tensor_flops == 2 * 4096**3  # the 4096^3 GEMM, counted by ncu's tensor-op metric
    assert mm.flops_source == "sm__ops_path_tensor_src_bf16_dst_fp32.sum"
    assert soft.tensor_flops == 0 and soft.flops is not None
    # softmax: one FMUL per element for exp's scaling, one for 1/sum; the FADDs add the reductions' steps
    assert soft.flops_source is not None and "fmul" in soft.flops_source and "fadd" in soft.flops_source
    assert soft.flops >= 2 * 8192 * 4096 + 8192 * 4096
    assert (soft.duration_ns, mm.duration_ns) == (42_912, 238_048)
    # DRAM bytes / duration is the details page's "Memory Workload Analysis / Memory Throughput"
    with DETAILS.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["Section Name"] == "Memory Workload Analysis"]
    for c in (soft, mm):
        row = next(r for r in rows if r["Kernel Name"] == c.name and r["Metric Name"] == "Memory Throughput")
        scale = {"Gbyte/s": 1e9, "Tbyte/s": 1e12}[row["Metric Unit"]]
        printed = float(row["Metric Value"])
        assert c.dram_bytes is not None and c.dram_bytes_source == "dram__bytes_read.sum + dram__bytes_write.sum"
        half_digit = 0.5 * 10 ** -len(row["Metric Value"].partition(".")[2])
        assert abs(c.dram_bytes / (c.duration_ns * 1e-9) / scale - printed) <= half_digit


_SCALE = {"": 1.0, "byte": 1.0, "Mbyte": 1e6, "cycle": 1.0, "inst/cycle": 1.0}


def _raw_page() -> list[dict[str, float | str]]:
    """The raw page's kernels, numbers scaled by the units row (row 2) to base units."""
    rows = list(csv.reader(io.StringIO(gzip.decompress(GEMM_RAW.read_bytes()).decode())))
    header, units = rows[0], rows[1]
    name = header.index("Kernel Name")
    numeric = [i for i, h in enumerate(header) if h.startswith(("sm", "dram__bytes_")) and units[i] in _SCALE]
    out: list[dict[str, float | str]] = []
    for row in rows[2:]:
        kernel: dict[str, float | str] = {"Kernel Name": row[name]}
        kernel.update({header[i]: float(row[i].replace(",", "")) * _SCALE[units[i]] for i in numeric if row[i]})
        out.append(kernel)
    return out


def test_roofline_costs_of_a_raw_page_export() -> None:
    """The formula of ncu's roofline charts, applied here to the raw CSV with csv alone."""
    costs = roofline_costs(GEMM_RAW)
    rows = _raw_page()
    assert [c.name for c in costs] == [r["Kernel Name"] for r in rows]
    for c, r in zip(costs, rows, strict=True):
        v: dict[str, float] = {k: x for k, x in r.items() if isinstance(x, float)}
        cycles = v["smsp__cycles_elapsed.avg"]
        vector = sum(w * v[f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed"] * cycles
                     for op, w in NCU_FLOP_WEIGHTS.items())  # fmt: skip
        tensor = sum(
            v[f"sm__ops_path_tensor_src_{t}.sum"]
            for t in ("bf16_dst_fp32", "fp16", "tf32_dst_fp32", "fp64", "fp8_sparsity_off", "fp8_sparsity_on")
        )
        assert c.flops == pytest.approx(vector + tensor, rel=1e-6, abs=16), c.name  # 6 printed decimals
        assert c.tensor_flops == tensor
        assert c.dram_bytes == pytest.approx(v["dram__bytes_read.sum"] + v["dram__bytes_write.sum"])
    nvjet = [c for c in costs if c.name.startswith("nvjet")]
    assert len(nvjet) == 2 and all(c.flops == 2 * 4096**3 for c in nvjet)  # 4096^2 bf16 matmul


def test_roofline_costs_without_counters() -> None:
    soft, _ = roofline_costs(DETAILS)  # the details page names metrics by label: no counters to read
    assert soft.flops is None and soft.dram_bytes is None and soft.flops_source is None
    assert soft.duration_ns == 42_910 and soft.duration_source == "GPU Speed Of Light Throughput/Duration"
