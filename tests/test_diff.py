"""``kscope diff`` on real H100 and MI350X profiles.

Ground truth: per-kernel calls and totals summed here from the raw files with ``json``/``csv``; p-values
from ``scipy.stats.mannwhitneyu`` on those raw durations; B files that are A with every duration scaled
by a known factor, written by the test; and pairs of files of one run in two formats.
"""

from __future__ import annotations

import csv
import gzip
import importlib
import inspect
import json
from collections import defaultdict
from collections.abc import Callable
from functools import cache
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import numpy as np
import pytest
import typer
from conftest import KERNEL_CAT, assert_one_error_line, csv_rows, events, ns
from scipy.stats import mannwhitneyu

from kernelscope import api
from kernelscope.data import demo_file
from kernelscope.model.diff import DiffResult, DiffRow

Kscope = Callable[..., CompletedProcess[str]]
EAGER, COMPILE = "h100_transformer_eager.json.gz", "h100_transformer_compile.json.gz"
RMSNORM = demo_file("mi350x", "rmsnorm", "discover_kernel_trace.csv")
DATA = Path(__file__).parent / "data"
Durations = dict[str, list[int]]


def _kineto_durations(events_: list[dict[str, Any]]) -> Durations:
    out: Durations = defaultdict(list)
    for e in events_:
        out[e["name"]].append(ns(e["dur"]))
    return out


def _rocprof_durations(path: Path) -> Durations:
    out: Durations = defaultdict(list)
    for r in csv_rows(path):
        out[r["Kernel_Name"]].append(int(r["End_Timestamp"]) - int(r["Start_Timestamp"]))
    return out


def _rows(result: DiffResult) -> dict[str, DiffRow]:
    rows = {r.name: r for r in result.kernels}
    assert len(rows) == len(result.kernels)
    return rows


def _check_against(result: DiffResult, a: Durations, b: Durations) -> None:
    """Every row's status, calls, totals and delta, and the result's invariants, from raw durations."""
    rows = _rows(result)
    assert set(rows) == set(a) | set(b)
    for name, r in rows.items():
        da, db = a.get(name, []), b.get(name, [])
        assert r.status == ("common" if da and db else "added" if db else "removed"), name
        assert (r.calls_a, r.calls_b) == (len(da), len(db)), name
        assert (r.total_a_ns, r.total_b_ns, r.delta_ns) == (sum(da), sum(db), sum(db) - sum(da)), name
        if da and db:
            assert r.median_ratio == pytest.approx(np.median(db) / np.median(da)), name
            assert r.count_effect_ns is not None and r.per_call_effect_ns is not None
            assert r.count_effect_ns + r.per_call_effect_ns == pytest.approx(r.delta_ns, abs=1e-6)
    kernel = result.totals["kernel_time_ns"]
    assert (kernel.a, kernel.b) == (sum(map(sum, a.values())), sum(map(sum, b.values())))
    assert result.totals["launches"].delta == sum(map(len, b.values())) - sum(map(len, a.values()))
    deltas = [abs(r.delta_ns) for r in result.kernels]
    assert deltas == sorted(deltas, reverse=True)
    if kernel.delta:
        assert sum(r.delta_share_pct or 0.0 for r in result.kernels) == pytest.approx(100.0)


def _check_significance(result: DiffResult, a: Durations, b: Durations, min_launches: int = 5) -> None:
    """p-values equal scipy's on the raw durations; rows with too few launches are n/a."""
    tested = 0
    for r in result.kernels:
        if r.status != "common":
            continue
        da, db = a[r.name], b[r.name]
        if min(len(da), len(db)) < min_launches:
            assert (r.verdict, r.p_value, r.significant) == ("n/a", None, None), r.name
            assert r.reason is not None and "fewer than" in r.reason
            continue
        want = mannwhitneyu(da, db, alternative="two-sided").pvalue
        assert r.p_value is not None and r.p_value == pytest.approx(want, rel=1e-9, abs=1e-300), r.name
        assert r.ci_low is not None and r.ci_high is not None and r.median_ratio is not None
        assert r.significant == (r.p_value < 0.01 and not r.ci_low <= 1.0 <= r.ci_high), r.name
        tested += 1
    assert tested


