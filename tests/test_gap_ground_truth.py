"""The gap analysis of a rocprofv3 kernel trace reproduces rocprofv3's own ``--stats`` of the same run.

Ground truth: ``discover_kernel_stats.csv``, written by rocprofv3 1.1.0 itself on the MI350X, and sums
over ``discover_kernel_trace.csv`` computed here with the ``csv`` module.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from conftest import csv_rows

from kernelscope import api
from kernelscope.model.gap import GapResult, KernelRow


def _stats(capture: Path) -> dict[str, dict[str, str]]:
    rows = csv_rows(capture / "discover_kernel_stats.csv")
    by_name = {r["Name"]: r for r in rows}
    assert len(by_name) == len(rows), "rocprofv3 stats name a kernel twice"
    return by_name


def _trace(capture: Path) -> list[dict[str, str]]:
    return csv_rows(capture / "discover_kernel_trace.csv")


def _rows(result: GapResult) -> dict[str, KernelRow]:
    by_name = {r.name: r for r in result.kernels}
    assert len(by_name) == len(result.kernels)
    return by_name


def _check_against_stats(rows: dict[str, KernelRow], stats: dict[str, dict[str, str]]) -> None:
    assert set(rows) == set(stats)
    for name, s in stats.items():
        r = rows[name]
        assert r.calls == int(s["Calls"]), name
        assert round(r.total_us * 1000) == int(s["TotalDurationNs"]), name
        assert r.pct == pytest.approx(float(s["Percentage"]), abs=0.01), name
        assert r.min_us is not None and r.max_us is not None and r.std_us is not None
        assert round(r.min_us * 1000) == int(s["MinNs"]), name
        assert round(r.max_us * 1000) == int(s["MaxNs"]), name
        assert r.std_us * 1000 == pytest.approx(float(s["StdDev"]), rel=1e-3, abs=1e-6), name
        assert r.avg_us * 1000 == pytest.approx(float(s["AverageNs"]), rel=1e-6), name


def test_trace_reproduces_rocprof_stats(mi350x_dir: Path) -> None:
    result = api.gap_report([mi350x_dir / "discover_kernel_trace.csv"])
    _check_against_stats(_rows(result), _stats(mi350x_dir))
    assert sum(r.pct for r in result.kernels) == pytest.approx(100.0, abs=1e-6)


def test_stats_csv_reads_as_the_same_rows(mi350x_dir: Path) -> None:
    result = api.gap_report([mi350x_dir / "discover_kernel_stats.csv"])
    rows = _rows(result)
    _check_against_stats(rows, _stats(mi350x_dir))
    # the stats file has no timeline: nothing may be invented
    assert result.totals.wall_time_us is None
    assert result.totals.busy_time_us is None
    assert all(r.median_us is None for r in rows.values())


def test_totals_match_the_trace(mi350x_dir: Path) -> None:
    trace = _trace(mi350x_dir)
    starts = [int(r["Start_Timestamp"]) for r in trace]
    ends = [int(r["End_Timestamp"]) for r in trace]
    kernel_ns = sum(e - s for s, e in zip(starts, ends, strict=True))

    t = api.gap_report([mi350x_dir / "discover_kernel_trace.csv"]).totals
    assert t.launches == len(trace)
    assert t.kernels == len({r["Kernel_Name"] for r in trace})
    assert round(t.kernel_time_us * 1000) == kernel_ns
    assert t.busy_time_us is not None and t.wall_time_us is not None and t.idle_time_us is not None
    assert t.busy_time_us <= t.kernel_time_us + 1e-9
    assert round(t.wall_time_us * 1000) == max(ends) - min(starts)
    assert t.busy_time_us <= t.wall_time_us + 1e-9

    # busy time: the union of the kernel intervals of each agent, merged here in plain Python
    per_agent: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r in trace:
        per_agent[r["Agent_Id"]].append((int(r["Start_Timestamp"]), int(r["End_Timestamp"])))
    busy = 0
    for spans in per_agent.values():
        cur_s, cur_e = None, None
        for s, e in sorted(spans):
            if cur_e is None or s > cur_e:
                if cur_e is not None and cur_s is not None:
                    busy += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        if cur_e is not None and cur_s is not None:
            busy += cur_e - cur_s
    assert round(t.busy_time_us * 1000) == busy
    assert t.devices == len(per_agent)
