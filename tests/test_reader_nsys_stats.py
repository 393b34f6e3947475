"""The ``nsys stats`` kernel-summary reader on reports NVIDIA's own ``nsys stats`` wrote from a REAL export
(``tests/data/nsys/stats/README.md``): every variant read, checked against plain SQL over the export itself
(calls, total and median ns per kernel) and against the report's own Time (%) column."""

from __future__ import annotations

import csv
import gzip
import json
import shutil
import sqlite3
import statistics
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_kscope, stats_by_name

from kernelscope import api
from kernelscope.model import KernelStats

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
    return stats_by_name(path, "nsys-kern-sum")


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
    human = (STATS / "h100_kern_sum_table.txt").read_text().splitlines()
    cut_table = tmp_path / "cut_table.txt"
    cut_table.write_text("\n".join(human[:10]) + "\n" + human[10][:30] + "\n")  # the human table cut mid-row
    assert_one_error_line(run_kscope("gap", cut_table))
    no_kernels = tmp_path / "api_only.txt"  # nsys stats output holding no kernel summary
    no_kernels.write_text("\n".join(line for line in human[:4]) + "\n")
    assert_one_error_line(run_kscope("gap", no_kernels))


# --- the human forms (column, table), as shared in .txt files and logs ----------------------------------


def _cut_durations(export: Path) -> dict[str, list[int]]:
    """SQL over the export with each name as nsys's human forms print it: over 100 characters, the first 99
    and ``…`` (kernels whose names then agree are one row)."""
    out: dict[str, list[int]] = defaultdict(list)
    for name, ns in _durations(export).items():
        out[name if len(name) <= 100 else name[:99] + "…"].extend(ns)
    return out


def _export(tmp_path: Path, gz: str) -> Path:
    out = tmp_path / Path(gz).name.removesuffix(".gz")
    out.write_bytes(gzip.decompress((NSYS / gz).read_bytes()))
    return out


H100, H200_TRANSFORMER, H200_PROFILED = (
    "h100_nsys_small.sqlite.gz", "h200_transformer_export.sqlite.gz", "stats/h200_profiled_export.sqlite.gz"
)  # fmt: skip


@pytest.mark.parametrize(
    ("name", "gz", "tolerance_ns"),
    [
        ("stdout_table.txt", H100, 0.0),  # `nsys stats --report cuda_gpu_kern_sum`: the column form
        ("h100_kern_sum_table.txt", H100, 0.0),  # --format table
        ("h100_table_file_cuda_gpu_kern_sum.txt", H100, 0.0),  # --format table --output: the file it writes
        ("h100_kern_sum_column_us.txt", H100, 0.5),  # --timeunit usec
        ("h100_kern_gb_sum_column.txt", H100, 0.0),  # cuda_gpu_kern_gb_sum: GridXYZ and BlockXYZ, three numbers each
        ("h100_default_reports.txt", H100, 0.0),  # plain `nsys stats`: every default report, kernels fourth
        ("h200_default_reports.txt", H200_TRANSFORMER, 0.0),
        ("h200_profile_stats_log.txt", H200_PROFILED, 0.0),  # `nsys profile --stats=true`: the program's log around it
    ],
)
def test_the_human_forms_equal_sql_over_the_export(name: str, gz: str, tolerance_ns: float, tmp_path: Path) -> None:
    truth = _cut_durations(_export(tmp_path, gz))
    got = _stats(STATS / name)
    assert set(got) == set(truth)
    for k, ns in truth.items():
        s = got[k]
        assert s.calls == len(ns) and s.total_ns == pytest.approx(sum(ns), abs=tolerance_ns)
        assert s.min_ns == pytest.approx(min(ns), abs=tolerance_ns)
        assert s.max_ns == pytest.approx(max(ns), abs=tolerance_ns)


