"""Graph replays attributed to their captured op calls, against AMD TraceLens's report of the same traces.

Fixtures (tests/data/kineto/README.md): vLLM (FULL CUDA-graph decode of gpt-oss) and SGLang (Qwen3-8B decode)
on an MI300X, each a replay trace whose graph kernels have no op, and a trace of the graph's capture (trimmed to
the events read, by ``trim_capture.py``). Ground truth: TraceLens's ``ops_summary.csv`` (per op: calls and
kernel time, after merging the capture into the replay) and ``GEMM.csv`` for the same traces, from its repository.
TraceLens counts an op's memory copies as its kernels and kscope does not; the tests take that out of its
numbers with the copies read from the trace here.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import assert_one_error_line, csv_rows, run_kscope

from kernelscope import api
from kernelscope.analyses.graph_ops import attribute
from kernelscope.model import KernelLaunch
from kernelscope.model.ops import CapturedLaunch, OpCall
from kernelscope.readers import kineto

_DIR = Path(__file__).parent / "data" / "kineto"
CASES = ["tracelens_vllm_decode_full", "tracelens_mi300x_sglang_decode"]


def _copies(trace: Path) -> dict[str, tuple[int, float]]:
    """Per op name: its calls that moved memory only, and its copies' µs (what TraceLens adds to its kernels)."""
    events = json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    ops = {
        e["args"]["External id"]: e["name"]
        for e in events
        if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})
    }
    moved: dict[int, float] = defaultdict(float)
    ran: set[int] = set()
    for e in events:
        ext = (e.get("args") or {}).get("External id")
        if e.get("cat") in ("gpu_memcpy", "gpu_memset"):
            moved[ext] += e["dur"]
        elif e.get("cat") == "kernel":
            ran.add(ext)
    out: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for ext, us in moved.items():
        if ext in ops:
            out[ops[ext]][0] += ext not in ran
            out[ops[ext]][1] += us
    return {name: (int(calls), us) for name, (calls, us) in out.items()}


@pytest.mark.parametrize("case", CASES)
def test_every_op_as_tracelens_merges_the_capture(case: str) -> None:
    trace, capture = _DIR / f"{case}.json.gz", _DIR / f"{case}.capture.json.gz"
    found = attribute(kineto.read(trace).launches, kineto.read_captured(capture))
    assert found.kernels > 400 and found.kernels_attributed == found.kernels  # every replayed kernel
    assert (found.replays, found.attributed, found.ambiguous) == (1, 1, 0)
    calls = kineto.read_ops(trace)[0].ops + found.calls
    mine: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for c in calls:
        mine[c.op][0] += 1
        mine[c.op][1] += c.kernel_ns / 1000
    want: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for r in csv_rows(_DIR / f"{case}.ops_summary.csv"):
        want[r["name"]][0] += int(r["Count"])
        want[r["name"]][1] += float(r["total_direct_kernel_time_sum"])
    copies = _copies(trace)
    both = set(mine) & set(want)
    for name in both:
        extra_calls, extra_us = copies.get(name, (0, 0.0))
        assert mine[name][0] + extra_calls == want[name][0], name
        assert mine[name][1] + extra_us == pytest.approx(want[name][1], abs=0.02), name
    # what one side names alone: TraceLens's rows for launches outside any op (the runtime call's name) and
    # its names with a numeric suffix cut (sglang_profiler::..._100), each with the same calls and time
    for name in set(mine) - both:
        cut = name.rstrip("0123456789").rstrip("_")
        assert cut in want and tuple(want[cut]) == pytest.approx(tuple(mine[name]), abs=0.02), name
    assert all(
        name.startswith(("hip", "cuda")) or name in {n.rstrip("0123456789").rstrip("_") for n in mine}
        for name in set(want) - both
    )


def test_the_graphs_gemms_get_their_roofline() -> None:
    """The replayed GEMMs are on the roofline with TraceLens's FLOPs, bytes and kernel time per signature."""
    result = api.roofline(
        _DIR / "tracelens_vllm_decode_full.json.gz",
        capture=_DIR / "tracelens_vllm_decode_full.capture.json.gz",
        gpu="MI300X",
    )
    assert result.notes == [
        "graph replays: 421 of 421 replayed kernels attributed to their captured op calls (1 of 1 replays)"
    ]
    points = {p.label: p for p in result.points}
    rows = [r for r in csv_rows(_DIR / "tracelens_vllm_decode_full.GEMM.csv") if r["name"].startswith("aten::")]
    assert len(rows) == 4
    for r in rows:
        m, n, k = (int(r[f"param: {x}"]) for x in "MNK")
        p = next(
            p
            for label, p in points.items()
            if label.startswith(r["name"]) and f"[{k}, {n}]" in label and f"[{m}, {k}]" in label
        )
        assert p.flops / p.calls == pytest.approx(float(r["GFLOPS_first"]) * 1e9)
        assert p.bytes / p.calls == pytest.approx(float(r["Data Moved (MB)_first"]) * 2**20)
        assert p.time_us == pytest.approx(float(r["Kernel Time (µs)_sum"]), abs=0.01)
    without = api.roofline(_DIR / "tracelens_vllm_decode_full.json.gz", gpu="MI300X")
    assert [
        p.label for p in without.points if p.label.startswith("aten::addmm")
    ] == []  # only the one aten::mm outside the graph


def _launch(name: str, start: int, corr: int = 7) -> KernelLaunch:
    return KernelLaunch(name=name, start_ns=start, duration_ns=10, graph=True, correlation_id=corr)


