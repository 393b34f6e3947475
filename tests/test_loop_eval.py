"""``kscope init / task / eval / ledger`` end to end on a synthetic benchmark in a temporary git repo.

The benchmark (``bench.py``) prints ``KSCOPE_METRIC time_us=<sample>`` drawn from a lognormal whose
shift, noise and failure mode come from ``kernel/config.json`` — an allowed file the tests edit to
make the candidate faster, slower, broken or hanging. Draws are seeded by a run counter kept outside the
repository, so each eval's samples are reproducible.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
from conftest import assert_one_error_line, run_kscope
from typer.testing import CliRunner

from kernelscope import api
from kernelscope.cli import app
from kernelscope.errors import InputError
from kernelscope.loop import ledger
from kernelscope.model.task import LedgerRecord

BENCH = """\
import fcntl, json, random, subprocess, sys, time
from pathlib import Path

cfg = json.loads(Path("kernel/config.json").read_text())
with open({state!r}, "a+") as f:  # the run counter seeds the draw
    fcntl.flock(f, fcntl.LOCK_EX)
    f.seek(0)
    n = len(f.read())
    f.write("x")
if cfg["mode"] == "hang":  # a grandchild in the same process group, then sleep past any timeout
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    Path({pid!r}).write_text(str(child.pid))
    time.sleep(60)
if cfg["mode"] == "nometric":
    sys.exit(0)
time.sleep(cfg.get("sleep", 0))
value = 100.0 * cfg["shift"] * random.Random(1_000_003 + n).lognormvariate(0, cfg["cv"])
print(f"KSCOPE_METRIC time_us={{value}}")
"""
CHECK = """\
import json, sys
from pathlib import Path
sys.exit(1 if json.loads(Path("kernel/config.json").read_text())["mode"] == "broken" else 0)
"""


@dataclass(frozen=True)
class Synth:
    root: Path  # holds repo/, ws/ and the run counter
    repo: Path
    ws: Path
    pid_file: Path

    def configure(self, mode: str = "ok", shift: float = 1.0, cv: float = 0.01, **extra: float) -> None:
        (self.repo / "kernel" / "config.json").write_text(json.dumps({"mode": mode, "shift": shift, "cv": cv, **extra}))

    def kscope(self, *args: str | Path) -> CompletedProcess[str]:
        """The CLI in a subprocess, as a user runs it."""
        return run_kscope(*args, cwd=self.root)

    def cli(self, *args: str | Path) -> str:
        """The CLI in this process (typer's runner): the same parsing, commands and output without paying
        Python's start-up and kscope's imports for each of the many evals; returns stdout."""
        res = CliRunner().invoke(app, [str(a) for a in args])
        assert res.exit_code == 0, res.stderr
        return res.stdout

    def new_task(self, name: str = "t", **options: Any) -> None:
        """The benchmark as a task, made in-process (the CLI of ``task new`` has its own tests)."""
        defaults: dict[str, Any] = {
            "workspace": self.ws,
            "repo": self.repo,
            "baseline_ref": "base",
            "allowed": ["kernel/**"],
            "eval_command": f"{sys.executable} bench.py",
            "metric": "time_us",
            "direction": "lower",
            "timeout": 1.5,
            "runs": 6,
            "warmup": 0,
        }
        api.new_task(name, **{**defaults, **options})

    def eval(self, name: str = "t", *extra: str) -> dict[str, Any]:
        """``kscope eval NAME --json``."""
        doc: dict[str, Any] = json.loads(self.cli("eval", name, "--workspace", self.ws, "--json", *extra))
        return doc

    def ledger_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (self.ws / "ledger.jsonl").read_text().splitlines()]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def make_repo(root: Path) -> Synth:
    """A git repo with the benchmark, its correctness check and a tagged ``base`` commit."""
    repo = root / "repo"
    (repo / "kernel").mkdir(parents=True)
    synth = Synth(root, repo, root / "ws", root / "grandchild.pid")
    (repo / "bench.py").write_text(BENCH.format(state=str(root / "runs.count"), pid=str(synth.pid_file)))
    (repo / "check.py").write_text(CHECK)
    synth.configure()
    git(root, "init", "-q", "-b", "main", str(repo))
    for key, value in (("user.email", "t@example.com"), ("user.name", "t"), ("commit.gpgsign", "false")):
        git(repo, "config", key, value)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "tag", "base")
    return synth


def make_workspace(root: Path) -> Synth:
    """``make_repo`` plus an initialized workspace beside it (in-process: kscope init has its own CLI test)."""
    s = make_repo(root)
    api.init_workspace(s.ws)
    return s


@pytest.fixture
def synth(tmp_path: Path) -> Synth:
    return make_workspace(tmp_path)


def gone(pid: int) -> bool:
    """No such process, or only its zombie (killed, waiting for a reaper)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "\nState:\tZ" in status.read_text()


# --- statuses -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shift", "status"), [(0.9, "improved"), (1.1, "regressed"), (1.0, "neutral")], ids=["faster", "slower", "same"]
)
def test_eval_status_follows_the_candidates_shift(synth: Synth, shift: float, status: str) -> None:
    synth.new_task()
    synth.configure(shift=shift)
    doc = synth.eval()
    assert doc["schema"] == "kernelscope.eval.v1"
    assert doc["status"] == status, doc["reason"]
    assert doc["runs"] == 6 and len(doc["baseline"]["samples"]) == len(doc["candidate"]["samples"]) == 6
    assert doc["speedup"] == pytest.approx(doc["baseline"]["median"] / doc["candidate"]["median"])
    assert doc["speedup"] == pytest.approx(1 / shift, rel=0.02)
    low, high = doc["ci"]
    assert low <= doc["speedup"] <= high
    assert 0 < doc["p_value"] <= 1
    # interleaved: baseline, candidate, baseline, ... in the order the runs happened
    assert [e["role"] for e in doc["executions"]] == ["baseline", "candidate"] * 6
    assert doc["executions"][0]["cwd"].startswith(str(synth.ws / "cache" / "baselines"))
    assert doc["executions"][1]["cwd"] == str(synth.repo)
    assert doc["changed_files"] == ([] if shift == 1.0 else ["kernel/config.json"])
    saved = json.loads((synth.ws / doc["result_path"]).read_text())
    assert saved["status"] == status and saved["baseline"]["samples"] == doc["baseline"]["samples"]
    [line] = synth.ledger_lines()
    assert line["id"] == doc["id"] and line["status"] == status and line["speedup"] == doc["speedup"]


