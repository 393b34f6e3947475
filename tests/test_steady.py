"""Steady state without markers (issue 15 item 3): the repeating iteration of a kernel sequence.

Ground truth: the markers real H100 traces carry — ``ProfilerStep#`` in the training run, the workload's own
``decode`` ranges in the prefill/decode run. The detector is run on the launches alone (names and times, no
annotation), and its period, iteration count, boundaries and iteration time are compared with the markers'.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernelscope import api, readers
from kernelscope.analyses.steady import _smallest_periods, detect
from kernelscope.analyses.window import assign
from kernelscope.model import Annotation, KernelLaunch

DEMO = Path(__file__).parents[1] / "kernelscope" / "data" / "demo"


def _launches(name: str) -> tuple[list[KernelLaunch], list[list[int]], list[Annotation]]:
    """The trace's timed launches in time order, the launch indices of each marker range (ProfilerStep# or
    the workload's ``decode``), and those ranges."""
    p = readers.read(DEMO / name)
    marker = "ProfilerStep#" if "train" in name else "decode"
    owners = assign(p, lambda a: a.domain == "host" and a.name.startswith(marker))
    pairs = sorted(((k, a) for k, a in zip(p.launches, owners, strict=True) if k.start_ns), key=lambda x: x[0].start_ns)
    ranges: dict[int, list[int]] = {}
    for i, (_, a) in enumerate(pairs):
        if a is not None:
            ranges.setdefault(a.start_ns, []).append(i)
    notes = sorted({id(a): a for _, a in pairs if a is not None}.values(), key=lambda a: a.start_ns)
    return [k for k, _ in pairs], [ranges[t] for t in sorted(ranges)], notes


def _detect(ks: list[KernelLaunch]) -> object:
    names: dict[str, int] = {}
    ids = np.array([names.setdefault(k.name, len(names)) for k in ks], np.int64)
    col = lambda attr: np.array([getattr(k, attr) or 0 for k in ks], np.int64)  # noqa: E731
    return detect(ids, col("start_ns"), col("end_ns"), col("launch_ns"))


def test_the_period_and_boundaries_match_profiler_steps() -> None:
    ks, steps, _ = _launches("h100_train_steps.json.gz")
    st = _detect(ks)
    assert st is not None
    assert [len(s) for s in steps] == [270, 270, 270]
    assert st.period == 270  # type: ignore[attr-defined]
    # the boundary: within 5 % of a period of a marker's (the names do not say where a step's code begins)
    off = min(abs(st.first_launch - s[0]) for s in steps)  # type: ignore[attr-defined]
    assert off <= 0.05 * 270
    marker_len = np.median(np.diff([ks[s[0]].start_ns or 0 for s in steps]))
    assert st.iteration_us == pytest.approx(marker_len / 1e3, rel=0.10)  # type: ignore[attr-defined]


def test_decode_steps_are_found_without_their_markers() -> None:
    """Six decode steps; the first, 20x slower than the others (warm-up), is not steady."""
    ks, steps, _ = _launches("h100_prefill_decode.json.gz")
    st = _detect(ks)
    assert st is not None and [len(s) for s in steps] == [57] * 6
    starts = np.array([ks[s[0]].start_ns or 0 for s in steps], np.int64)
    lengths = np.diff(starts)
    assert lengths[0] > 10 * np.median(lengths[1:])  # the warm-up step, by the markers
    assert st.period == 57 and st.iterations == 5  # type: ignore[attr-defined]
    assert abs(st.first_launch - steps[1][0]) <= 1  # type: ignore[attr-defined]  # 825 vs the marker's 826
    assert st.iteration_us == pytest.approx(np.median(lengths[1:]) / 1e3, rel=0.05)  # type: ignore[attr-defined]


def test_smallest_periods() -> None:
    assert _smallest_periods([1, 2, 1, 2, 1]) == [1, 2, 2, 2, 2]
    assert _smallest_periods([3, 3, 3]) == [1, 1, 1]
    assert _smallest_periods([1, 2, 3]) == [1, 2, 3]


def test_window_steady_gives_per_iteration_numbers(tmp_path: Path) -> None:
    with_steps = api.gap_report([DEMO / "h100_train_steps.json.gz"], window="steady")
    (st,) = with_steps.steady
    assert st.source == "ProfilerStep markers" and st.iterations == 3 and st.period == 270
    assert with_steps.totals.launches == 810
    for row in with_steps.kernels:
        assert row.calls_per_iteration == pytest.approx(row.calls / 3)
        assert row.us_per_iteration == pytest.approx(row.total_us / 3)
    decode = api.gap_report([DEMO / "h100_prefill_decode.json.gz"], window="steady")
    assert decode.steady[0].source == "kernel sequence" and decode.totals.launches == 5 * 57
    argv = [sys.executable, "-m", "kernelscope", "gap", str(DEMO / "h100_prefill_decode.json.gz"), "--window"]
    doc = json.loads(subprocess.run([*argv, "steady", "--json"], capture_output=True, text=True, check=True).stdout)
    assert doc["steady"][0]["period"] == 57 and doc["kernels"][0]["calls_per_iteration"] is not None
    human = subprocess.run([*argv, "steady"], capture_output=True, text=True, check=True).stdout
    assert "5 iterations of 57 launches" in " ".join(human.split())


def test_nothing_repeats_is_one_error_line() -> None:
    csv = DEMO / "mi350x" / "rmsnorm" / "discover_kernel_trace.csv"
    done = subprocess.run(
        [sys.executable, "-m", "kernelscope", "gap", str(csv), "--window", "steady"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no repeating iteration" in done.stderr
