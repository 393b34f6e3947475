"""Why the GPU idled (issue 15 item 6): host wait / kernel wait / other, and launch-to-start delays.

Checked three ways: a hand-made Kineto trace whose gaps are known by construction; the two independent
decodes of a real H100 trace (the columns path joins kernels to their runtime calls itself, the records
path links them while building records) agreeing; and the definition's invariants on real traces (the causes
sum to the idle time; the host-bound decode run is diagnosed as host-bound, the training steps as GPU-busy).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelscope import api
from kernelscope.analyses.gap import gap
from kernelscope.model.gap import GapOptions
from kernelscope.readers import read

DEMO = Path(__file__).parents[1] / "kernelscope" / "data" / "demo"


def _trace(tmp_path: Path) -> Path:
    """Kernels A [0, 10) µs, B [12, 20) launched at 5 (queued: a 2 µs kernel wait), C [50, 60) launched at
    40 (after B ended: a 30 µs host wait), D [80, 90) launched at 45 (queued, 20 µs gap: other)."""
    events = []
    for corr, (name, start, dur, launch) in enumerate(
        [("A", 0, 10, -3), ("B", 12, 8, 5), ("C", 50, 10, 40), ("D", 80, 10, 45)], start=1
    ):
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": 1000 + launch, "dur": 2, "args": {"correlation": corr}})  # fmt: skip
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 1000 + start,
                       "dur": dur, "args": {"device": 0, "stream": 7, "correlation": corr}})  # fmt: skip
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_each_gap_gets_its_cause(tmp_path: Path) -> None:
    t = api.gap_report([_trace(tmp_path)]).totals
    assert t.idle_time_us == pytest.approx(2 + 30 + 20)
    b = t.idle_breakdown
    assert b is not None
    assert (b.kernel_wait_us, b.host_wait_us, b.other_us) == pytest.approx((2, 30, 20))
    assert t.launch_delay_us is not None and t.launch_delay_us.linked == 4
    assert t.launch_delay_us.median_us == pytest.approx(8.5)  # delays 3, 7, 10, 35
    assert t.launch_delay_us.call_median_us == pytest.approx(2)  # every launch call took 2 µs
    assert t.launch_delay_us.shorter_than_call == 0  # every kernel ran 8 µs or more


@pytest.mark.parametrize("name", ["h100_prefill_decode.json.gz", "h100_train_steps.json.gz"])
def test_columns_and_records_decodes_agree_on_real_traces(name: str) -> None:
    streamed = api.gap_report([DEMO / name]).totals  # columns: the join is the accumulator's
    records = gap(read(DEMO / name), GapOptions()).totals  # records: launch_ns linked by the reader
    assert streamed.idle_breakdown is not None and records.idle_breakdown is not None
    assert streamed.idle_breakdown == records.idle_breakdown
    assert streamed.launch_delay_us == records.launch_delay_us
    b, idle = streamed.idle_breakdown, streamed.idle_time_us
    assert idle is not None and b.host_wait_us + b.kernel_wait_us + b.other_us == pytest.approx(idle)


def test_a_host_bound_run_is_diagnosed_as_host_bound() -> None:
    decode = api.gap_report([DEMO / "h100_prefill_decode.json.gz"]).totals
    steps = api.gap_report([DEMO / "h100_train_steps.json.gz"]).totals
    assert decode.idle_breakdown is not None and decode.idle_time_us and decode.wall_time_us
    assert decode.idle_time_us / decode.wall_time_us > 0.9  # the GPU idled 97 % of the decode run...
    assert decode.idle_breakdown.host_wait_us / decode.idle_time_us > 0.9  # ...waiting for the host
    assert steps.busy_time_us and steps.wall_time_us and steps.busy_time_us / steps.wall_time_us > 0.6


def test_profilers_without_launch_links_say_nothing() -> None:
    stats = api.gap_report([DEMO / "mi350x" / "rmsnorm" / "discover_kernel_trace.csv"]).totals
    assert stats.idle_breakdown is None and stats.launch_delay_us is None


def test_suggest_and_report_name_the_host_first_when_it_dominates(tmp_path: Path) -> None:
    decode = DEMO / "h100_prefill_decode.json.gz"
    ranked = api.suggest([decode], top=3).experiments
    assert ranked[0].lever == "host_overhead" and ranked[0].kernel.name == "(host)"
    assert "waited for the host" in ranked[0].rationale[0].evidence
    assert ranked[0].expected.total_pct is not None and ranked[0].expected.total_pct > 85
    report = api.report([decode])
    assert report.headline[0].topic == "host" and "the host sets the pace" in report.headline[0].text
    steps = api.report([DEMO / "h100_train_steps.json.gz"])  # busy 65 % of the wall: kernels matter
    assert steps.headline[0].topic == "host" and "the GPU is the bottleneck" in steps.headline[0].text
    assert all(e.lever != "host_overhead" for e in api.suggest([decode], kernel="copy").experiments)


def test_the_host_wait_threshold_is_per_device() -> None:
    """Host wait and busy time are sums over devices, the wall one device's span: 4 devices each waiting
    10 % of the wall are not a host-bound run (the threshold is 20 % of one device's wall)."""
    from kernelscope.analyses.suggest.evidence import Evidence
    from kernelscope.analyses.suggest.host import host_experiment
    from kernelscope.analyses.suggest.thresholds import HOST_WAIT_PCT
    from kernelscope.model.gap import GapResult, GapTotals, IdleBreakdown

    def totals(devices: int, wait_pct: float) -> Evidence:
        wall = 1000.0
        wait = wait_pct / 100 * wall * devices
        split = IdleBreakdown(host_wait_us=wait, kernel_wait_us=0.0, other_us=900 * devices - wait)
        t = GapTotals(kernel_time_us=100.0 * devices, busy_time_us=100.0 * devices, wall_time_us=wall,
                      idle_time_us=900.0 * devices, launches=10, kernels=1, memory_time_us=0.0, memory_ops=0,
                      devices=devices, ranks=1, idle_breakdown=split)  # fmt: skip
        return Evidence(gap=GapResult(totals=t, kernels=[]))

    assert HOST_WAIT_PCT == 20
    assert host_experiment(totals(4, 10)) is None  # 40 % summed over 4 devices, 10 % of each one's wall
    found = host_experiment(totals(4, 30))
    assert found is not None and found[0].kernel.share_pct == pytest.approx(30)


def test_a_phase_wall_is_the_union_of_its_own_instances(tmp_path: Path) -> None:
    """Two `prefill` ranges 1 ms apart with a `decode` range between: prefill's wall is its two instances
    (10 + 10 µs of kernel spans), not the 1 ms from its first launch to its last (issue 15 item 6)."""
    events = []
    plan = [("prefill", 0, [(5, 4), (10, 5)]), ("decode", 300, [(305, 20)]), ("prefill", 1000, [(1005, 4), (1010, 5)])]
    corr = 0
    for name, t0, kernels in plan:
        events.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": 1, "ts": t0, "dur": 90})
        for start, dur in kernels:
            corr += 1
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                           "ts": start - 3, "dur": 1, "args": {"correlation": corr}})  # fmt: skip
            events.append({"ph": "X", "cat": "kernel", "name": f"{name}_k", "pid": 0, "tid": 7, "ts": start,
                           "dur": dur, "args": {"device": 0, "stream": 7, "correlation": corr}})  # fmt: skip
    path = tmp_path / "phases.json"
    path.write_text(json.dumps({"traceEvents": events}))
    by = {r.phase: r.totals for r in api.gap_report([path], phase_by="prefill|decode").phases}
    pre = by["prefill"]
    assert pre.wall_time_us == pytest.approx(10 + 10)  # [5, 15) and [1005, 1015)
    assert pre.busy_time_us == pytest.approx(4 + 5 + 4 + 5)
    assert pre.idle_time_us == pytest.approx(2)  # the 1 µs gap inside each instance
    b = pre.idle_breakdown
    assert b is not None and b.host_wait_us + b.kernel_wait_us + b.other_us == pytest.approx(2)
    assert by["decode"].wall_time_us == pytest.approx(20)


