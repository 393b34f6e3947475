"""rocprof v1/v2 outputs (``tests/data/rocprof_v1/README.md``): the Chrome-trace JSON read against the statistics
rocprof computed itself for the same run, and its statistics of API calls and copies refused as kernel statistics."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_kscope

from kernelscope import api
from kernelscope.readers import detect, read

V1 = Path(__file__).parent / "data" / "rocprof_v1"
TRACE = V1 / "results.json.gz"


def _rocprof_stats(name: str) -> dict[str, tuple[int, int]]:
    with (V1 / name).open() as f:
        return {r["Name"]: (int(r["Calls"]), int(r["TotalDurationNs"])) for r in csv.DictReader(f)}


def test_kernels_and_copies_equal_rocprofs_own_statistics() -> None:
    assert detect(TRACE) == "rocprof-v1-json"
    prof = read(TRACE)
    kernels: dict[str, tuple[int, int]] = {}
    for k in prof.launches:
        calls, ns = kernels.get(k.name, (0, 0))
        kernels[k.name] = (calls + 1, ns + k.duration_ns)
    assert kernels == _rocprof_stats("results.stats.csv")
    copies: dict[str, tuple[int, int]] = {}
    for m in prof.memory_ops:
        calls, ns = copies.get(m.name, (0, 0))
        copies[m.name] = (calls + 1, ns + m.duration_ns)
    assert copies == _rocprof_stats("results.copy_stats.csv")
    assert {k.device for k in prof.launches} == {2} and all(k.vendor == "amd" for k in prof.launches)


@pytest.mark.parametrize("name", ["results.hip_stats.csv", "results.copy_stats.csv"])
def test_statistics_of_api_calls_and_copies_are_not_kernels(name: str, tmp_path: Path) -> None:
    proc = run_kscope("gap", V1 / name)
    assert_one_error_line(proc)
    assert "not kernels" in proc.stderr
    renamed = tmp_path / "stats.csv"  # the name no longer says so: the names do
    shutil.copy(V1 / name, renamed)
    assert_one_error_line(run_kscope("gap", renamed))


def test_the_run_folder_reads_the_trace_and_skips_the_other_statistics(tmp_path: Path) -> None:
    for f in V1.iterdir():
        shutil.copy(f, tmp_path / f.name)
    proc = run_kscope("gap", tmp_path, "--json")
    assert proc.returncode == 0, proc.stderr
    assert "read results.json.gz" in proc.stderr
    assert api.gap_report([tmp_path]).totals.launches == 1
