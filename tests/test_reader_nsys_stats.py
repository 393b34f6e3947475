"""The ``nsys stats`` kernel-summary reader on reports NVIDIA's own ``nsys stats`` wrote from a REAL export
(``tests/data/nsys/stats/README.md``): every variant read, checked against plain SQL over the export itself
(calls, total and median ns per kernel) and against the report's own Time (%) column."""

from __future__ import annotations

import csv
import gzip
import shutil
import sqlite3
import statistics
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_kscope

from kernelscope import api
from kernelscope.model import KernelStats
from kernelscope.readers import detect, read

NSYS = Path(__file__).parent / "data" / "nsys"
STATS = NSYS / "stats"
DEFAULT = STATS / "h100_nsys_small_cuda_gpu_kern_sum.csv"


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("nsys") / "h100_nsys_small.sqlite"
    out.write_bytes(gzip.decompress((NSYS / "h100_nsys_small.sqlite.gz").read_bytes()))
    return out


def _durations(export: Path) -> dict[str, list[int]]:
    con = sqlite3.connect(export)
    rows = con.execute(
        "SELECT s.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName"
    ).fetchall()
    con.close()
    out: dict[str, list[int]] = defaultdict(list)
    for name, ns in rows:
        out[name].append(ns)
    return out


def _stats(path: Path) -> dict[str, KernelStats]:
    assert detect(path) == "nsys-kern-sum"
    prof = read(path)
    assert prof.timing == "none" and not prof.launches
    return {s.name: s for s in prof.stats}


def test_the_report_equals_sql_over_the_export(export: Path) -> None:
    truth = _durations(export)
    got = _stats(DEFAULT)
    assert set(got) == set(truth) and len(got) == 63
    for name, ns in truth.items():
        s = got[name]
        assert s.calls == len(ns) and s.total_ns == sum(ns)
        assert s.min_ns == min(ns) and s.max_ns == max(ns)
        assert s.median_ns == statistics.median(ns)


@pytest.mark.parametrize(
    ("name", "tolerance_ns"),
    [
        ("us_cuda_gpu_kern_sum.csv", 0.5),  # --timeunit usec, 3 decimals
        ("ms_cuda_gpu_kern_sum.csv", 50.0),  # --timeunit msec, 4 decimals
        ("tsv_cuda_gpu_kern_sum.tsv", 0.0),
        ("stdout_csv.txt", 0.0),  # a "Processing [...]" line before the header
    ],
)
def test_every_unit_delimiter_and_preamble_reads_the_same(name: str, tolerance_ns: float) -> None:
    want, got = _stats(DEFAULT), _stats(STATS / name)
    assert set(got) == set(want)
    for k, s in got.items():
        assert s.calls == want[k].calls
        assert s.total_ns == pytest.approx(want[k].total_ns, abs=tolerance_ns)
        assert s.median_ns == pytest.approx(want[k].median_ns, abs=tolerance_ns)


def test_the_pre_2022_gpukernsum_layout_reads_the_same(tmp_path: Path) -> None:
    """nsys 2021 named the columns Average/Minimum/Maximum (ns) and printed no median or deviation: the same
    report in that layout (columns renamed and dropped) gives the same calls and times."""
    rows = list(csv.reader(DEFAULT.read_text().splitlines()))
    keep = [0, 1, 2, 3, 5, 6, 8]  # Time (%), Total Time, Instances, Avg, Min, Max, Name
    old = tmp_path / "report_gpukernsum.csv"
    with old.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Time(%)", "Total Time (ns)", "Instances", "Average", "Minimum", "Maximum", "Name"])
        w.writerows([r[i] for i in keep] for r in rows[1:])
    want, got = _stats(DEFAULT), _stats(old)
    assert set(got) == set(want)
    for k, s in got.items():
        assert (s.calls, s.total_ns, s.avg_ns, s.min_ns, s.max_ns) == (
            want[k].calls, want[k].total_ns, want[k].avg_ns, want[k].min_ns, want[k].max_ns
        )  # fmt: skip
        assert s.median_ns is None and s.pct == want[k].pct


def test_the_grid_and_block_report_reads_one_row_per_kernel(export: Path) -> None:
    """``cuda_gpu_kern_gb_sum`` splits a kernel by launch configuration (108 rows for 63 kernels): read as one
    row per kernel whose calls, total, min and max equal SQL over the export."""
    truth = _durations(export)
    got = _stats(STATS / "gb_cuda_gpu_kern_gb_sum.csv")
    assert set(got) == set(truth)
    for name, ns in truth.items():
        s = got[name]
        assert (s.calls, s.total_ns, s.min_ns, s.max_ns) == (len(ns), sum(ns), min(ns), max(ns))


def test_base_and_mangled_names_keep_the_times(export: Path) -> None:
    truth = _durations(export)
    for name in ("base_cuda_gpu_kern_sum_base.csv", "mangled_cuda_gpu_kern_sum_mangled.csv"):
        got = _stats(STATS / name)
        assert sum(s.calls for s in got.values()) == sum(len(v) for v in truth.values())
        assert sum(s.total_ns for s in got.values()) == sum(sum(v) for v in truth.values())
    mangled = _stats(STATS / "mangled_cuda_gpu_kern_sum_mangled.csv")
    assert sum(n.startswith("_Z") for n in mangled) > 20


def test_gap_shares_equal_the_reports_own_percentages() -> None:
    pct = {s.name: s.pct for s in _stats(DEFAULT).values()}
    result = api.gap_report([DEFAULT])
    assert result.totals.launches == 344 and result.totals.wall_time_us is None
    for row in result.kernels:
        assert row.pct == pytest.approx(pct[row.name], abs=0.05)  # nsys rounds to one decimal
        assert row.median_us is not None


def test_diff_of_two_reports_compares_the_medians_nsys_computed(export: Path) -> None:
    """Statistics carry no per-launch samples (no significance test), but nsys's medians: B/A of each common
    kernel is the ratio of the two reports' medians (here the same run in ns and in us: 1 within rounding)."""
    truth = {name: statistics.median(ns) for name, ns in _durations(export).items()}
    rows = api.diff([DEFAULT], [STATS / "us_cuda_gpu_kern_sum.csv"]).kernels
    assert len(rows) == len(truth)
    for r in rows:
        assert r.median_a_ns == truth[r.name] and r.median_ratio == pytest.approx(1, abs=1e-3)
        assert r.verdict == "n/a" and r.significant is None


def test_a_folder_with_the_export_and_its_report_is_one_run_read_from_the_export(export: Path, tmp_path: Path) -> None:
    shutil.copy(export, tmp_path / "h100_nsys_small.sqlite")
    shutil.copy(DEFAULT, tmp_path / DEFAULT.name)
    proc = run_kscope("gap", tmp_path, "--json")
    assert proc.returncode == 0, proc.stderr
    assert "read h100_nsys_small.sqlite" in proc.stderr and DEFAULT.name not in proc.stderr


def test_damaged_reports_are_one_error_line(tmp_path: Path) -> None:
    lines = DEFAULT.read_text().splitlines()
    cut = tmp_path / "cut_cuda_gpu_kern_sum.csv"
    cut.write_text("\n".join(lines[:5]) + "\n" + lines[5][:40] + "\n")  # the last row cut mid-name
    assert_one_error_line(run_kscope("gap", cut))
    table = run_kscope("gap", STATS / "stdout_table.txt")  # the human table: names cut with "…"
    assert_one_error_line(table)
