"""``kscope gap --group-by variant`` (issue 15 item 1): one row per launch configuration of a kernel.

Ground truth: the raw files read with the standard library — the Kineto trace's kernel events grouped by
name and the four args the profiler recorded (grid, block, registers per thread, shared memory), and the
rocprofv3 CSV's rows grouped by name and its own columns (grid and workgroup sizes, VGPRs, LDS) — must give
the same rows, calls and times as kscope's variant table.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from kernelscope import api

DEMO = Path(__file__).parents[1] / "kernelscope" / "data" / "demo"


def _partition(rows: dict[tuple[object, ...], list[float]]) -> dict[str, list[tuple[int, float]]]:
    """name -> sorted (calls, total µs) of its variants."""
    out: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for key, durs in rows.items():
        out[str(key[0])].append((len(durs), round(sum(durs), 1)))
    return {n: sorted(v) for n, v in out.items()}


def _kscope(result: object) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for k in result.kernels:  # type: ignore[attr-defined]
        assert k.variant is not None
        out[k.name].append((k.calls, round(k.total_us, 1)))
    return {n: sorted(v) for n, v in out.items()}


def test_kineto_variants_match_the_raw_events() -> None:
    path = DEMO / "h100_prefill_decode.json.gz"
    raw: dict[tuple[object, ...], list[float]] = defaultdict(list)
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    for e in events:
        if e.get("cat") == "kernel":
            a = e.get("args", {})
            key = (e["name"], *(str(a.get(f)) for f in ("grid", "block", "registers per thread", "shared memory")))
            raw[key].append(e["dur"])
    want = _partition(raw)
    got = _kscope(api.gap_report([path], group_by="variant"))
    assert got.keys() == want.keys()
    for name in want:
        assert [c for c, _ in got[name]] == [c for c, _ in want[name]], name
        assert [t for _, t in got[name]] == pytest.approx([t for _, t in want[name]], abs=0.11), name
    assert sum(len(v) > 1 for v in want.values()) == 12  # names launched in several configurations


def test_rocprof_variants_match_the_csv_columns() -> None:
    path = DEMO / "mi350x" / "flash_attn_func" / "discover_kernel_trace.csv"
    raw: dict[tuple[object, ...], list[float]] = defaultdict(list)
    cols = ("Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z", "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z",
            "VGPR_Count", "LDS_Block_Size")  # fmt: skip
    for r in csv.DictReader(path.open()):
        raw[(r["Kernel_Name"], *(r[c] for c in cols))].append(
            (int(r["End_Timestamp"]) - int(r["Start_Timestamp"])) / 1e3
        )
    got = _kscope(api.gap_report([path], group_by="variant"))
    want = _partition(raw)
    assert got.keys() == want.keys()
    for name in want:
        assert [c for c, _ in got[name]] == [c for c, _ in want[name]], name


def test_the_cli_shows_the_variant_and_json_carries_it() -> None:
    path = DEMO / "h100_prefill_decode.json.gz"
    argv = [sys.executable, "-m", "kernelscope", "gap", str(path), "--group-by", "variant"]
    doc = json.loads(subprocess.run([*argv, "--json"], capture_output=True, text=True, check=True).stdout)
    top = doc["kernels"][0]
    assert (
        set(top["variant"]) == {"grid", "block", "registers", "shared_bytes"}
        and doc["options"]["group_by"] == "variant"
    )
    wide = {**os.environ, "COLUMNS": "200"}
    shown = subprocess.run([*argv, "--top", "3"], capture_output=True, text=True, check=True, env=wide).stdout
    assert "Variant" in shown and "regs" in shown


def test_the_autotune_case_splits_into_its_configs_and_the_workload_ran_two() -> None:
    """The issue's real case, recorded on the H100: 8 autotune configs x 2 shapes are 16 variants of one
    name; the run with the autotune results cached (no benchmarking) names the two the workload used."""
    data = Path(__file__).parent / "data" / "kineto"
    tuning = api.gap_report([data / "h100_matmul_autotune.json.gz"], group_by="variant", include_harness=True)
    cached = api.gap_report([data / "h100_matmul_autotune_cached.json.gz"], group_by="variant")
    variants = {k.variant: k.calls for k in tuning.kernels if k.name == "_matmul"}
    assert len(variants) == 8 * 2
    used = [k for k in cached.kernels if k.name == "_matmul"]
    assert [k.calls for k in used] == [21, 21]
    for k in used:  # each in the autotuning run too, with the benchmarking's calls on top of the 21 real ones
        assert k.variant in variants and variants[k.variant] > 21
