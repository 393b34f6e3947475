"""``kscope suggest`` on the real fixtures, against truth recomputed here from the profilers' own files.

Nsight Compute: ``h100_softmax_{slow,fast}_source_sass.csv.gz`` (ncu's own ``--page source --csv`` export of the
two reports, read with csv and gzip) for the stall sums, the top instruction and the global loads' widths and
bytes; ``h100_softmax_slow_raw.csv.gz`` for the DRAM bytes; ``*_details.csv.gz`` for throughput and occupancy.
ATT: code.json's own columns, read with json. The workload (``examples/softmax/softmax.py``: 8192 x 4096 bf16,
its defaults) says how many bytes one pass over the input is.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_error_line, run_kscope
from test_loop_eval import git, make_workspace

from kernelscope import api
from kernelscope.analyses.suggest import DEMOTION, RULES
from kernelscope.data import demo_file
from kernelscope.errors import InputError
from kernelscope.loop import ledger
from kernelscope.model.suggest import Experiment, SuggestResult
from kernelscope.model.task import LedgerRecord, Status
from kernelscope.presenters.report import write_folder

DATA = Path(__file__).parent / "data"
NCU = DATA / "ncu"
SLOW, FAST = NCU / "h100_softmax_slow.ncu-rep", NCU / "h100_softmax_fast.ncu-rep"
RMSNORM = next((DATA / "att" / "rmsnorm" / "big").iterdir())
RMSNORM_TRACE = demo_file("mi350x/rmsnorm/discover_kernel_trace.csv")
ONE_PASS_BYTES = 8192 * 4096 * 2  # the softmax's input, read once
KERNEL = "softmax_kernel"


# --- truth from ncu's own exports --------------------------------------------------------------------------


@cache
def sass(variant: str) -> list[dict[str, str]]:
    """The source page's SASS rows (one kernel per export: a name line, the header, the rows)."""
    text = gzip.decompress((NCU / f"h100_softmax_{variant}_source_sass.csv.gz").read_bytes()).decode()
    rows = list(csv.reader(io.StringIO(text)))
    return [dict(zip(rows[1], r, strict=True)) for r in rows[2:]]


def samples(variant: str, column: str = "Warp Stall Sampling (All Samples)") -> int:
    return sum(int(r[column]) for r in sass(variant))


def global_loads(variant: str) -> tuple[dict[int, int], float]:
    """Executed global loads by bits per thread, and the bytes they request (thread executions x width)."""
    widths: dict[int, int] = {}
    requested = 0.0
    for r in sass(variant):
        op = r["Source"].split()[1] if r["Source"].strip().startswith("@") else r["Source"].split()[0]
        if not op.startswith("LDG") or not int(r["Instructions Executed"]):
            continue
        bits = int(m[1]) if (m := re.search(r"\.(8|16|32|64|128)(?:\.|$)", op)) else 32
        widths[bits] = widths.get(bits, 0) + int(r["Instructions Executed"])
        requested += int(r["Thread Instructions Executed"]) * bits / 8
    return widths, requested


def details(variant: str, name: str) -> float:
    """A metric of the details page (``--page details --csv``) as a number."""
    with gzip.open(NCU / f"h100_softmax_{variant}_details.csv.gz", "rt") as f:
        row = next(r for r in csv.DictReader(f) if r["Metric Name"] == name)
    return float(row["Metric Value"].replace(",", ""))


def raw(name: str) -> tuple[str, float]:
    """(unit, value) of a metric on the slow report's raw page (a header row, a unit row, a value row)."""
    with gzip.open(NCU / "h100_softmax_slow_raw.csv.gz", "rt") as f:
        header, units, values = list(csv.reader(f))
    i = header.index(name)
    return units[i], float(values[i])


@cache
def suggest_ncu(path: Path) -> SuggestResult:
    return api.suggest(ncu_report=path)


def experiment(result: SuggestResult, lever: str) -> Experiment:
    return next(e for e in result.experiments if e.lever == lever)


def levers(result: SuggestResult) -> list[str]:
    return [e.lever for e in result.experiments]


# --- Nsight Compute: the slow softmax and its one-pass rewrite ----------------------------------------------