@cache
def _eager_vs_compile() -> DiffResult:
    return api.diff([demo_file(EAGER)], [demo_file(COMPILE)])


def test_eager_vs_compile_matches_the_raw_traces() -> None:
    a, b = _kineto_durations(events(EAGER, KERNEL_CAT)), _kineto_durations(events(COMPILE, KERNEL_CAT))
    result = _eager_vs_compile()
    _check_against(result, a, b)
    _check_significance(result, a, b)
    counts = result.counts
    assert (counts.common, counts.added, counts.removed) == (
        len(a.keys() & b.keys()),
        len(b.keys() - a.keys()),
        len(a.keys() - b.keys()),
    )
    assert counts.added_time_ns == sum(sum(b[n]) for n in b.keys() - a.keys())
    unmatched = max(counts.added_time_ns, counts.removed_time_ns) / max(sum(map(sum, d.values())) for d in (a, b))
    assert [w for w in result.warnings if "found on one side only" in w] == [
        f"{100 * unmatched:.0f}% of the kernel time is in kernels found on one side only (renamed or fused kernels): "
        "--group-by function or category or kind compares them by role"
    ]
    assert result.schema == "kernelscope.diff.v1"


def _scaled_kineto(tmp_path: Path, factor: float) -> tuple[Path, Durations]:
    """The eager trace with every kernel's ``dur`` times ``factor`` (start times kept), and its durations."""
    with gzip.open(demo_file(EAGER), "rt", encoding="utf-8") as f:
        doc = json.load(f)
    for e in doc["traceEvents"]:
        if e.get("cat") == KERNEL_CAT:
            e["dur"] = round(e["dur"] * factor, 3)
    out = tmp_path / "eager_scaled.json"
    out.write_text(json.dumps(doc))
    return out, _kineto_durations([e for e in doc["traceEvents"] if e.get("cat") == KERNEL_CAT])


def test_kineto_scaled_by_a_known_factor_is_faster(tmp_path: Path) -> None:
    path, b = _scaled_kineto(tmp_path, 0.8)
    a = _kineto_durations(events(EAGER, KERNEL_CAT))
    result = api.diff([demo_file(EAGER)], [path])
    _check_against(result, a, b)
    _check_significance(result, a, b)
    for r in result.kernels:
        assert r.status == "common"
        assert r.median_ratio == pytest.approx(0.8, abs=0.001)
        if r.calls_a >= 5:
            assert r.verdict == "faster", r.name
            assert r.ci_low is not None and r.ci_high is not None and r.ci_low < 0.8 < r.ci_high < 1.0
    assert result.counts.faster == sum(len(d) >= 5 for d in a.values())


def _scaled_rocprof(tmp_path: Path, factor: float) -> tuple[Path, Durations]:
    """The MI350X rmsnorm kernel trace with every ``End_Timestamp`` moved so durations scale by ``factor``."""
    rows = csv_rows(RMSNORM)
    for r in rows:
        start, end = int(r["Start_Timestamp"]), int(r["End_Timestamp"])
        r["End_Timestamp"] = str(start + round((end - start) * factor))
    out = tmp_path / "kernel_trace.csv"
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return out, _rocprof_durations(out)


def test_rocprof_scaled_by_a_known_factor_is_slower(tmp_path: Path) -> None:
    path, b = _scaled_rocprof(tmp_path, 1.25)
    a = _rocprof_durations(RMSNORM)
    result = api.diff([RMSNORM], [path])
    _check_against(result, a, b)
    _check_significance(result, a, b)
    row = _rows(result)["rmsnorm_kernel_0"]
    assert (row.calls_a, row.verdict, row.count_effect_ns) == (111, "slower", 0.0)
    assert row.ci_low is not None and row.ci_high is not None and 1.0 < row.ci_low < 1.25 < row.ci_high
    assert result.counts.slower == 1 and result.counts.faster == 0


