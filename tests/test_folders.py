"""Folders as input (issue 15): the folder ``kscope profile`` writes, a rocprofv3 output folder (one or more
processes, under ``<host>/``), an ``ncu`` capture folder; several runs in one folder are one error line.
Ground truth: rocprofv3's own ``kernel_stats.csv`` of the same run, and the same files passed one by one."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope import api
from kernelscope.errors import InputError
from kernelscope.inputs import open_profile
from kernelscope.readers.folder import resolve

DATA = Path(__file__).parent / "data"
ROCPROF = DATA / "rocprof_json"
KINETO = DATA / "kineto"


def _rocprof_run(root: Path) -> Path:
    """rocprofv3's default layout for two processes on one host: <out>/<host>/<pid>_..."""
    host = root / "out" / "mi350x-host"
    host.mkdir(parents=True)
    shutil.copy(ROCPROF / "rmsnorm_kernel_trace.csv", host / "4242_kernel_trace.csv")
    shutil.copy(ROCPROF / "rmsnorm_kernel_stats.csv", host / "4242_kernel_stats.csv")
    shutil.copy(ROCPROF / "rmsnorm_results.json", host / "4243_results.json")
    (host / "4242_domain_stats.csv").write_text("Name,Calls,TotalDurationNs,AverageNs,Percentage\n")
    return root / "out"


def test_a_rocprofv3_folder_is_its_processes_and_matches_rocprofs_own_stats(tmp_path: Path) -> None:
    out = _rocprof_run(tmp_path)
    files = resolve(out)
    # one file per process, the fullest one: the kernel trace over its stats summary
    assert [f.name for f in files] == ["4242_kernel_trace.csv", "4243_results.json"]
    one = api.gap_report([out / "mi350x-host" / "4242_kernel_trace.csv"])
    (out / "mi350x-host" / "4243_results.json").unlink()
    by_folder = api.gap_report([out])
    truth = {r["Name"]: r for r in csv.DictReader((ROCPROF / "rmsnorm_kernel_stats.csv").open())}
    assert {k.name for k in by_folder.kernels} == set(truth)
    for k in by_folder.kernels:
        assert k.calls == int(truth[k.name]["Calls"])
        assert k.total_us == pytest.approx(int(truth[k.name]["TotalDurationNs"]) / 1e3, rel=1e-6)
    assert by_folder.totals.kernel_time_us == one.totals.kernel_time_us
    assert by_folder.sources == [str(out / "mi350x-host" / "4242_kernel_trace.csv")]


def test_a_kscope_profile_folder_keeps_its_ranks(tmp_path: Path) -> None:
    out = tmp_path / "prof"
    out.mkdir()
    shutil.copy(KINETO / "h100_transformer_eager.json.gz", out / "trace_rank0_pid11.json.gz")
    shutil.copy(KINETO / "h100_transformer_compile.json.gz", out / "trace_rank1_pid12.json.gz")
    (out / "launches_rank0_pid11.jsonl").write_text('{"kernel": "x"}\n')  # the launch ledger: not a trace
    assert [f.name for f in resolve(out)] == ["trace_rank0_pid11.json.gz", "trace_rank1_pid12.json.gz"]
    per_rank = api.gap_report([out], per_rank=True)
    files = api.gap_report(sorted(out.glob("trace_*.json.gz")), per_rank=True)
    assert per_rank.totals == files.totals and len(per_rank.sources) == 2
    with pytest.raises(InputError, match="holds 2 ranks"):
        open_profile(out)  # a command that reads one trace must be told which


def test_several_runs_in_one_folder_are_one_error_listing_them(tmp_path: Path) -> None:
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(ROCPROF / "rmsnorm_kernel_trace.csv", mixed / "discover_kernel_trace.csv")
    shutil.copy(ROCPROF / "rmsnorm_results.json", mixed / "big_results.json")
    with pytest.raises(InputError, match=r"holds 2 runs.*'big'.*big_results\.json.*'discover'"):
        resolve(mixed)
    two = tmp_path / "two"  # two saved traces with no rank: two runs, not two ranks
    two.mkdir()
    shutil.copy(KINETO / "h100_transformer_eager.json.gz", two / "eager.json.gz")
    shutil.copy(KINETO / "h100_transformer_compile.json.gz", two / "compile.json.gz")
    with pytest.raises(InputError, match="holds 2 runs"):
        resolve(two)
    (two / "compile.json.gz").unlink()
    assert resolve(two) == [two / "eager.json.gz"]
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("nothing here")
    with pytest.raises(InputError, match="holds no profiler output"):
        resolve(empty)


def test_an_ncu_capture_folder_reads_as_its_report(tmp_path: Path) -> None:
    pytest.importorskip("ncu_report")
    cap = tmp_path / "ncu"
    cap.mkdir()
    shutil.copy(DATA / "ncu" / "h100_softmax_slow.ncu-rep", cap / "run.ncu-rep")
    assert resolve(cap) == [cap / "run.ncu-rep"]
    assert api.ncu(cap).kernels == api.ncu(cap / "run.ncu-rep").kernels


def _kscope(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernelscope", *args], capture_output=True, text=True, check=False)


def test_cli_says_what_it_read_and_refuses_ambiguity_in_one_line(tmp_path: Path) -> None:
    out = _rocprof_run(tmp_path)
    done = _kscope("gap", str(out), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["schema"] == "kernelscope.gap.v1"  # stdout stays JSON
    assert "read mi350x-host/4242_kernel_trace.csv, mi350x-host/4243_results.json" in done.stderr
    shutil.copy(ROCPROF / "rmsnorm_results.json", out / "mi350x-host" / "big_results.json")
    bad = _kscope("gap", str(out))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "holds 2 runs" in bad.stderr
    assert "Traceback" not in bad.stderr
