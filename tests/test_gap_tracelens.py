"""The gap analysis of a real PyTorch trace against AMD TraceLens's own report of the same trace.

Ground truth: ``tracelens_h100_qwen_step.gpu_timeline.csv``, the ``gpu_timeline.csv`` TraceLens's perf report
wrote for this trace (its repository's test reference, AMD-AGI/TraceLens@171dd747), which times the profiled
step's GPU window; and the trace's events read here with ``json``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import API_CATS, KERNEL_CAT, csv_rows

from kernelscope import api

_DIR = Path(__file__).parent / "data" / "kineto"
_TRACE = _DIR / "tracelens_h100_qwen_step.json.gz"


def _timeline() -> dict[str, float]:
    return {r["type"]: float(r["time ms"]) * 1000 for r in csv_rows(_DIR / "tracelens_h100_qwen_step.gpu_timeline.csv")}


def test_the_profiled_step_matches_tracelens() -> None:
    want = _timeline()
    got = api.gap_report([_TRACE], window="1", include_memory=True).totals
    assert got.busy_time_us == pytest.approx(want["busy_time"], abs=0.05)
    assert got.wall_time_us == pytest.approx(want["total_time"], abs=0.05)
    assert got.idle_time_us == pytest.approx(want["idle_time"], abs=0.05)


def test_kernels_launched_before_the_capture_are_named() -> None:
    """436 kernels of this trace have no launch call in it: they were queued before the capture began and ran
    first. The whole-trace table counts them (30 % of its kernel time) and says so; the step window does not."""
    events = json.loads(gzip.decompress(_TRACE.read_bytes()))["traceEvents"]
    calls = {e["args"]["correlation"] for e in events if e.get("cat") in API_CATS}
    kernels = [e for e in events if e.get("cat") == KERNEL_CAT]
    first = min(e["ts"] for e in kernels if e["args"]["correlation"] in calls)
    early = [e for e in kernels if e["args"]["correlation"] not in calls and e["ts"] < first]
    assert early, "the case: kernels launched before the capture"
    for copies in (False, True):  # copies are never linked to their calls: not counted among them
        whole = api.gap_report([_TRACE], include_memory=copies)
        said = [w for w in whole.warnings if "before the capture began" in w]
        assert len(said) == 1
        assert said[0].startswith(f"{len(early)} kernels ({sum(e['dur'] for e in early):,.1f} us")
    assert not [w for w in api.gap_report([_TRACE], window="1").warnings if "before the capture" in w]


def test_the_report_says_what_its_gap_table_includes() -> None:
    done = api.report([_TRACE])
    assert [n for n in done.notes if n.startswith("gap: ") and "launched before the capture began" in n]
    assert done.roofline is not None  # the GPU is named after the events (test_reader_kineto)


@pytest.mark.parametrize("table", ["GEMM", "BinaryElementwise"])
def test_roofline_costs_match_tracelens_perf_model(table: str) -> None:
    """Each op's FLOPs and bytes per call, from its recorded shapes, equal those TraceLens's perf model wrote
    for the same op (its ``GFLOPS_first`` and ``Data Moved (MB)_first``, MB = MiB)."""
    points = {p.label: p for p in api.roofline(_TRACE).points}
    matched = 0
    for r in csv_rows(_DIR / f"tracelens_h100_qwen_step.{table}.csv"):
        p = points.get(f"{r['name']} {r['Input Dims_first']}")
        if p is None:
            continue
        matched += 1
        assert p.flops / p.calls == pytest.approx(float(r["GFLOPS_first"]) * 1e9, rel=1e-9), p.label
        assert p.bytes / p.calls == pytest.approx(float(r["Data Moved (MB)_first"]) * 2**20, rel=1e-6), p.label
    assert matched >= 2


def test_causal_attention_cost_matches_tracelens_but_for_the_diagonal() -> None:
    """TraceLens counts a causal attention's scores as half the square; kscope counts those the mask keeps,
    the diagonal included (N(N+1)/2 per head): FLOPs larger by (N+1)/N, bytes the same."""
    (r,) = csv_rows(_DIR / "tracelens_h100_qwen_step.SDPA_fwd.csv")
    assert r["param: causal"] == "True"
    n, (p,) = int(r["param: N_Q"]), [p for p in api.roofline(_TRACE).points if "flash_attention" in p.label]
    assert p.flops / p.calls == pytest.approx(float(r["GFLOPS_first"]) * 1e9 * (n + 1) / n, rel=1e-9)
    assert p.bytes / p.calls == pytest.approx(float(r["Data Moved (MB)_first"]) * 2**20, rel=1e-6)
