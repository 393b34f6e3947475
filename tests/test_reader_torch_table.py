"""torch.profiler's printed table against the Chrome trace of the same profile (``tests/data/torch_table``): each
kernel row's calls and device time equal the trace's kernel events of that name (cut as the table cuts names)."""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_kscope, stats_by_name

from kernelscope import api
from kernelscope.model import KernelStats

DATA = Path(__file__).parent / "data" / "torch_table"


def _events(cats: tuple[str, ...] = ("kernel",)) -> dict[str, list[float]]:
    """Durations (us) of the trace's events of ``cats`` by name."""
    out: dict[str, list[float]] = defaultdict(list)
    for e in json.loads(gzip.decompress((DATA / "trace.json.gz").read_bytes()))["traceEvents"]:
        if e.get("cat") in cats:
            out[e["name"]].append(e["dur"])
    return out


def _cut(width: int) -> dict[str, list[float]]:
    """The trace's kernels by name as the table prints it: over ``width`` characters, the first ``width - 3`` and
    ``...`` (kernels whose names then agree share a row)."""
    out: dict[str, list[float]] = defaultdict(list)
    for name, us in _events().items():
        out[name if len(name) <= width else name[: width - 3] + "..."].extend(us)
    return out


def _stats(path: Path) -> dict[str, KernelStats]:
    return stats_by_name(path, "torch-table")


@pytest.mark.parametrize(
    ("name", "width"),
    [("table_default.txt", 55), ("table_wide.txt.gz", 400), ("table_shapes.txt.gz", 120), ("log_with_table.txt", 55)],
)
def test_kernel_rows_equal_the_traces_kernels(name: str, width: int) -> None:
    truth = _cut(width)
    got = _stats(DATA / name)
    assert set(got) == set(truth)  # no op, copy or record_function range read as a kernel; no kernel missed
    for k, us in truth.items():
        assert got[k].calls == len(us)
        assert got[k].total_ns == pytest.approx(sum(us) * 1000, abs=1.0)


def test_the_rows_that_look_alike_are_in_the_table() -> None:
    """The cases the kernel test above separates: Inductor's Triton kernel beside the CPU op of its name that
    launched it, and a record_function range's GPU row (no CPU time, more device time than the footer counts)."""
    rows = [r.split() for r in (DATA / "table_default.txt").read_text().splitlines()]
    triton = [r for r in rows if r and r[0].startswith("triton_")]
    assert len(triton) >= 2 and {r[4] for r in triton} >= {"0.000us"} and len({r[0] for r in triton}) < len(triton)
    assert any(r and r[0] == "pipeline_forward" and r[4] == "0.000us" for r in rows)
    assert "pipeline_forward" not in _events() and any(n.startswith("triton_") for n in _events())


def test_the_result_says_how_many_names_the_table_cut() -> None:
    full = _events()
    cut = {n[:52] for n in full if len(n) > 55}
    shared = sum(len(n) > 55 for n in full) - len(cut)
    assert shared >= 1
    result = api.gap_report([DATA / "table_default.txt"])
    note = [w for w in result.warnings if "torch.profiler cut" in w]
    assert len(note) == 1 and f"cut {len(cut)} of {len(_cut(55))} kernel names to 55 characters" in note[0]
    assert f"{shared} rows sharing a cut name" in note[0]
    assert result.totals.launches == sum(len(v) for v in full.values())


def test_a_table_cut_by_row_limit_says_how_much_it_shows() -> None:
    """``row_limit=15`` keeps 15 rows: the footer still counts all device time (the trace's kernels and copies)."""
    device_us = sum(sum(v) for v in _events(("kernel", "gpu_memcpy", "gpu_memset")).values())
    got = _stats(DATA / "table_top15.txt")
    truth = _cut(55)
    assert got and set(got) <= set(truth)
    for k, s in got.items():
        assert s.calls <= len(truth[k])  # a cut name's other rows can fall past row_limit
    note = [w for w in api.gap_report([DATA / "table_top15.txt"]).warnings if "footer" in w]
    assert len(note) == 1
    numbers = re.findall(r"hold ([\d,]+\.\d) of the ([\d,]+\.\d) us", note[0])[0]
    shown, footer = (float(x.replace(",", "")) for x in numbers)
    assert footer == pytest.approx(device_us, abs=0.5)  # the footer prints ms to 3 decimals
    assert shown < footer


def test_a_table_at_the_end_of_a_long_log_is_found(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    body = (DATA / "log_with_table.txt").read_bytes()
    log.write_bytes(b"".join(b"it %d loss 2.5 \xfe\n" % i for i in range(9000)) + body)
    assert len(log.read_bytes()) - len(body) > 1 << 16
    want, got = _stats(DATA / "log_with_table.txt"), _stats(log)
    assert {k: (s.calls, s.total_ns) for k, s in got.items()} == {k: (s.calls, s.total_ns) for k, s in want.items()}


def test_damaged_tables_are_one_error_line(tmp_path: Path) -> None:
    lines = (DATA / "table_default.txt").read_text().splitlines()
    cut = tmp_path / "cut.txt"
    cut.write_text("\n".join(lines[:6]) + "\n" + lines[6][:90] + "\n")  # a row cut inside its numbers
    assert_one_error_line(run_kscope("gap", cut))
    no_table = tmp_path / "log.txt"  # the rule and the footer, not the header
    no_table.write_text("\n".join([lines[0], *lines[-2:]]) + "\n")
    assert_one_error_line(run_kscope("gap", no_table, "--format", "torch-table"))