def _captured(graph: int, ops: list[tuple[str, str, list[int]]]) -> list[CapturedLaunch]:
    """A capture of ``(kernel, op, dims)`` launches."""
    return [
        CapturedLaunch(
            kernel=k,
            graph=graph,
            call=OpCall(
                op=op, input_dims=[dims], input_types=["float"], concrete=[""], kernels=[], kernel_ns=0, external_id=i
            ),
        )
        for i, (k, op, dims) in enumerate(ops)
    ]


def test_captures_the_replay_cannot_be_told_apart_by_leave_it_unattributed() -> None:
    """Two graphs of the same kernels at two batch sizes: a replay fits both equally, so no op is claimed; at
    one batch size (two identical pieces) either gives the same answer and it is attributed."""
    replay = [_launch("gemm", 0), _launch("norm", 20)]
    small = _captured(0, [("gemm", "aten::mm", [32, 64]), ("norm", "aten::rms_norm", [32])])
    large = _captured(1, [("gemm", "aten::mm", [512, 64]), ("norm", "aten::rms_norm", [512])])
    same = _captured(1, [("gemm", "aten::mm", [32, 64]), ("norm", "aten::rms_norm", [32])])
    left = attribute(replay, small + large)
    assert (left.attributed, left.ambiguous, left.calls) == (0, 1, [])
    taken = attribute(replay, small + same)
    assert (taken.attributed, taken.ambiguous) == (1, 0)
    assert [(c.op, c.input_dims, c.kernel_ns) for c in taken.calls] == [
        ("aten::mm", [[32, 64]], 10),
        ("aten::rms_norm", [[32]], 10),
    ]


def test_the_fewest_skips_decide_and_a_kernel_no_capture_holds_leaves_the_replay() -> None:
    replay = [_launch("gemm", 0), _launch("norm", 20)]
    warm = _captured(0, [("fill", "aten::fill_", [1]), ("gemm", "aten::mm", [8, 8]), ("norm", "aten::rms_norm", [8])])
    exact = _captured(1, [("gemm", "aten::mm", [16, 8]), ("norm", "aten::rms_norm", [16])])
    assert [c.input_dims for c in attribute(replay, warm + exact).calls] == [[[16, 8]], [[16]]]
    assert attribute([*replay, _launch("softmax", 40)], warm + exact).attributed == 0


def test_a_cuda_graph_whose_capture_names_no_kernel() -> None:
    """On CUDA a captured launch call (cudaLaunchKernel, cuLaunchKernelEx) names no kernel: the capture is
    matched node for node. A real H200 capture of Linear-GELU-Linear-LayerNorm, three replays: every replayed
    kernel goes to the op that launches that kernel in an eager run of the same model (a third trace), with that
    op's shapes."""
    eager = json.loads(gzip.decompress((_DIR / "h200_graph_eager.json.gz").read_bytes()))["traceEvents"]
    ops = {e["args"]["External id"]: e for e in eager if e.get("cat") == "cpu_op" and "External id" in e["args"]}
    want = [
        (ops[e["args"]["External id"]]["name"], ops[e["args"]["External id"]]["args"]["Input Dims"], e["name"])
        for e in eager
        if e.get("cat") == "kernel"
    ]
    captured = kineto.read_captured(_DIR / "h200_graph_capture.json.gz")
    assert {c.kernel for c in captured} == {""}
    found = attribute(kineto.read(_DIR / "h200_graph_replay.json.gz").launches, captured)
    assert (found.replays, found.attributed, found.kernels, found.kernels_attributed) == (3, 3, 12, 12)
    assert sorted((c.op, c.input_dims, k) for c in found.calls for k in c.kernels) == sorted(want * 3)
    shorter = [k for k in kineto.read(_DIR / "h200_graph_replay.json.gz").launches if k.name != want[1][2]]
    assert attribute(shorter, captured).attributed == 0  # a node missing: no node-for-node match, no guess


def test_a_graphs_gemm_can_be_replayed() -> None:
    """replay --capture: the hottest addmm inside vLLM's decode graph (24 calls a replay, TraceLens's 387.0 µs)
    becomes a replay script's op; the replay trace alone has no aten::addmm to offer."""
    trace, capture = _DIR / "tracelens_vllm_decode_full.json.gz", _DIR / "tracelens_vllm_decode_full.capture.json.gz"
    found = api.replay(trace, op="aten::addmm", capture=capture)
    assert (found.op, found.calls, [a.shape for a in found.args if hasattr(a, "shape")]) == (
        "aten::addmm",
        24,
        [[5120], [32, 2880], [2880, 5120]],
    )
    assert found.total_ns / 1000 == pytest.approx(387.0, abs=0.1)
    assert "aten::addmm" not in {c.op for c in api.replay_candidates(trace).candidates}


def test_shapes_records_the_graphs_ops() -> None:
    trace, capture = _DIR / "tracelens_vllm_decode_full.json.gz", _DIR / "tracelens_vllm_decode_full.capture.json.gz"
    runs = api.shapes([trace], capture=capture)
    gemm = next(r for r in runs if r.op == "aten::addmm" and r.shape["in2"] == [2880, 5120])
    assert (gemm.calls, round(gemm.time_us, 1)) == (24, 387.0)
    assert not [r for r in api.shapes([trace]) if r.op == "aten::addmm"]


def test_a_capture_that_is_no_kineto_trace_is_one_error_line() -> None:
    trace = _DIR / "tracelens_vllm_decode_full.json.gz"
    not_kineto = Path(__file__).parent / "data" / "nsys" / "h100_transformer_eager.sqlite"
    result = run_kscope("roofline", str(trace), "--capture", str(not_kineto), "--json")
    assert_one_error_line(result)
    assert "expected a PyTorch profiler (Kineto) trace of the graph capture, found nsys-sqlite" in result.stderr