def test_identical_profiles_have_no_significant_difference() -> None:
    result = api.diff([RMSNORM], [RMSNORM])
    a = _rocprof_durations(RMSNORM)
    _check_against(result, a, a)
    _check_significance(result, a, a)
    assert all(r.delta_ns == 0 and r.delta_share_pct is None and not r.significant for r in result.kernels)
    assert result.counts.slower == result.counts.faster == 0
    assert result.counts.not_significant == sum(len(d) >= 5 for d in a.values())


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (demo_file(EAGER), DATA / "nsys" / "h100_transformer_eager.sqlite"),
        (DATA / "rocpd" / "rmsnorm_kernel_trace.csv", DATA / "rocpd" / "rmsnorm_results.db"),
        (RMSNORM, DATA / "rocprof_json" / "rmsnorm_results.json"),
    ],
    ids=["kineto-nsys", "rocprof-csv-rocpd", "rocprof-csv-json"],
)
def test_one_run_in_two_formats_has_no_difference(a: Path, b: Path) -> None:
    result = api.diff([a], [b])
    assert result.counts.added == result.counts.removed == 0
    assert all(r.delta_ns == 0 and r.calls_a == r.calls_b and not r.significant for r in result.kernels)
    assert result.totals["kernel_time_ns"].delta == 0


def test_profiler_statistics_side_has_totals_but_no_tests() -> None:
    stats_csv = RMSNORM.with_name("discover_kernel_stats.csv")
    result = api.diff([stats_csv], [RMSNORM])
    truth = {r["Name"]: (int(r["Calls"]), int(r["TotalDurationNs"])) for r in csv_rows(stats_csv)}
    assert {r.name: (r.calls_a, r.total_a_ns) for r in result.kernels} == truth
    assert all(r.delta_ns == 0 and r.verdict == "n/a" and r.median_ratio is None for r in result.kernels)
    assert all(r.reason == "no per-launch durations (profiler-computed statistics)" for r in result.kernels)
    assert result.totals["busy_time_ns"].a is None


def test_several_files_per_side_and_changed_call_counts() -> None:
    """A = the trace twice (two ranks), B = once: counts halve, per-call time is unchanged."""
    result = api.diff([RMSNORM, RMSNORM], [RMSNORM])
    for r in result.kernels:
        assert r.calls_a == 2 * r.calls_b
        assert r.count_effect_ns == pytest.approx(r.delta_ns)
        assert r.per_call_effect_ns == pytest.approx(0.0, abs=1e-6)
        assert r.median_ratio == pytest.approx(1.0)
        assert not r.significant
    assert result.counts.calls_changed == len(result.kernels)
    assert any("different number of times" in w for w in result.warnings)


def test_delta_splits_into_count_and_per_call_effects(tmp_path: Path) -> None:
    """B runs each kernel twice as often, each launch 1.25x longer: count effect = (2n - n) x A's mean."""
    path, scaled = _scaled_rocprof(tmp_path, 1.25)
    a = _rocprof_durations(RMSNORM)
    result = api.diff([RMSNORM], [path, path])
    for r in result.kernels:
        da, db = a[r.name], scaled[r.name] * 2
        assert (r.calls_a, r.calls_b) == (len(da), len(db))
        assert r.count_effect_ns == pytest.approx(sum(da))
        assert r.per_call_effect_ns == pytest.approx(len(db) * (np.mean(db) - np.mean(da)))


def test_group_by_category_keeps_totals_and_warns() -> None:
    by_cat = api.diff([demo_file(EAGER)], [demo_file(COMPILE)], group_by="category")
    by_name = _eager_vs_compile()
    assert {k: v for k, v in by_cat.totals.items() if k != "kernels"} == {  # kernels counts rows: groups here
        k: v for k, v in by_name.totals.items() if k != "kernels"
    }
    assert len(by_cat.kernels) < len(by_name.kernels)
    assert {r.status for r in by_cat.kernels} == {"common"}  # every role exists on both sides
    assert any("pools launches of different kernels" in w for w in by_cat.warnings)