def test_the_wait_is_charged_to_the_innermost_host_work_around_it(tmp_path: Path) -> None:
    """Kernel A [0, 10), B [50, 60) launched at 45: a 40 µs host wait [10, 50). On the main thread `outer`
    [5, 45) holds `aten::item` [12, 35) holding `cudaStreamSynchronize` [14, 34); a loader thread's range
    [0, 60) covers the whole wait. Innermost: the sync 20, outer 35 - 23 = 12, item 23 - 20 = 3, B's launch
    call 1; the other thread's range 40 (threads are charged separately)."""
    events = [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
         "args": {"correlation": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 45, "dur": 1,
         "args": {"correlation": 2}},
        {"ph": "X", "cat": "kernel", "name": "A", "pid": 0, "tid": 7, "ts": 0, "dur": 10,
         "args": {"device": 0, "correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "B", "pid": 0, "tid": 7, "ts": 50, "dur": 10,
         "args": {"device": 0, "correlation": 2}},
        {"ph": "X", "cat": "cpu_op", "name": "outer", "pid": 1, "tid": 1, "ts": 5, "dur": 40},
        {"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": 1, "tid": 1, "ts": 12, "dur": 23},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, "tid": 1, "ts": 14, "dur": 20},
        {"ph": "X", "cat": "user_annotation", "name": "loader", "pid": 1, "tid": 2, "ts": 0, "dur": 60},
    ]  # fmt: skip
    path = tmp_path / "waits.json"
    path.write_text(json.dumps({"traceEvents": events}))
    r = api.gap_report([path])
    assert r.totals.idle_breakdown is not None and r.totals.idle_breakdown.host_wait_us == pytest.approx(40)
    got = {h.name: h.idle_us for h in r.host_activity}
    # the launch call of B [45, 46) is inside the wait too, outside `outer`
    assert got == pytest.approx(
        {"loader": 40, "cudaStreamSynchronize": 20, "outer": 12, "aten::item": 3, "cudaLaunchKernel": 1}
    )
    assert [h.name for h in r.host_activity][:2] == ["loader", "cudaStreamSynchronize"]