def test_noisy_samples_are_unstable(synth: Synth) -> None:
    synth.new_task(runs=8)
    synth.configure(cv=0.25)
    doc = synth.eval()
    assert doc["status"] == "unstable", doc["reason"]
    assert max(doc["baseline"]["spread"], doc["candidate"]["spread"]) > doc["rule"]["max_spread"]


def test_a_change_outside_the_allowed_files_is_a_violation_and_runs_nothing(synth: Synth) -> None:
    synth.new_task()
    (synth.repo / "bench.py").write_text("print('KSCOPE_METRIC time_us=1')\n")  # gaming the judge
    (synth.repo / "notes.txt").write_text("untracked files count too\n")
    doc = synth.eval()
    assert doc["status"] == "violation"
    assert doc["violations"] == ["bench.py", "notes.txt"]
    assert doc["executions"] == [] and doc["speedup"] is None
    assert not (synth.ws / "cache" / "baselines" / "t").exists()  # not even the baseline was built
    assert synth.ledger_lines()[0]["status"] == "violation"


def test_a_hanging_candidate_times_out_and_its_whole_process_group_dies(synth: Synth) -> None:
    synth.new_task()
    synth.configure(mode="hang")
    t0 = time.monotonic()
    doc = synth.eval()
    assert doc["status"] == "timeout", doc["reason"]
    assert time.monotonic() - t0 < 20
    last = doc["executions"][-1]
    assert last["role"] == "candidate" and last["timed_out"] and last["returncode"] is None
    pid = int(synth.pid_file.read_text())
    deadline = time.monotonic() + 5
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(pid), f"grandchild {pid} survived the timeout"
    assert synth.ledger_lines()[0]["status"] == "timeout"


