"""``kscope demo``: runs on the bundled data alone, writes its report, and its tables agree with
rocprofv3's own statistics, read here with the csv module."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import MI350X_CAPTURES, csv_rows, run_kscope

from kernelscope.data import demo_file


def test_demo_json_report_and_ground_truth(tmp_path: Path) -> None:
    proc = run_kscope("demo", "--json", "--out", "report", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    items = {it["dataset"]: it for it in json.loads(proc.stdout)}
    assert {"h100_train", "h100_phases"} <= set(items)
    assert items["h100_train"]["gap"]["window"] == "last 2 profiler steps"
    assert {p["phase"] for p in items["h100_phases"]["gap"]["phases"]} == {"prefill", "decode", "(outside)"}
    for k in MI350X_CAPTURES:
        it = items[f"mi350x_{k}"]
        assert it["check"].startswith("matches")
        truth = {r["Name"]: r for r in csv_rows(demo_file("mi350x", k, "discover_kernel_stats.csv"))}
        rows = {r["name"]: r for r in it["gap"]["kernels"]}
        assert set(rows) == set(truth)
        for name, r in rows.items():
            assert r["calls"] == int(truth[name]["Calls"])
            assert round(r["total_us"] * 1000) == int(truth[name]["TotalDurationNs"])
    report = tmp_path / "report"
    assert (report / "REPORT.md").read_text().count("ground truth: matches") == len(MI350X_CAPTURES)
    assert len(list(report.glob("*.gap.json"))) == len(items)


def test_demo_bad_output_folder(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file, not a folder")
    proc = run_kscope("demo", "--out", "taken", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("kscope: error:") and len(proc.stderr.splitlines()) == 1