def test_a_host_bound_decode_names_the_host_work_it_waited_under() -> None:
    """On the real decode run, the waits fall mostly under cuDNN attention's host side (its graph and plan
    building per new sequence length) and the GEMM ops: named by suggest's host experiment."""
    r = api.gap_report([DEMO / "h100_prefill_decode.json.gz"])
    b = r.totals.idle_breakdown
    assert b is not None and r.host_activity
    assert sum(h.idle_us for h in r.host_activity) <= b.host_wait_us * 1.0001  # one host thread: counted once
    assert r.host_activity[0].name == "aten::_cudnn_attention_forward"
    top = api.suggest([DEMO / "h100_prefill_decode.json.gz"], top=1).experiments[0]
    assert "aten::_cudnn_attention_forward" in top.rationale[0].evidence


def test_kernels_shorter_than_their_launch_call_are_counted(tmp_path: Path) -> None:
    """Three 1 µs kernels each launched by a 6 µs call, one 20 µs kernel by a 6 µs call: the host cannot keep
    the GPU fed with the short ones (HTA's launch statistics ask the same)."""
    events = []
    for corr, (start, dur) in enumerate([(10, 1), (20, 1), (30, 1), (40, 20)], start=1):
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": start - 8, "dur": 6, "args": {"correlation": corr}})  # fmt: skip
        events.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": start, "dur": dur,
                       "args": {"device": 0, "correlation": corr}})  # fmt: skip
    path = tmp_path / "short.json"
    path.write_text(json.dumps({"traceEvents": events}))
    for d in (api.gap_report([path]).totals.launch_delay_us, gap(read(path), GapOptions()).totals.launch_delay_us):
        assert d is not None and d.call_median_us == pytest.approx(6) and d.shorter_than_call == 3


def test_a_graph_launch_counts_once_in_the_launch_statistics(tmp_path: Path) -> None:
    """One 400 µs cudaGraphLaunch replays five 10 µs kernels back to back; two 20 µs kernels follow, each
    from its own 6 µs cudaLaunchKernel. Three launch calls: the graph's delay is to its first kernel, its
    work is the five kernels together (50 µs, shorter than its call); weighting the call by its kernels
    would report a 400 µs median call and five kernels shorter than theirs (vLLM's decode step on a GH200:
    8 graph launches of 4.3 ms each held 27,896 of the trace's 28,032 kernels)."""
    events: list[dict[str, object]] = [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 0, "dur": 400,
         "args": {"correlation": 1}},
        *({"ph": "X", "cat": "kernel", "name": f"g{i}", "pid": 0, "tid": 7, "ts": 30 + 10 * i, "dur": 10,
           "args": {"device": 0, "correlation": 1}} for i in range(5)),
    ]  # fmt: skip
    for corr, (launch, start) in enumerate([(500, 510), (510, 540)], start=2):
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": launch, "dur": 6, "args": {"correlation": corr}})  # fmt: skip
        events.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": start, "dur": 20,
                       "args": {"device": 0, "correlation": corr}})  # fmt: skip
    path = tmp_path / "graph.json"
    path.write_text(json.dumps({"traceEvents": events}))
    for d in (api.gap_report([path]).totals.launch_delay_us, gap(read(path), GapOptions()).totals.launch_delay_us):
        assert d is not None and d.linked == 7  # kernels whose call the trace links
        assert d.call_median_us == pytest.approx(6)  # calls of 400, 6 and 6 µs
        assert d.median_us == pytest.approx(30)  # delays 30 (the graph's first kernel), 10 and 30 µs
        assert d.shorter_than_call == 1  # the graph: 50 µs of kernels under a 400 µs call