def test_a_failing_correctness_check_fails_the_candidate_before_any_timing(synth: Synth) -> None:
    synth.new_task(correctness=[f"{sys.executable} check.py"], warmup=1)
    synth.configure(mode="broken", shift=0.5)  # much faster, and wrong
    doc = synth.eval()
    assert doc["status"] == "failed"
    assert "correctness" in doc["reason"] and "exited with status 1" in doc["reason"]
    assert [(e["role"], e["phase"]) for e in doc["executions"]] == [
        ("baseline", "correctness"),
        ("candidate", "correctness"),
    ]


def test_a_baseline_without_a_metric_needs_a_baseline(synth: Synth) -> None:
    synth.configure(mode="nometric")
    git(synth.repo, "commit", "-qam", "broken benchmark")
    git(synth.repo, "tag", "-f", "base")
    synth.new_task()
    synth.configure()  # the candidate works
    doc = synth.eval()
    assert doc["status"] == "needs_baseline"
    assert "reported no time_us" in doc["reason"] and "KSCOPE_METRIC time_us=" in doc["reason"]
    assert doc["executions"][0]["role"] == "baseline" and len(doc["executions"]) == 1


def test_metrics_file_and_shell_commands(synth: Synth) -> None:
    """``--shell`` runs the string through /bin/sh; ``$KSCOPE_METRICS_FILE`` wins over stdout."""
    script = 'echo KSCOPE_METRIC time_us=999; echo \'{"time_us": 50, "other": 2}\' > "$KSCOPE_METRICS_FILE"'
    out = synth.cli(
        *("task", "new", "sh", "-w", synth.ws, "--repo", synth.repo, "--baseline-ref", "base", "--allowed", "kernel/"),
        *("--eval-command", script, "--shell", "--metric", "time_us", "--direction", "lower", "--timeout", "2"),
        *("--runs", "5", "--warmup", "0", "--json"),
    )
    assert json.loads(out)["eval_command"] == [script]
    doc = synth.eval("sh")
    assert doc["baseline"]["samples"] == [50.0] * 5 and doc["status"] == "neutral"
    assert doc["executions"][0]["metrics"] == {"time_us": 50.0, "other": 2.0}
    assert doc["eval_command"] == [script] and doc["shell"] is True


def test_baseline_worktree_is_cached_and_refreshed(synth: Synth) -> None:
    synth.new_task(baseline_ref="main", runs=5)
    tree = synth.ws / "cache" / "baselines" / "t"
    api.evaluate("t", workspace=synth.ws)
    marker = tree / "build-artifact"
    marker.write_text("kept between evals")
    api.evaluate("t", workspace=synth.ws)
    assert marker.exists()
    # the branch moves on: the cache no longer matches what the ref names
    (synth.repo / "kernel" / "more.txt").write_text("x")
    git(synth.repo, "add", "-A")
    git(synth.repo, "commit", "-qm", "more")
    proc = synth.kscope("eval", "t", "-w", synth.ws)
    assert_one_error_line(proc)
    assert "--refresh-baseline" in proc.stderr
    result = api.evaluate("t", workspace=synth.ws, refresh_baseline=True)
    assert not marker.exists()
    assert result.baseline.commit == git(synth.repo, "rev-parse", "HEAD").strip()


# --- the ledger -----------------------------------------------------------------------------------