def test_slow_softmax_ranks_memory_access_and_a_one_pass_algorithm_first() -> None:
    r = suggest_ncu(SLOW)
    assert r.schema == "kernelscope.suggest.v1" and r.evidence_used == {"ncu": [str(SLOW)]}
    assert levers(r)[:2] == ["memory_access", "algorithm"]
    assert [e.rank for e in r.experiments] == list(range(1, len(r.experiments) + 1))
    assert [e.score for e in r.experiments] == sorted((e.score for e in r.experiments), reverse=True)
    for e in r.experiments:
        assert e.kernel.name == KERNEL and e.kernel.share_pct == pytest.approx(100.0)  # the report's only kernel
        assert all(s.evidence and s.inference and s.action for s in e.rationale)
        assert f"--lever {e.lever}" in e.contract.command and f"--kernel {KERNEL}" in e.contract.command
        assert e.files == [] and not e.demoted_by


def test_slow_softmax_evidence_quotes_the_stalls_and_the_hot_load() -> None:
    e = experiment(suggest_ncu(SLOW), "memory_access")
    text = "\n".join(s.evidence for s in e.rationale)
    total, long_sb = samples("slow"), samples("slow", "stall_long_sb")
    assert f"long scoreboard {100 * long_sb / total:.1f}% of {total:,} warp-stall samples" in text
    top = max(sass("slow"), key=lambda r: int(r["Warp Stall Sampling (All Samples)"]))
    n = int(top["Warp Stall Sampling (All Samples)"])
    assert f"top instruction {top['Address']} `{top['Source'].strip()}`: {n:,} samples ({100 * n / total:.1f}%)" in text
    assert f"long scoreboard {int(top['stall_long_sb']):,}" in text
    # the hot line the report's line table names is the third pass's load in the workload's source
    (where,) = e.hotspots
    file, line = where.rsplit(":", 1)
    assert file.endswith("examples/softmax/softmax.py") and where in text
    source = (Path(__file__).parents[1] / "examples" / "softmax" / "softmax.py").read_text().splitlines()
    assert "tl.load(" in source[int(line) - 1] and source[int(line) - 1].strip() in text
    widths, _ = global_loads("slow")
    assert set(widths) == {64}  # every executed global load is 64-bit
    assert f"100% of {sum(widths.values()):,} executed global loads are narrower than 128 bits" in text
    # the effect bound: DRAM headroom, ncu's DRAM throughput being the share of the datasheet bandwidth here
    assert e.expected.kernel_pct == pytest.approx(100 - details("slow", "DRAM Throughput"), abs=1.0)
    assert e.risk.level == "low"


def test_slow_softmax_reads_its_input_three_times() -> None:
    e = experiment(suggest_ncu(SLOW), "algorithm")
    _, requested = global_loads("slow")
    assert requested == 3 * ONE_PASS_BYTES  # three passes over the rows, from ncu's own counts
    unit, dram = raw("dram__bytes_read.sum")
    assert unit == "Mbyte"
    first = e.rationale[0].evidence
    assert f"request {requested / 1e6:,.1f} MB; DRAM delivered {dram:,.1f} MB of reads" in first
    assert f"loaded {requested / (dram * 1e6):.2f} times" in e.rationale[0].inference
    assert e.expected.kernel_pct == pytest.approx(100 * (1 - dram * 1e6 / requested))


def test_slow_softmax_one_warp_blocks_cap_occupancy() -> None:
    e = experiment(suggest_ncu(SLOW), "launch_config")
    assert details("slow", "Block Size") == 32 and details("slow", "Theoretical Occupancy") == 50
    assert "32-thread blocks" in e.rationale[0].evidence and "(50%)" in e.rationale[0].evidence


def test_fast_softmax_ranks_differently_because_its_evidence_differs() -> None:
    slow, fast = suggest_ncu(SLOW), suggest_ncu(FAST)
    assert levers(fast) != levers(slow)
    widths, requested = global_loads("fast")
    # one pass over the input: no repeated-passes experiment
    assert requested == ONE_PASS_BYTES and "algorithm" not in levers(fast)
    # 256-thread blocks reach full theoretical occupancy: no launch_config experiment
    assert details("fast", "Theoretical Occupancy") == 100 and "launch_config" not in levers(fast)
    # every load is already 128-bit: the memory_access argument no longer cites narrow loads
    assert set(widths) == {128}
    memory = experiment(fast, "memory_access")
    assert not any("narrower than" in s.evidence for s in memory.rationale)
    # closer to the DRAM roof: a smaller bound and a lower score than the slow kernel's
    assert memory.expected.kernel_pct == pytest.approx(100 - details("fast", "DRAM Throughput"), abs=1.0)
    assert memory.score < experiment(slow, "memory_access").score / 2
    # the one-pass version reduces across 8 warps: block barriers appear, and with them synchronization
    total, barrier = samples("fast"), samples("fast", "stall_barrier")
    assert 100 * barrier / total >= 10 and samples("slow", "stall_barrier") == 0
    sync = experiment(fast, "synchronization")
    assert f"barrier {100 * barrier / total:.1f}% of {total:,} warp-stall samples" in sync.rationale[0].evidence
    assert sync.expected.kernel_pct == pytest.approx(100 * barrier / total)
    assert "synchronization" not in levers(slow)