def test_window_applies_to_both_sides() -> None:
    steps = demo_file("h100_train_steps.json.gz")
    result = api.diff([steps], [steps], window="1")
    gap = api.gap_report([steps], window="1")
    assert result.window == gap.window
    assert result.totals["launches"].a == result.totals["launches"].b == gap.totals.launches
    assert result.totals["launches"].a < api.gap_report([steps]).totals.launches


# --- the command line ------------------------------------------------------------------------------


def test_cli_json_csv_markdown_and_table(kscope: Kscope, tmp_path: Path) -> None:
    a, b = demo_file(EAGER), demo_file(COMPILE)
    proc = kscope("diff", a, b, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "kernelscope.diff.v1"
    assert [r["name"] for r in doc["kernels"]] == [r.name for r in _eager_vs_compile().kernels]
    proc = kscope("diff", "--a", a, "--b", b, "--csv")
    rows = list(csv.DictReader(proc.stdout.splitlines()))
    assert len(rows) == len(doc["kernels"])
    assert sum(int(r["Calls A"]) for r in rows) == doc["totals"]["launches"]["a"]
    md = kscope("diff", a, b, "-o", tmp_path / "diff.md")
    assert md.returncode == 0, md.stderr
    text = (tmp_path / "diff.md").read_text()
    assert "## Totals: A → B" in text and "| Name | Status | Verdict |" in text
    table = kscope("diff", a, b)
    assert table.returncode == 0, table.stderr
    assert "Totals" in table.stdout and "triton_poi_fused_gelu_view_2" in table.stdout
    assert max(len(line) for line in table.stdout.splitlines()) <= 200


@pytest.mark.parametrize(
    "args",
    [
        ("{eager}", "{tmp}/missing.json"),
        ("{eager}", "{tmp}/corrupt.json"),
        ("{eager}", "{readme}"),
        ("{eager}",),
        ("{eager}", "{eager}", "{eager}"),
        ("{eager}", "{eager}", "--a", "{eager}"),
        ("--a", "{eager}"),
        ("{eager}", "{eager}", "--group-by", "color"),
        ("{eager}", "{eager}", "--alpha", "1.5"),
    ],
    ids=["missing", "corrupt", "unknown-format", "one", "three", "both-forms", "no-b", "group-by", "alpha"],
)
def test_bad_input_is_one_error_line(kscope: Kscope, tmp_path: Path, args: tuple[str, ...]) -> None:
    with gzip.open(demo_file(EAGER), "rb") as f:
        (tmp_path / "corrupt.json").write_bytes(f.read()[:50_000])  # a Kineto trace cut mid-event
    subs = {"tmp": str(tmp_path), "eager": str(demo_file(EAGER)), "readme": str(DATA / "ncu" / "README.md")}
    assert_one_error_line(kscope("diff", *(a.format(**subs) for a in args)))


def test_every_library_parameter_has_a_cli_option_with_the_same_default() -> None:
    from kernelscope.cli import app

    lib = inspect.signature(api.diff)
    cli = inspect.signature(importlib.import_module("kernelscope.cli.diff").diff, eval_str=True)
    click_params = {p.name: p for p in typer.main.get_command(app).commands["diff"].params}  # type: ignore[attr-defined]
    checked = 0
    for name, param in lib.parameters.items():
        if name == "progress":
            continue
        assert name in cli.parameters, f"kscope diff has no option for api.diff({name}=...)"
        if name in ("a", "b"):  # lists on the command line, required sequences in the library
            assert f"--{name}" in click_params[name].opts
            continue
        assert cli.parameters[name].default == param.default == click_params[name].default, name
        flag = {"fmt": "--format"}.get(name, "--" + name.replace("_", "-"))
        assert flag in click_params[name].opts, (name, click_params[name].opts)
        checked += 1
    assert checked == 8