def test_ledger_filters_summary_and_formats(synth: Synth) -> None:
    synth.new_task("fast", runs=5)
    synth.new_task("other", runs=5)
    runs = []
    for task, shift in (("fast", 0.8), ("fast", 0.7), ("other", 1.3)):  # in-process: quicker than the CLI
        synth.configure(shift=shift)
        runs.append(api.evaluate(task, workspace=synth.ws))
    first, second = runs[0], runs[1]
    doc = json.loads(synth.cli("ledger", "-w", synth.ws, "--json"))
    assert doc["schema"] == "kernelscope.ledger-view.v1" and len(doc["records"]) == 3
    by_task = {s["task"]: s for s in doc["summary"]}
    assert by_task["fast"]["evals"] == 2 and by_task["fast"]["improved"] == 2
    assert by_task["fast"]["best_speedup"] == max(first.speedup or 0, second.speedup or 0)
    assert by_task["other"]["last_status"] == "regressed" and by_task["other"]["best_speedup"] is None
    assert [r.task for r in api.ledger(workspace=synth.ws, status="regressed").records] == ["other"]
    assert [r.id for r in api.ledger(workspace=synth.ws, task="fast").records] == [first.id, second.id]
    later = api.ledger(workspace=synth.ws, since="2999-01-01")
    assert later.records == [] and later.summary == []
    assert len(api.ledger(workspace=synth.ws, since=first.started).records) == 3
    csv = synth.cli("ledger", "-w", synth.ws, "--csv").splitlines()
    assert csv[0].startswith("Time (UTC),Task,Kernel,Lever,Status,Speedup") and len(csv) == 4
    md = synth.cli("ledger", "-w", synth.ws, "--markdown")
    assert "## Ledger by task" in md and "| fast |" in md
    text = synth.cli("ledger", "-w", synth.ws)
    assert "improved" in text and "regressed" in text
    assert_one_error_line(synth.kscope("ledger", "-w", synth.ws, "--status", "great"))
    with pytest.raises(InputError, match="--since yesterday"):
        api.ledger(workspace=synth.ws, since="yesterday")


def _eval_after(barrier: Any, workspace: str) -> None:
    barrier.wait()
    api.evaluate("c", workspace=workspace)