# --- ATT ---------------------------------------------------------------------------------------------------


def test_att_capture_argues_from_its_stall_breakdown() -> None:
    rows = [r for r in json.loads((RMSNORM / "code.json").read_text())["code"] if not r[0].startswith(";")]
    stall, busy = sum(r[8] for r in rows), sum(r[7] + r[9] for r in rows)
    waits = [r for r in rows if r[0].startswith("s_waitcnt")]
    assert not any("vmcnt" in r[0] and "lgkmcnt" in r[0] and r[8] for r in waits)  # no combined waits to split
    vmem = sum(r[8] for r in waits if "vmcnt" in r[0])
    barrier = sum(r[8] for r in rows if r[0].startswith("s_barrier"))
    r = api.suggest(att_dirs=[RMSNORM])
    assert r.evidence_used == {"att": [str(RMSNORM)]}
    assert any("scored as if it took all of the GPU time" in n for n in r.notes)  # nothing timed it
    memory = experiment(r, "memory_access")
    assert memory.kernel.name == "rmsnorm_kernel_0" and memory.kernel.share_pct is None
    assert f"vmem_wait holds {100 * vmem / stall:.1f}% of {stall:,} stall cycles" in memory.rationale[0].evidence
    assert memory.expected.kernel_pct == pytest.approx(100 * vmem / busy)
    sync = experiment(r, "synchronization")
    assert f"barrier holds {100 * barrier / stall:.1f}% of {stall:,} stall cycles" in sync.rationale[0].evidence


def test_a_trace_gives_the_att_kernel_its_share() -> None:
    r = api.suggest([RMSNORM_TRACE], att_dirs=[RMSNORM])
    with RMSNORM_TRACE.open() as f:
        durations = [
            (row["Kernel_Name"], int(row["End_Timestamp"]) - int(row["Start_Timestamp"])) for row in csv.DictReader(f)
        ]
    share = 100 * sum(d for n, d in durations if n == "rmsnorm_kernel_0") / sum(d for _, d in durations)
    memory = experiment(r, "memory_access")
    assert memory.kernel.share_pct == pytest.approx(share)
    assert memory.score == pytest.approx(share / 100 * 0.9 * memory.expected.kernel_pct / 100, abs=1e-4)


# --- the ledger demotes levers that failed on the kernel ---------------------------------------------------


def _record(i: int, status: Status, kernel: str = KERNEL, lever: str = "memory_access") -> LedgerRecord:
    return LedgerRecord(
        id=f"20260101T00000{i}Z-0000000{i}", task=f"t{i}", time=f"2026-01-01T00:00:0{i}.000+00:00", status=status,
        metric="time_us", direction="lower", speedup=None, ci=None, p_value=None, baseline_median=None,
        candidate_median=None, runs=20, baseline_commit=None, candidate_commit=None, diff_hash=None,
        result=f"runs/t{i}/result.json", reason="", kernel=kernel, lever=lever,  # type: ignore[arg-type]
    )  # fmt: skip


