"""Windows (last N steps, time ranges) and phases against selections computed here from the raw trace.

A kernel belongs to a host range when the CUDA runtime/driver call that launched it (same
``args.correlation``) lies inside the range; kernels run later than their launch, often after the host
range has closed, so their own start time is not used.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import KERNEL_CAT, MEMORY_CATS, PREFILL_DECODE, TRAIN_STEPS, api_calls, events, ns

from kernelscope import api, readers
from kernelscope.analyses.window import NO_PHASE, Window, phases, select
from kernelscope.data import demo_file
from kernelscope.errors import InputError


def _key(e: dict[str, Any]) -> tuple[int, int]:
    return (e["args"]["correlation"], ns(e["ts"]))


def _inside(t: int, a: dict[str, Any]) -> bool:
    start = ns(a["ts"])
    return start <= t <= start + ns(a["dur"])


def _steps() -> list[dict[str, Any]]:
    steps = [e for e in events(TRAIN_STEPS, "user_annotation") if e["name"].startswith("ProfilerStep#")]
    return sorted(steps, key=lambda e: int(e["name"].split("#")[1]))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_last_n_steps_keep_the_kernels_launched_inside_them(n: int) -> None:
    steps = _steps()
    assert [s["name"] for s in steps] == ["ProfilerStep#3", "ProfilerStep#4", "ProfilerStep#5"]
    calls = api_calls(TRAIN_STEPS)
    want = Counter(
        _key(k)
        for k in events(TRAIN_STEPS, KERNEL_CAT)
        if (call := calls.get(k["args"]["correlation"])) is not None
        and any(_inside(ns(call["ts"]), s) for s in steps[-n:])
    )
    assert want

    prof = readers.read(demo_file(TRAIN_STEPS))
    got = select(prof, Window.parse(str(n)))
    assert Counter((k.correlation_id, k.start_ns) for k in got.launches) == want

    result = api.gap_report([demo_file(TRAIN_STEPS)], window=str(n))
    assert result.totals.launches == sum(want.values())
    assert result.window is not None and str(n) in result.window


def test_kernels_launched_before_the_first_step_are_in_no_step() -> None:
    # this capture holds kernels launched during the warmup step (no API call in the trace) that ran
    # while ProfilerStep#3 was open on the host: they are not step 3's work
    calls = api_calls(TRAIN_STEPS)
    orphans = [k for k in events(TRAIN_STEPS, KERNEL_CAT) if k["args"]["correlation"] not in calls]
    assert orphans
    first_step = _steps()[0]
    assert any(_inside(ns(k["ts"]), first_step) for k in orphans)  # the case that matters is present
    got = select(readers.read(demo_file(TRAIN_STEPS)), Window(last_steps=3))
    kept = {k.correlation_id for k in got.launches}
    assert not kept & {k["args"]["correlation"] for k in orphans}


@pytest.mark.parametrize(("a_us", "b_us"), [(0.0, 5000.0), (1000.0, 20000.0), (15000.0, 1e9)])
def test_time_range_keeps_kernels_starting_inside_it(a_us: float, b_us: float) -> None:
    gpu = events(TRAIN_STEPS, KERNEL_CAT, *MEMORY_CATS)
    t0 = min(ns(e["ts"]) for e in gpu)
    lo, hi = t0 + round(a_us * 1000), t0 + round(b_us * 1000)
    want = Counter(_key(k) for k in events(TRAIN_STEPS, KERNEL_CAT) if lo <= ns(k["ts"]) < hi)
    assert want

    prof = readers.read(demo_file(TRAIN_STEPS))
    got = select(prof, Window.parse(f"{a_us:g}:{b_us:g}"))
    assert Counter((k.correlation_id, k.start_ns) for k in got.launches) == want
    assert api.gap_report([demo_file(TRAIN_STEPS)], window=f"{a_us:g}:{b_us:g}").totals.launches == sum(want.values())


def test_open_ended_time_range() -> None:
    gpu = events(TRAIN_STEPS, KERNEL_CAT, *MEMORY_CATS)
    t0 = min(ns(e["ts"]) for e in gpu)
    want = sum(1 for k in events(TRAIN_STEPS, KERNEL_CAT) if ns(k["ts"]) >= t0 + 10_000_000)
    prof = readers.read(demo_file(TRAIN_STEPS))
    assert len(select(prof, Window.parse("10000:")).launches) == want
    assert len(select(prof, Window.parse(":10000")).launches) == len(events(TRAIN_STEPS, KERNEL_CAT)) - want


def test_step_window_on_a_trace_without_steps() -> None:
    trace = demo_file("h100_transformer_eager.json.gz")
    with pytest.raises(InputError, match="ProfilerStep"):
        api.gap_report([trace], window="2")
    with pytest.raises(InputError):
        select(readers.read(trace), Window(last_steps=1))


@pytest.mark.parametrize("spec", ["abc", "0", "-1", "1.5", "a:b", ""])
def test_bad_window_specs(spec: str) -> None:
    with pytest.raises(InputError):
        Window.parse(spec)
    with pytest.raises(InputError):
        api.gap_report([demo_file(TRAIN_STEPS)], window=spec)


# --- phases ---------------------------------------------------------------------------------------


def _phase_counts(pattern: str) -> Counter[str]:
    """Kernels per phase: the innermost user_annotation matching ``pattern`` around the launching call."""
    rx = re.compile(pattern)
    ranges = [a for a in events(PREFILL_DECODE, "user_annotation") if rx.search(a["name"])]
    calls = api_calls(PREFILL_DECODE)
    counts: Counter[str] = Counter()
    for k in events(PREFILL_DECODE, KERNEL_CAT):
        call = calls.get(k["args"]["correlation"])
        assert call is not None  # every kernel of this capture has its launching call
        t = ns(call["ts"])
        around = [a for a in ranges if _inside(t, a)]
        if not around:
            counts[NO_PHASE] += 1
            continue
        inner = max(around, key=lambda a: (ns(a["ts"]), -ns(a["dur"])))
        m = rx.search(inner["name"])
        counts[m.group(1) if m and m.groups() and m.group(1) else inner["name"]] += 1
    return counts


@pytest.mark.parametrize(
    ("pattern", "labels"),
    [
        ("prefill|decode", {"prefill", "decode"}),
        ("(prefill|decode)", {"prefill", "decode"}),
        # a group that did not take part in the match: the annotation's name is the label
        ("^(pre)fill$|^(?:de)code$", {"pre", "decode"}),
    ],
)
def test_phases_count_kernels_by_enclosing_annotation(pattern: str, labels: set[str]) -> None:
    want = _phase_counts(pattern)
    assert set(want) - {NO_PHASE} == labels
    assert all(want[label] > 0 for label in labels)

    prof = readers.read(demo_file(PREFILL_DECODE))
    got = {label: len(p.launches) for label, (p, _) in phases(prof, pattern).items()}
    assert got == dict(want)

    result = api.gap_report([demo_file(PREFILL_DECODE)], phase_by=pattern)
    assert {r.phase: r.totals.launches for r in result.phases} == dict(want)
    assert sum(r.totals.launches for r in result.phases) == len(events(PREFILL_DECODE, KERNEL_CAT))


def test_phase_labels_from_a_capture_group() -> None:
    result = api.gap_report([demo_file(PREFILL_DECODE)], phase_by="(prefill|decode)")
    labels = {r.phase for r in result.phases}
    assert {"prefill", "decode"} <= labels
    assert labels <= {"prefill", "decode", NO_PHASE}
    # six decode ranges, one label
    assert sum(1 for a in events(PREFILL_DECODE, "user_annotation") if a["name"] == "decode") == 6


def test_bad_phase_regex() -> None:
    with pytest.raises(InputError):
        api.gap_report([demo_file(PREFILL_DECODE)], phase_by="(unclosed")


def test_window_selection_does_not_mutate_the_profile(tmp_path: Path) -> None:
    prof = readers.read(demo_file(TRAIN_STEPS))
    before = len(prof.launches)
    select(prof, Window(last_steps=1))
    phases(prof, "ProfilerStep")
    assert len(prof.launches) == before
