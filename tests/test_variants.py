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


def _raw_variant_counts(path: Path) -> dict[str, int]:
    """name -> distinct (grid, block, registers, shared memory) among its kernel events, read with json."""
    seen: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    with gzip.open(path) as f:
        for e in json.load(f)["traceEvents"]:
            if e.get("cat") == "kernel":
                a = e.get("args", {})
                seen[e["name"]].add(
                    tuple(str(a.get(f)) for f in ("grid", "block", "registers per thread", "shared memory"))
                )
    return {n: len(v) for n, v in seen.items()}


def test_the_default_table_counts_each_rows_variants() -> None:
    """Item 1: a row that holds several launch configurations says how many (Kineto's columns path), as
    many as the raw events show; the records path (rocprofv3's CSV) agrees with its own columns."""
    path = DEMO / "h100_prefill_decode.json.gz"
    want = _raw_variant_counts(path)
    got = {k.name: k.variants for k in api.gap_report([path]).kernels}
    assert got == want and sum(n > 1 for n in got.values()) == 12
    csv_path = DEMO / "mi350x" / "flash_attn_func" / "discover_kernel_trace.csv"
    rows: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    cols = ("Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z", "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z",
            "VGPR_Count", "LDS_Block_Size")  # fmt: skip
    for r in csv.DictReader(csv_path.open()):
        rows[r["Kernel_Name"]].add(tuple(r[c] for c in cols))
    assert {k.name: k.variants for k in api.gap_report([csv_path]).kernels} == {n: len(v) for n, v in rows.items()}


def test_variants_are_counted_over_the_workload_not_the_harness() -> None:
    """The autotune case: 16 variants with the benchmarking kept, as many as the raw trace has; set aside,
    the workload's _matmul row ran as many as the profile whose autotune results were cached (2)."""
    data = Path(__file__).parent / "data" / "kineto"
    marked = data / "h100_matmul_autotune_marked.json.gz"
    kept = api.gap_report([marked], include_harness=True)
    assert next(k.variants for k in kept.kernels if k.name == "_matmul") == _raw_variant_counts(marked)["_matmul"] == 16
    workload = next(k.variants for k in api.gap_report([marked]).kernels if k.name == "_matmul")
    assert workload == _raw_variant_counts(data / "h100_matmul_autotune_marked_cached.json.gz")["_matmul"] == 2
    wide = {**os.environ, "COLUMNS": "200"}
    argv = [sys.executable, "-m", "kernelscope", "gap", str(marked), "--include-harness", "--top", "2"]
    shown = subprocess.run(argv, capture_output=True, text=True, check=True, env=wide).stdout
    assert "Variants" in shown


CACHE = Path(__file__).parent / "data" / "codeobj" / "h100_matmul_autotune_cache"
MARKED = Path(__file__).parent / "data" / "kineto" / "h100_matmul_autotune_marked.json.gz"


def test_each_autotune_variant_joins_the_one_cache_entry_of_its_config() -> None:
    """The 8 autotune configs compiled offline for sm_90a (Triton 3.6, the run's specialization; configs.json
    is what they were compiled with) against the 16 variants CUPTI recorded on the H100: each variant fits
    exactly one binary, whose config launches as many threads and stages as much shared memory as the
    launch shows (the tutorial's A and B tiles in fp16, num_stages - 1 buffers), each binary at both shapes."""
    from kernelscope.analyses.variants import code_for, config_of
    from kernelscope.codeobj.read import read_code_objects

    code = read_code_objects([CACHE])
    configs = json.loads((CACHE / "configs.json").read_text())
    rows = api.gap_report([MARKED], group_by="variant", include_harness=True).kernels
    used: dict[str, int] = defaultdict(int)
    for row in (r for r in rows if r.name == "_matmul"):
        assert row.variant is not None and row.variant.block is not None
        fit = code_for(row.variant, row.name, code)
        assert len(fit) == 1, row.variant
        c = configs[Path(fit[0][0].path).parent.name]
        assert row.variant.block[0] == 32 * c["num_warps"] == 32 * config_of(fit[0][1])["num_warps"]
        tiles = (c["BLOCK_SIZE_M"] + c["BLOCK_SIZE_N"]) * c["BLOCK_SIZE_K"] * 2
        assert row.variant.shared_bytes == tiles * (c["num_stages"] - 1)
        used[fit[0][0].path] += 1
    assert sorted(used.values()) == [2] * 8