def test_a_failed_lever_is_demoted_on_its_kernel_only(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    api.init_workspace(ws)
    kept = [_record(1, "improved"), _record(2, "unstable"), _record(3, "violation"), _record(4, "needs_baseline"),
            _record(5, "regressed", kernel="other_kernel"), _record(6, "regressed", lever="fusion")]  # fmt: skip
    failed = _record(7, "regressed")
    for rec in [*kept, failed]:
        ledger.append(ws / "ledger.jsonl", ws / "ledger.lock", rec)
    before = suggest_ncu(SLOW)
    after = api.suggest(ncu_report=SLOW, workspace=ws)
    assert after.evidence_used["ledger"] == [str(ws.resolve() / "ledger.jsonl")]
    old, new = experiment(before, "memory_access"), experiment(after, "memory_access")
    assert old.rank == 1 and new.rank > old.rank
    assert [d.id for d in new.demoted_by] == [failed.id] and new.demoted_by[0].factor == 0.4
    assert new.score == pytest.approx(old.score * 0.4, abs=1e-4)
    assert all(not e.demoted_by for e in after.experiments if e.lever != "memory_access")
    assert f"-w {ws.resolve()}" in new.contract.command


def test_task_lever_reaches_the_ledger_and_demotes(tmp_path: Path) -> None:
    s = make_workspace(tmp_path)
    api.new_task("t", workspace=s.ws, repo=s.repo, baseline_ref="base", allowed=["kernel/**"],
                 eval_command=f"{sys.executable} bench.py", metric="time_us", direction="lower",
                 timeout=5, runs=6, warmup=0, kernel=KERNEL, lever="memory_access")  # fmt: skip
    folder = s.ws / "tasks" / "t"
    assert json.loads((folder / "task.json").read_text())["lever"] == "memory_access"
    assert "lever `memory_access`" in (folder / "TASK.md").read_text()
    s.configure(shift=1.3)  # the candidate is slower
    doc = s.eval()
    assert doc["status"] == "regressed" and (doc["kernel"], doc["lever"]) == (KERNEL, "memory_access")
    (line,) = s.ledger_lines()
    assert (line["kernel"], line["lever"], line["id"]) == (KERNEL, "memory_access", doc["id"])
    demoted = experiment(api.suggest(ncu_report=SLOW, workspace=s.ws), "memory_access")
    assert [d.id for d in demoted.demoted_by] == [doc["id"]]


def test_task_new_refuses_an_unknown_lever(tmp_path: Path) -> None:
    s = make_workspace(tmp_path)
    with pytest.raises(InputError, match="--lever speed: choose one of memory_access"):
        api.new_task("t", workspace=s.ws, repo=s.repo, baseline_ref="base", allowed=["kernel/**"], eval_command="x",
                     metric="time_us", direction="lower", timeout=5, lever="speed")  # fmt: skip


# --- sources, filters, the report ---------------------------------------------------------------------------


def test_repo_names_the_kernels_files_and_the_contract_uses_them(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "kernels").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "kernels" / "softmax.py").write_text(
        "import triton\n\n\n@triton.jit\ndef softmax_kernel(x_ptr, y_ptr, n):\n    pass\n"
    )
    (repo / "tests" / "test_softmax.py").write_text(
        "from kernels.softmax import softmax_kernel\n\n\ndef test_softmax():\n    assert softmax_kernel\n"
    )
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    for key, value in (("user.email", "t@example.com"), ("user.name", "t"), ("commit.gpgsign", "false")):
        git(repo, "config", key, value)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "softmax")
    head = git(repo, "rev-parse", "HEAD").strip()
    r = api.suggest(ncu_report=SLOW, repo=repo, index_db=tmp_path / "index.sqlite", top=1)
    (e,) = r.experiments
    assert e.files == ["kernels/softmax.py", "tests/test_softmax.py"]
    assert f"--repo {repo.resolve()} --baseline-ref {head} --allowed kernels/softmax.py" in e.contract.command
    assert "tests/test_softmax.py" in e.contract.correctness


def test_kernel_filter_and_top(tmp_path: Path) -> None:
    r = api.suggest(ncu_report=NCU / "h100_triton_softmax_mm.ncu-rep", kernel="^softmax", top=1)
    assert [e.kernel.name for e in r.experiments] == ["softmax_k"]
    assert any("below the top 1" in n for n in r.notes)
    with pytest.raises(InputError, match="matches none"):
        api.suggest(ncu_report=SLOW, kernel="^mm_")


def test_report_lists_the_candidates(tmp_path: Path) -> None:
    report = api.report(ncu_report=SLOW)
    assert [e.lever for e in report.candidates] == levers(suggest_ncu(SLOW))[: len(report.candidates)]
    assert [f.text.split()[1] for f in report.headline if f.topic == "candidate"] == [
        e.lever for e in report.candidates
    ]
    write_folder(report, tmp_path)
    md = (tmp_path / "REPORT.md").read_text()
    assert "## Candidates" in md and "#1 memory_access on softmax_kernel" in md
    assert "<h2>Candidates" in (tmp_path / "index.html").read_text()
    doc: dict[str, Any] = json.loads((tmp_path / "report.json").read_text())
    assert doc["candidates"][0]["lever"] == "memory_access"


