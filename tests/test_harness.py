"""Benchmark and tuning activity set aside (issue 15 item 2): ``analyses/harness.py`` and the gap totals.

Ground truth: the Triton matmul tutorial recorded twice on an H100 (tests/data/kineto/README.md): once while
``@triton.autotune`` benchmarked its 8 configs at 2 shapes, once with the autotune results already cached, so
the second trace holds only the workload. The first trace, with the harness set aside, must give the second's
table; the raw files are counted with the standard library.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernelscope import api
from kernelscope.analyses import harness
from kernelscope.analyses.harness import MIN_FLUSH_NS, flush_bursts, flush_name_mask

KINETO = Path(__file__).parent / "data" / "kineto"
TUNED = KINETO / "h100_matmul_autotune.json.gz"
CACHED = KINETO / "h100_matmul_autotune_cached.json.gz"


def _raw_counts(path: Path) -> Counter[str]:
    doc = json.loads(gzip.decompress(path.read_bytes()))
    return Counter(e["name"] for e in doc["traceEvents"] if e.get("cat") == "kernel")


def test_the_autotune_trace_less_its_harness_is_the_cached_run() -> None:
    tuned, cached = api.gap_report([TUNED]), api.gap_report([CACHED])
    assert cached.harness == [] and cached.totals.excluded_harness_launches == 0
    got = {k.name: k for k in tuned.kernels}
    want = {k.name: k for k in cached.kernels}
    assert got.keys() == want.keys()
    for name, w in want.items():
        assert got[name].calls == w.calls, name  # 42 matmuls, 4 random fills, 2 zero-fills of outputs
    mm = "_matmul"
    assert got[mm].total_us == pytest.approx(want[mm].total_us, rel=0.01)
    assert got[mm].median_us == pytest.approx(want[mm].median_us, rel=0.02)
    raw = _raw_counts(TUNED)
    flush = next(n for n in raw if "FillFunctor<int>" in n)  # Triton's do_bench clears L2 with an int buffer
    assert tuned.totals.excluded_harness_launches == raw[flush] + raw[mm] - want[mm].calls
    assert len(tuned.harness) == 2  # one autotune per shape
    assert {b.flush for b in tuned.harness} == {flush} and all(b.kernels == [mm] for b in tuned.harness)
    assert sum(b.launches for b in tuned.harness) == tuned.totals.excluded_harness_launches
    assert tuned.totals.launches + tuned.totals.excluded_harness_launches == sum(raw.values())


def test_include_harness_keeps_every_launch_and_still_names_the_bursts() -> None:
    kept = api.gap_report([TUNED], include_harness=True)
    raw = _raw_counts(TUNED)
    assert {k.name: k.calls for k in kept.kernels} == dict(raw)
    assert len(kept.harness) == 2 and kept.totals.excluded_harness_launches == 0


def test_variant_rows_of_the_workload_match_the_cached_run() -> None:
    """The records path (--group-by variant) sets the same launches aside: the two configs the workload used,
    21 calls each, as in the cached run."""
    tuned = api.gap_report([TUNED], group_by="variant")
    cached = api.gap_report([CACHED], group_by="variant")

    def rows(r: object) -> list[tuple[object, int]]:
        return sorted((str(k.variant), k.calls) for k in r.kernels if k.name == "_matmul")  # type: ignore[attr-defined]

    assert rows(tuned) == rows(cached) and [c for _, c in rows(cached)] == [21, 21]


def test_idle_inside_a_burst_is_not_the_workloads() -> None:
    tuned, full = api.gap_report([TUNED]), api.gap_report([TUNED], include_harness=True)
    t, f = tuned.totals, full.totals
    assert t.wall_time_us is not None and f.wall_time_us is not None and t.idle_time_us is not None
    cut = sum(b.span_us for b in tuned.harness)
    assert t.wall_time_us == pytest.approx(f.wall_time_us - cut, rel=1e-6)
    assert t.busy_time_us is not None and t.busy_time_us == pytest.approx(t.kernel_time_us)
    assert t.idle_time_us == pytest.approx(t.wall_time_us - t.busy_time_us)
    b = t.idle_breakdown
    assert b is not None and b.host_wait_us + b.kernel_wait_us <= t.idle_time_us + 1e-6


# --- the rule on launch sequences built as Triton's do_bench issues them --------------------------------


def _seq(tokens: str, flush_ns: int = 80_000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """F = flush, K/A/B/C = kernels; durations: flushes ``flush_ns``, kernels 40 µs."""
    names = ["fill_kernel<int>", "K", "A", "B", "C"]
    ids = np.array(["FKABC".index(t) for t in tokens], np.int64)
    dur = np.where(ids == 0, flush_ns, 40_000)
    return ids, dur, flush_name_mask(names)


def _marked(tokens: str, **kw: int) -> str:
    ids, dur, flush = _seq(tokens, **kw)
    out = list("." * len(tokens))
    for b in flush_bursts(ids, dur, flush):
        out[b.first : b.last + 1] = "h" * (b.last - b.first + 1)
    return "".join(out)


def test_do_benchs_sequence_is_harness_and_the_call_after_it_is_not() -> None:
    # do_bench per config: one call, 5 flushed calls (its estimate), a warm-up loop, then flushed repeats
    one_config = "K" + "FK" * 5 + "KKK" + "FK" * 12
    tokens = "AB" + one_config + one_config + "KKK" + "A"
    marked = _marked(tokens)
    assert marked == ".." + "h" * (2 * len(one_config)) + "...."


def test_small_zero_fills_and_long_calls_are_not_harness() -> None:
    assert set(_marked("FK" * 20, flush_ns=MIN_FLUSH_NS - 1)) == {"."}  # a workload's own small zeroing
    assert set(_marked("FKABC" * 20)) == {"."}  # four kernels between flushes: a model's layer, not a call
    assert set(_marked("FK" * (harness.MIN_FLUSHES - 1) + "A")) == {"."}  # too few repeats
    assert set(_marked("FKFAFKFA" * 5)) == {"."}  # the call changes every time


def test_long_and_short_fills_of_one_kernel_are_not_harness() -> None:
    """An optimizer zeroing its gradients: the fill kernel, long on big buffers and short on small ones, over
    and over (a real MI100 training trace's ``__amd_rocclr_fillBufferAligned``). No call is timed there."""
    ids = np.zeros(40, np.int64)
    dur = np.where(np.arange(40) % 2 == 0, 80_000, 2_000)  # alternately over and under MIN_FLUSH_NS
    assert flush_bursts(ids, dur, flush_name_mask(["__amd_rocclr_fillBufferAligned"])) == []


def test_gap_json_and_table_name_what_was_set_aside(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "kernelscope", "gap", str(TUNED)]
    doc = json.loads(subprocess.run([*argv, "--json"], capture_output=True, text=True, check=True).stdout)
    assert doc["totals"]["excluded_harness_launches"] > 0 and doc["totals"]["excluded_harness_us"] > 0
    assert doc["harness"][0]["rule"] == "flush-alternation" and doc["harness"][0]["kernels"] == ["_matmul"]
    human = subprocess.run([*argv, "--top", "3"], capture_output=True, text=True, check=True).stdout
    assert "set aside" in " ".join(human.split()) and "_matmul" in human


# --- exact marks from kscope's own hook ------------------------------------------------------------------

MARKED_TRACE = KINETO / "h100_matmul_autotune_marked.json.gz"
MARKED_CACHED = KINETO / "h100_matmul_autotune_marked_cached.json.gz"


def _without_marks(src: Path, dst: Path) -> Path:
    """The trace as another profiler would have recorded it: kscope's harness annotations removed."""
    doc = json.loads(gzip.decompress(src.read_bytes()))
    events = doc["traceEvents"]
    doc["traceEvents"] = [e for e in events if not str(e.get("name", "")).startswith("kscope::harness::")]
    assert len(doc["traceEvents"]) < len(events)
    dst.write_text(json.dumps(doc))
    return dst


def test_a_trace_kscope_recorded_is_marked_exactly_and_the_rule_agrees(tmp_path: Path) -> None:
    marked = api.gap_report([MARKED_TRACE])
    doc = json.loads(gzip.decompress(MARKED_TRACE.read_bytes()))
    ranges = [e for e in doc["traceEvents"] if e.get("cat") == "user_annotation"]
    assert {b.rule for b in marked.harness} == {"hook-annotation"} and len(marked.harness) == len(ranges) == 16
    cached = {k.name: k.calls for k in api.gap_report([MARKED_CACHED]).kernels}
    assert {k.name: k.calls for k in marked.kernels} == cached
    # the same trace without the marks goes through the rule: the same launches, burst by burst (±0 here;
    # the issue allows ±1 per burst)
    foreign = api.gap_report([_without_marks(MARKED_TRACE, tmp_path / "foreign.json")])
    assert {b.rule for b in foreign.harness} == {"flush-alternation"}
    assert foreign.totals.excluded_harness_launches == marked.totals.excluded_harness_launches
    for b in marked.harness:
        lo, hi = b.start_us, b.start_us + b.span_us
        inside = sum(
            f.launches for f in foreign.harness if f.start_us <= lo + 1e-3 and hi <= f.start_us + f.span_us + 1e-3
        )
        assert inside >= b.launches  # every marked burst lies inside a rule burst
    assert sum(b.launches for b in foreign.harness) == sum(b.launches for b in marked.harness)


def test_nested_and_overlapping_marks_merge_and_unknown_launches_stay_out() -> None:
    ranges = np.array([[100, 200], [120, 150], [190, 260], [400, 500]], np.int64)
    launches = np.array([99, 100, 130, 255, 261, 450, -1, 501], np.int64)
    inside, outer = harness.marked(launches, ranges)
    assert inside.tolist() == [-1, 0, 0, 0, -1, 1, -1, -1]
    assert outer.tolist() == [0, 3]  # each merged range is named by its outermost (earliest) one
    assert harness.marked(launches, np.zeros((0, 2), np.int64))[0].tolist() == [-1] * 8


@pytest.mark.parametrize(("tuned", "cached"), [(TUNED, CACHED), (MARKED_TRACE, MARKED_CACHED)])
def test_the_ops_behind_rooflines_and_ledgers_are_the_workloads(tuned: Path, cached: Path) -> None:
    """The autotuner's 256 MB flush fills (aten::fill_ [[67108864]]) leave the ops too: what is left are the
    cached run's ops, shape for shape."""
    import kernelscope

    def shapes(ops: list[Any]) -> Counter[tuple[str, str]]:
        return Counter((o.op, str(o.input_dims)) for o in ops)

    h = kernelscope.open(tuned)
    assert shapes(h.ops) == shapes(kernelscope.open(cached).all_ops)
    assert shapes(h.all_ops)[("aten::fill_", "[[67108864], []]")] > 6000


# --- every harness the hook marks, and TunableOp's tuning, on one workload (H100, tests/data/kineto/README) --

HARNESSED = {h: KINETO / f"h100_harnessed_{h}.json.gz" for h in ("none", "do_bench", "timer", "graphed")}


def _calls(r: Any) -> dict[str, int]:
    return {k.name: k.calls for k in r.kernels}


@pytest.mark.parametrize(
    ("case", "what"),
    [
        ("do_bench", "triton.testing.do_bench"),
        ("timer", "torch.utils.benchmark"),
        ("graphed", "torch.cuda.make_graphed_callables"),
    ],
)
def test_each_marked_harness_leaves_the_workload_of_the_run_without_it(case: str, what: str) -> None:
    """``silu(x @ w1) @ w2`` called 21 times, after ``do_bench`` / ``Timer.blocked_autorange`` timed it or
    ``make_graphed_callables`` warmed it up and captured it, against the same program with no harness."""
    got, alone = api.gap_report([HARNESSED[case]]), api.gap_report([HARNESSED["none"]])
    assert {(b.harness, b.rule) for b in got.harness} == {(what, "hook-annotation")}
    assert _calls(got) == _calls(alone)  # 42 GEMMs, 21 silu, the set-up's fills and copies
    gemm = max(alone.kernels, key=lambda k: k.total_us)
    assert next(k for k in got.kernels if k.name == gemm.name).total_us == pytest.approx(gemm.total_us, rel=0.05)
    raw = _raw_counts(HARNESSED[case])
    assert got.totals.launches + got.totals.excluded_harness_launches == sum(raw.values())
    assert got.totals.excluded_harness_launches > 0


def test_do_bench_without_its_marks_is_found_by_the_flush_rule(tmp_path: Path) -> None:
    marked = api.gap_report([HARNESSED["do_bench"]])
    foreign = api.gap_report([_without_marks(HARNESSED["do_bench"], tmp_path / "foreign.json")])
    assert {b.rule for b in foreign.harness} == {"flush-alternation"} and len(foreign.harness) == 1
    # within one launch per burst (the tolerance): do_bench's first, unflushed call of the kernels
    assert abs(foreign.totals.excluded_harness_launches - marked.totals.excluded_harness_launches) <= 1


def test_inductors_autotuning_is_marked_and_the_compiled_workload_stays() -> None:
    """``torch.compile(mode="max-autotune-no-cudagraphs")``: Inductor benchmarked 20 GEMM choices (49 marked
    benchmark calls); the 21 calls ran its fused mm+silu template and cuBLAS for the second GEMM."""
    path = KINETO / "h100_harnessed_compile.json.gz"
    got = api.gap_report([path])
    assert {(b.harness, b.rule) for b in got.harness} == {("torch._inductor.benchmark", "hook-annotation")}
    calls = _calls(got)
    assert calls["triton_tem_fused_mm_silu_0"] == 21
    assert calls["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"] == 21
    raw = _raw_counts(path)
    assert raw["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"] > 21  # cuBLAS was one of the choices timed
    assert got.totals.launches + got.totals.excluded_harness_launches == sum(raw.values())


def test_tunableops_tuning_is_found_inside_each_gemm_call() -> None:
    """TunableOp tuned each of the two GEMM shapes inside its first ``aten::mm`` call (no Python entry, no
    mark); less those calls' launches but their last, the run is its twin that read the tuned results."""
    path = KINETO / "h100_harnessed_tunableop.json.gz"
    got = api.gap_report([path])
    twin = api.gap_report([KINETO / "h100_harnessed_tunableop_tuned.json.gz"])
    assert {(b.rule, b.harness) for b in got.harness} == {("op-tuning", "tuning inside one op call (TunableOp)")}
    assert _calls(got) == _calls(twin)
    # ground truth from the raw events: the op calls that launched more than one kernel, less one each
    doc = json.loads(gzip.decompress(path.read_bytes()))
    per_op = Counter(e["args"]["External id"] for e in doc["traceEvents"] if e.get("cat") == "kernel")
    tuned = [n for n in per_op.values() if n > 1]
    assert len(got.harness) == len(tuned) == 2
    assert sorted(b.launches for b in got.harness) == sorted(n - 1 for n in tuned)
    assert got.totals.excluded_harness_launches == sum(tuned) - len(tuned)


def _ops(*calls: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(op call id, kernel name id, launches) in time order -> the op, name and variant columns (one variant
    per name)."""
    op = np.concatenate([np.full(n, o) for o, _, n in calls])
    nid = np.concatenate([np.full(n, k) for _, k, n in calls])
    return op, nid, nid


def test_op_tuning_needs_many_gemms_in_one_call_against_its_usual_count() -> None:
    gemm = lambda ids: ids < 10  # noqa: E731  # name ids 0-9 are GEMMs here
    tuned = _ops((1, 0, 121), *[(i, 0, 1) for i in range(2, 22)])  # tuned once, then 20 plain calls
    [burst] = harness.op_tuning(*tuned, gemm)
    assert burst.tolist() == list(range(120))  # its last launch is the workload's call
    op, nid, _ = _ops((1, 0, 121), (2, 0, 121))  # two shapes tuned (one kernel, two variants), nothing else
    assert len(harness.op_tuning(op, nid, np.repeat([0, 1], 121), gemm)) == 2
    loop = _ops(*[(i, 3, 32) for i in range(4)])  # 32 GEMMs under one annotation, every iteration
    assert harness.op_tuning(*loop, gemm) == []
    foreach = _ops((7, 42, 200), (8, 42, 1))  # a fused optimizer's many launches: not GEMMs
    assert harness.op_tuning(*foreach, gemm) == []
    lone = _ops((5, 0, 19), (6, 0, 1))  # under MIN_TUNED
    assert harness.op_tuning(*lone, gemm) == []


@pytest.mark.parametrize("path", [MARKED_TRACE, TUNED, KINETO / "h100_harnessed_tunableop.json.gz"])
def test_phase_by_shows_the_harness_as_its_own_phase(path: Path) -> None:
    """With --phase-by the bursts set aside are the ``harness`` phase (their launches, nothing else), the
    other phases hold the workload; with --include-harness they stay where their annotations put them."""
    whole = api.gap_report([path])
    split = api.gap_report([path], phase_by="no such annotation")
    by = {p.phase: p for p in split.phases}
    assert set(by) == {"harness", "(outside)"}
    assert by["harness"].totals.launches == whole.totals.excluded_harness_launches
    assert by["harness"].harness == whole.harness
    assert _calls(by["(outside)"]) == _calls(whole)
    kept = api.gap_report([path], phase_by="no such annotation", include_harness=True)
    assert [p.phase for p in kept.phases] == ["(outside)"]
    assert kept.phases[0].totals.launches == sum(_raw_counts(path).values())


def test_configs_timed_without_a_flush_are_found_by_their_rotation(tmp_path: Path) -> None:
    """The autotuned matmul timed by a plain loop (no flush; H100): with kscope's marks the 16 timing
    ranges are exact; without them the rotating-configs rule sets aside the same 336 launches (8 configs x
    21 x 2 shapes) and leaves the winners' 42 calls, which repeat a configuration already timed."""
    path = KINETO / "h100_matmul_autotune_plain.json.gz"
    marked = api.gap_report([path])
    foreign = api.gap_report([_without_marks(path, tmp_path / "foreign.json")])
    assert {b.rule for b in marked.harness} == {"hook-annotation"} and len(marked.harness) == 16
    assert {b.rule for b in foreign.harness} == {"rotating-configs"} and len(foreign.harness) == 2
    assert foreign.totals.excluded_harness_launches == marked.totals.excluded_harness_launches == 336
    assert _calls(foreign) == _calls(marked) and _calls(marked)["_matmul"] == 42


def _runs(*runs: tuple[int, int, int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kernel name id, variant id, binary id, launches) in time order -> name, variant, binary columns."""
    name, variant, binary = (np.concatenate([np.full(r[3], r[i]) for r in runs]) for i in range(3))
    return name, variant, binary


def test_rotating_configs_need_new_binaries_back_to_back() -> None:
    tuned = _runs((0, 1, 1, 21), (0, 2, 2, 21), (0, 3, 3, 21), (0, 2, 2, 21))  # 3 configs, then the winner
    [burst] = harness.rotating(*tuned)
    assert burst.tolist() == list(range(63))
    ramp = _runs((0, 1, 1, 8), (0, 2, 1, 8), (0, 3, 1, 8), (0, 4, 1, 8))  # a growing grid: one binary
    assert harness.rotating(*ramp) == []
    mixed = _runs(*[(k % 2, k, k, 1) for k in range(60)])  # alternating with another kernel
    assert harness.rotating(*mixed) == []
    short = _runs((0, 1, 1, 2), (0, 2, 2, 2), (0, 3, 3, 2))  # runs too short to be timing loops
    assert harness.rotating(*short) == []


def test_graph_warmup_without_marks_is_what_make_graphed_callables_marked(tmp_path: Path) -> None:
    """``make_graphed_callables`` warms its callable up on side streams, then the calls replay the graph
    (``cudaGraphLaunch``). With kscope's marks removed, the graph-warmup rule sets aside exactly the 11
    launches the marks did, in the default table and in the records path (--phase-by)."""
    path = HARNESSED["graphed"]
    marked = api.gap_report([path])
    foreign_path = _without_marks(path, tmp_path / "foreign.json")
    foreign = api.gap_report([foreign_path])
    assert {b.rule for b in foreign.harness} == {"graph-warmup"}
    assert foreign.totals.excluded_harness_launches == marked.totals.excluded_harness_launches == 11
    assert _calls(foreign) == _calls(marked) == _calls(api.gap_report([HARNESSED["none"]]))
    by = {p.phase: p.totals.launches for p in api.gap_report([foreign_path], phase_by="none such").phases}
    assert by == {"harness": 11, "(outside)": 70}


def test_graph_warmup_needs_a_side_stream_holding_the_graphs_kernels() -> None:
    # (name, stream, replayed, call) per launch in time order: main-stream set-up, side-stream warm-up, replays
    def cols(rows: list[tuple[int, int, bool, int]]) -> tuple[np.ndarray, ...]:
        n, s, r, c = zip(*rows, strict=True)
        return np.array(n), np.array(s), np.array(r), np.array(c)

    setup = [(9, 7, False, 1)]
    replays = [(0, 7, True, 50), (1, 7, True, 50), (0, 7, True, 51), (1, 7, True, 51)]
    warm = [(0, 13, False, 2), (1, 13, False, 3)] * 3
    [burst] = harness.graph_warmup(*cols([*setup, *warm, *replays]))
    assert burst.tolist() == list(range(1, 7))
    same_stream = [*setup, (0, 7, False, 2), (1, 7, False, 3), *replays]
    assert harness.graph_warmup(*cols(same_stream)) == []
    other_kernels = [*setup, (5, 13, False, 2), *replays]  # e.g. a collective on its stream
    assert harness.graph_warmup(*cols(other_kernels)) == []