def test_eight_concurrent_evals_leave_eight_whole_lines(synth: Synth) -> None:
    """8 processes start one eval each at the same moment (forked, so none pays kscope's imports again)."""
    import scipy.stats  # noqa: F401 - loaded once here rather than in each child

    synth.new_task("c", eval_command="echo KSCOPE_METRIC time_us=100", timeout=5.0, runs=5)
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(8)
    procs = [ctx.Process(target=_eval_after, args=(barrier, str(synth.ws))) for _ in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 8
    records, unreadable = ledger.read(synth.ws / "ledger.jsonl")
    assert unreadable == [] and len(records) == 8
    results = sorted((synth.ws / "runs" / "c").glob("*/result.json"))
    assert {r.id for r in records} == {json.loads(f.read_text())["id"] for f in results} and len(results) == 8
    spans = [
        (datetime.fromisoformat(d["started"]), d["duration_s"]) for d in map(json.loads, map(Path.read_text, results))
    ]
    first_end = min(start + timedelta(seconds=took) for start, took in spans)
    assert max(start for start, _ in spans) < first_end  # all eight were running at once


_APPENDER = """\
import sys
from pathlib import Path
from kernelscope.loop import ledger
from kernelscope.model.task import LedgerRecord

ws = Path(sys.argv[1])
i = 0
while True:
    i += 1
    ledger.append(ws / "ledger.jsonl", ws / "ledger.lock", LedgerRecord(
        id=f"{sys.argv[2]}-{i}", task="t", time="2025-01-01T00:00:00+00:00", status="neutral", metric="m",
        direction="lower", speedup=1.0, ci=[0.9, 1.1], p_value=0.5, baseline_median=1.0, candidate_median=1.0,
        runs=5, baseline_commit=None, candidate_commit=None, diff_hash=None, result="r", reason="x" * 20000))
"""


def test_kill_9_mid_append_leaves_every_line_whole(synth: Synth) -> None:
    """Writers killed with SIGKILL while appending 20 kB records: no torn or interleaved line."""
    path = synth.ws / "ledger.jsonl"
    for round_ in range(2):
        names = [f"w{round_}.{k}-" for k in range(3)]
        writers = [subprocess.Popen([sys.executable, "-c", _APPENDER, str(synth.ws), n[:-1]]) for n in names]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until every writer is deep in its loop
            text = path.read_text()
            if all(text.count(f'"id":"{n}') >= 5 for n in names):
                break
            time.sleep(0.02)
        for w in writers:
            w.send_signal(signal.SIGKILL)
        for w in writers:
            w.wait()
    records, unreadable = ledger.read(path)
    assert unreadable == []
    assert len(records) >= 30
    assert all(len(r.reason) == 20000 for r in records)
    assert len({r.id for r in records}) == len(records)


def test_kill_9_mid_eval_leaves_a_valid_ledger(synth: Synth) -> None:
    synth.new_task(runs=5)
    api.evaluate("t", workspace=synth.ws)
    synth.configure(sleep=0.3)
    proc = subprocess.Popen([sys.executable, "-m", "kernelscope", "eval", "t", "-w", str(synth.ws)], cwd=synth.root)
    counter = synth.root / "runs.count"
    before = counter.stat().st_size
    deadline = time.monotonic() + 30
    while counter.stat().st_size < before + 2 and time.monotonic() < deadline:  # its runs have begun
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    records, unreadable = ledger.read(synth.ws / "ledger.jsonl")
    assert unreadable == [] and len(records) == 1
    synth.configure()  # a later eval appends normally
    api.evaluate("t", workspace=synth.ws)
    assert [r["status"] for r in synth.ledger_lines()] == ["neutral", "neutral"]


def test_a_torn_line_is_set_aside_and_does_not_swallow_the_next_record(tmp_path: Path) -> None:
    path, lock = tmp_path / "ledger.jsonl", tmp_path / "ledger.lock"
    path.write_bytes(b'{"id": "half a rec')  # e.g. an editor or another tool, cut off
    rec = LedgerRecord(
        id="a",
        task="t",
        time="2025-01-01T00:00:00+00:00",
        status="failed",
        metric="m",
        direction="lower",
        speedup=None,
        ci=None,
        p_value=None,
        baseline_median=None,
        candidate_median=None,
        runs=5,
        baseline_commit=None,
        candidate_commit=None,
        diff_hash=None,
        result="r",
        reason="",
    )
    assert ledger.read(path) == ([], [])  # unterminated: not a line yet
    ledger.append(path, lock, rec)
    records, unreadable = ledger.read(path)
    assert [r.id for r in records] == ["a"] and unreadable == []
    assert (tmp_path / "ledger.jsonl.torn").read_bytes() == b'{"id": "half a rec\n'  # kept aside, not lost


# --- errors and parity ----------------------------------------------------------------------------


def test_bad_input_is_one_error_line(synth: Synth) -> None:
    assert_one_error_line(synth.kscope("eval", "nope", "-w", synth.ws))
    assert_one_error_line(synth.kscope("ledger", "-w", synth.root))  # not a workspace
    with pytest.raises(InputError, match="task name"):
        api.evaluate("../../etc", workspace=synth.ws)
    synth.new_task(runs=5)
    with pytest.raises(InputError, match="--runs 3: at least 5"):
        api.evaluate("t", workspace=synth.ws, runs=3)


def _options(command: Callable[..., Any]) -> dict[str, Any]:
    import typer

    from kernelscope.cli import app

    group = typer.main.get_command(app)
    path = {"evaluate": ["eval"], "ledger": ["ledger"], "task_new": ["task", "new"], "init": ["init"]}
    cmd: Any = group
    for part in path[command.__name__]:
        cmd = cmd.commands[part]
    return {p.name: p for p in cmd.params}


@pytest.mark.parametrize(
    ("api_name", "cli_name"),
    [("evaluate", "evaluate"), ("ledger", "ledger"), ("new_task", "task_new"), ("init_workspace", "init")],
)
def test_cli_options_match_the_library(api_name: str, cli_name: str) -> None:
    import importlib
    import inspect

    lib = inspect.signature(getattr(api, api_name))
    cli = getattr(importlib.import_module("kernelscope.cli.loop"), cli_name)
    options = _options(cli)
    for name, param in lib.parameters.items():
        if name in ("progress",):
            continue
        assert name in options, f"kscope has no option for api.{api_name}({name}=...)"
        if param.default is not inspect.Parameter.empty and param.default != ".":
            assert options[name].default == param.default or (param.default == () and options[name].default is None)