def test_docs_state_every_rule_and_factor() -> None:
    doc = (Path(__file__).parents[1] / "docs" / "suggest.md").read_text().splitlines()
    for rule in RULES:
        (row,) = [line for line in doc if line.startswith(f"| `{rule.id}` | {rule.lever} |")]
        assert f"| {rule.confidence:g} | {rule.risk.level} |" in row
    for status, factor in DEMOTION.items():
        assert any(line.startswith(f"| `{status}` | {factor:g} |") for line in doc)


def test_kernels_of_one_function_stay_distinct_and_library_gemms_are_tuned_first() -> None:
    """A real vLLM FP8 trace (RPD, MI300X-class, no shapes): its hipBLASLt GEMMs share the function name
    ``Cijk_Alik_Bljk`` and each keeps its own share (they were merged into one with the last one's 2.9 %); with
    nothing to place them on a roof, the hottest is tuned first (TunableOp), ranked by its share."""
    trace = DATA / "rpd" / "vllm_mi300x.rpd.gz"
    gap = api.gap_report([trace])
    gemms = sorted((r.pct for r in gap.kernels if r.name.startswith("Cijk_") and r.pct >= 2), reverse=True)
    result = api.suggest([trace], top=20)
    found = result.experiments
    tuned = [e for e in found if e.rule == "untuned-library-gemm"]
    assert [round(e.kernel.share_pct or 0, 6) for e in tuned] == [round(p, 6) for p in gemms] and len(gemms) >= 3
    assert found[0] is tuned[0] and "--tunableop" in tuned[0].rationale[1].action
    # CK's attention (14 % of the GPU time) has no evidence any rule reads: a note says so, with its share
    ck = next(r for r in gap.kernels if r.function == "FmhaFwdKernel")
    assert not any(e.kernel.name == ck.name for e in found)
    assert any(f"FmhaFwdKernel ({ck.pct:.1f}%)" in n for n in result.notes)


def test_a_hot_triton_kernel_is_tuned_and_a_cold_one_or_a_gemm_on_its_roofline_is_not(tmp_path: Path) -> None:
    events = []
    for i, (name, dur) in enumerate([("_attn_fwd", 900), ("matmul_kernel", 10)] * 3):
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 100 * i, "dur": dur / 10,
                       "args": {"device": 0}})  # fmt: skip
    trace = tmp_path / "triton.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    rules = {(e.rule, e.kernel.name) for e in api.suggest([trace]).experiments}
    assert ("untuned-configs", "_attn_fwd") in rules and ("untuned-configs", "matmul_kernel") not in rules
    # a cuBLAS GEMM the trace's shapes place on the H100's roofline (61 % of the GPU time) is judged by its roof
    ranked = api.suggest([demo_file("h100_transformer_eager.json.gz")], top=50).experiments
    on_gemm = {e.rule for e in ranked if e.kernel.name.startswith("nvjet_")}
    assert on_gemm == {"library-below-roof"}


# --- the command line -------------------------------------------------------------------------------------


def test_cli_json_carries_its_schema(tmp_path: Path) -> None:
    proc = run_kscope("suggest", "--ncu", SLOW, "--json", "--top", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "kernelscope.suggest.v1" and len(doc["experiments"]) == 2
    assert doc["experiments"][0]["lever"] == "memory_access"
    text = run_kscope("suggest", "--ncu", SLOW, "--top", "1", cwd=tmp_path).stdout
    assert "#1 memory_access on softmax_kernel" in text and "evidence 1: roofline (ncu counters)" in text
    md = run_kscope("suggest", "--ncu", SLOW, "--markdown", cwd=tmp_path).stdout
    assert md.startswith("# kscope suggest") and "| 1 | memory_access | softmax_kernel |" in md


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--ncu", "missing.ncu-rep"],
        ["--ncu", "bad.ncu-rep"],
        ["--att", "."],
        ["--ncu", SLOW, "--kernel", "("],
        ["--ncu", SLOW, "--top", "0"],
        ["--ncu", SLOW, "-w", "."],
    ],
    ids=["nothing", "missing", "corrupt", "not-att", "bad-regex", "top-0", "not-a-workspace"],
)
def test_cli_bad_input_is_one_error_line(args: list[str | Path], tmp_path: Path) -> None:
    (tmp_path / "bad.ncu-rep").write_text("not a report\n")
    assert_one_error_line(run_kscope("suggest", *args, cwd=tmp_path))