def test_gap_fit_and_report_read_the_code_object_of_the_variant_that_ran() -> None:
    """The workload's _matmul (harness set aside) joins the binary that fits its top variant — the same
    launch configuration as the profile whose autotune results were cached; ``fit --trace`` and the
    report's occupancy finding show that binary alone instead of all 8 in the cache."""
    from kernelscope.analyses.variants import fits
    from kernelscope.codeobj.read import read_code_objects

    row = next(r for r in api.gap_report([MARKED], code=[CACHE]).kernels if r.name == "_matmul")
    cached = next(
        r
        for r in api.gap_report([MARKED.with_name("h100_matmul_autotune_marked_cached.json.gz")]).kernels
        if r.name == "_matmul"
    )
    assert row.top_variant == cached.top_variant and len(row.code) == 1
    assert row.config is not None and row.config["num_warps"] * 32 == row.top_variant.block[0]  # type: ignore[index]
    fitted = api.fit([CACHE], trace=[MARKED]).kernels
    assert len(api.fit([CACHE]).kernels) == 8 and len(fitted) == 1
    assert next(g.used for g in fitted[0].gauges if g.label == "registers/thread") == row.top_variant.registers
    findings = [f for f in api.report([MARKED], code=[CACHE]).headline if f.topic == "occupancy"]
    assert [f.evidence for f in findings] == row.code and "the variant that ran most" in findings[0].text
    assert sum(fits(row.top_variant, k) for o in read_code_objects([CACHE]) for k in o.kernels) == 1


def test_amd_registers_fit_at_the_allocation_granule() -> None:
    """rocprofv3 reports VGPRs as allocated (granules of 8 on gfx942); the code object's count is exact."""
    from kernelscope.analyses.variants import fits
    from kernelscope.model.codeobj import KernelCode
    from kernelscope.model.gap import Variant

    k = KernelCode(name="k", arch="gfx942", vendor="amd", vgpr=61, arch_vgpr=61, wave_size=64)
    assert fits(Variant(registers=64), k) and fits(Variant(registers=61), k)
    assert not fits(Variant(registers=72), k) and not fits(Variant(registers=56), k)


def test_suggest_reads_the_binary_of_the_variant_that_ran() -> None:
    """suggest's evidence joins _matmul to the one binary of the 8 that fits its top variant, not the first."""
    from kernelscope.analyses.suggest.evidence import Evidence, kernels
    from kernelscope.analyses.variants import fits
    from kernelscope.codeobj.read import read_code_objects

    gap = api.gap_report([MARKED])
    code = read_code_objects([CACHE])
    facts, notes = kernels(Evidence(gap=gap, code=code))
    matmul = next(f for f in facts if f.name == "_matmul")
    top = next(r.top_variant for r in gap.kernels if r.name == "_matmul")
    assert matmul.code is not None and top is not None and fits(top, matmul.code)
    assert any("fits the variant that ran most" in n for n in notes)


def test_a_malformed_grid_is_no_grid_not_an_unreadable_trace(tmp_path: Path) -> None:
    """The default (columns) path reads a grid of two numbers or of text as "not recorded", as the records
    path does: the launch still counts, its variant is the block alone."""
    grids: list[object] = [[1, 2, 3], [1, 2], ["a", 1, 1], [4, 4, 4]]
    events = [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0 + i, "dur": 0.5,
         "args": {"device": 0, "correlation": i, "grid": g, "block": [128, 1, 1]}}
        for i, g in enumerate(grids)
    ]  # fmt: skip
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    row = api.gap_report([path]).kernels[0]
    assert row.calls == 4 and row.variants == 3
    assert row.top_variant is not None and row.top_variant.grid is None and row.top_variant.block == (128, 1, 1)


LEDGER_RUN = Path(__file__).parent / "data" / "launches" / "h100_matmul_cached"


def test_a_rows_config_names_its_constexprs_from_the_launch_ledger() -> None:
    """kscope profile's folder (trace + launch ledger) of the autotuned matmul with its results cached: each
    variant row's config has the constexprs its launches ran, and they are the compile manifest's for the
    one binary that fits the variant (configs.json, written when the cache was compiled: independent)."""
    manifest = json.loads((CACHE / "configs.json").read_text())
    got = api.gap_report([LEDGER_RUN], group_by="variant", code=[CACHE])
    rows = [r for r in got.kernels if r.name == "_matmul"]
    assert len(rows) == 2 and sum(r.calls for r in rows) == 42
    for r in rows:
        [binary] = r.code
        assert r.config is not None
        want = manifest[Path(binary).parent.name]
        assert {k: r.config[k] for k in want} == want  # BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps, num_stages
    by_name = api.gap_report([LEDGER_RUN])  # without code objects: the top variant's constexprs alone
    [row] = [r for r in by_name.kernels if r.name == "_matmul"]
    assert row.config is not None
    assert {"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M"} <= set(row.config)
    assert row.dtype == "fp16"  # the name says none; examples/tune/matmul.py launches it on float16 tensors
    assert api.gap_report([LEDGER_RUN], group_by="function").kernels[0].config is None  # rows are not kernels


def test_a_broken_ledger_costs_the_configs_not_the_table(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for f in LEDGER_RUN.iterdir():
        (run / f.name).write_bytes(f.read_bytes())
    ledger = next(run.glob("launches_*.jsonl"))
    ledger.write_bytes(ledger.read_bytes()[:-300])  # killed while writing
    got = api.gap_report([run])
    assert sum(r.calls for r in got.kernels if r.name == "_matmul") == 42
    assert all(r.config is None for r in got.kernels)
    [warning] = [w for w in got.warnings if "Triton configs not named" in w]
    assert ledger.name in warning and "\n" not in warning