def test_the_result_says_how_many_names_nsys_cut(tmp_path: Path) -> None:
    full = _durations(_export(tmp_path, H100))
    cut = {n[:99] for n in full if len(n) > 100}
    shared = sum(len(n) > 100 for n in full) - len(cut)
    assert shared >= 1  # the case that matters: two kernels whose cut names agree
    proc = run_kscope("gap", STATS / "h100_kern_sum_table.txt", "--json")
    assert proc.returncode == 0, proc.stderr
    note = [w for w in json.loads(proc.stdout)["warnings"] if "nsys cut" in w]
    assert len(note) == 1 and f"nsys cut {len(cut)} of {len(_cut_durations(_export(tmp_path, H100)))} " in note[0]
    assert f"{shared} row" in note[0]


def test_a_summary_at_the_end_of_a_long_log_is_found(tmp_path: Path) -> None:
    """``nsys profile --stats=true`` prints its summaries after everything the program printed: a log whose
    first 64 KiB hold none of them is still recognised (from its end) and read whole."""
    log = tmp_path / "train.log"
    body = (STATS / "h200_profile_stats_log.txt").read_bytes()
    log.write_bytes(b"".join(b"step %d loss 1.234 lr 3e-4 \xff\n" % i for i in range(8000)) + body)
    assert len(log.read_bytes()) - len(body) > 1 << 16
    want = _stats(STATS / "h200_profile_stats_log.txt")
    got = _stats(log)
    assert {k: (s.calls, s.total_ns) for k, s in got.items()} == {k: (s.calls, s.total_ns) for k, s in want.items()}


def test_the_grid_and_block_report_beside_the_kernel_report_is_not_counted_twice(tmp_path: Path) -> None:
    both = tmp_path / "both.txt"
    both.write_text(
        (STATS / "h100_kern_sum_table.txt").read_text() + (STATS / "h100_kern_gb_sum_column.txt").read_text()
    )
    truth = _cut_durations(_export(tmp_path, H100))
    got = _stats(both)
    assert sum(s.total_ns for s in got.values()) == sum(sum(v) for v in truth.values())


def test_two_summaries_in_one_file_are_added_together_and_said(tmp_path: Path) -> None:
    two = tmp_path / "two_runs.txt"
    two.write_text((STATS / "h100_default_reports.txt").read_text() + (STATS / "h200_default_reports.txt").read_text())
    calls = sum(len(v) for gz in (H100, H200_TRANSFORMER) for v in _durations(_export(tmp_path, gz)).values())
    result = api.gap_report([two])
    assert result.totals.launches == calls
    assert any("2 kernel summaries" in w for w in result.warnings)


def test_the_pre_2022_column_layout_reads_the_same(tmp_path: Path) -> None:
    """nsys 2021 printed "CUDA Kernel Statistics:" with Average/Minimum/Maximum (ns), no median, thousands
    separators and whole names: the report of the real export in that layout gives SQL's numbers."""
    truth = _durations(export_path := _export(tmp_path, H100))
    del export_path
    rows = list(csv.reader(DEFAULT.read_text().splitlines()))[1:]
    cells = [
        [r[0], f"{int(r[1]):,}", r[2], f"{float(r[3]):,.1f}", f"{int(r[5]):,}", f"{int(r[6]):,}", r[8]] for r in rows
    ]
    head = ["Time(%)", "Total Time (ns)", "Instances", "Average", "Minimum", "Maximum", "Name"]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    lines = ["CUDA Kernel Statistics:", "", " " + "  ".join(h.center(w) for h, w in zip(head, widths, strict=True))]
    lines.append(" " + "  ".join("-" * w for w in widths))
    lines += [" " + "  ".join([*(c.rjust(w) for c, w in zip(r[:-1], widths, strict=False)), r[-1]]) for r in cells]
    old = tmp_path / "nsys2021_stats.txt"
    old.write_text(
        "\n".join(["Collecting data...", *lines, "", "", "CUDA Memory Operation Statistics (by time):"]) + "\n"
    )
    got = _stats(old)
    assert set(got) == set(truth)
    for name, ns in truth.items():
        s = got[name]
        assert (s.calls, s.total_ns, s.min_ns, s.max_ns) == (len(ns), sum(ns), min(ns), max(ns))
        assert s.median_ns is None
