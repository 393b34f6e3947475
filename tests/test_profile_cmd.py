"""``kscope profile``: the tracer command lines, config files, errors, and a real run of the torch hook.

The real run needs a CPU build of torch (``.ci/run`` installs one when a local wheel exists; otherwise it
skips). It checks the hook against the trace it wrote, read independently with json+gzip: the number
of ``ProfilerStep#`` annotations equals the ``--active`` steps of the window.
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_error_line, run_kscope
from test_loop_eval import gone

from kernelscope.profiling import ProfileConfig, ProfileRun, run, runner
from kernelscope.profiling.tracers import HOOK_DIR, Invocation


def _plan(*args: str, cwd: Path) -> dict[str, Any]:
    proc = run_kscope("profile", "--dry-run", "--json", *args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def test_torch_plan(tmp_path: Path) -> None:
    doc = _plan(
        "--wait", "1", "--warmup", "0", "--active", "3", "--out", "traces", "--", "python", "x.py", cwd=tmp_path
    )
    assert doc["tracer"] == "torch"
    assert doc["argv"] == ["python", "x.py"]
    env = doc["env"]
    assert env["PYTHONPATH"].split(":")[0] == str(HOOK_DIR)
    assert (Path(env["PYTHONPATH"].split(":")[0]) / "sitecustomize.py").is_file()
    assert (env["KSCOPE_WAIT"], env["KSCOPE_WARMUP"], env["KSCOPE_ACTIVE"]) == ("1", "0", "3")
    assert env["KSCOPE_STEP_FN"] == "optimizer"
    assert Path(env["KSCOPE_TRACE_DIR"]) == (tmp_path / "traces").resolve()


def test_rocprofv3_plan(tmp_path: Path) -> None:
    doc = _plan("--tracer", "rocprofv3", "--out", "o", "--", "./app", "--n", "3", cwd=tmp_path)
    argv = doc["argv"]
    assert argv[0] == "rocprofv3" and "--kernel-trace" in argv and "--stats" in argv
    assert argv[argv.index("--output-format") + 1] == "csv"
    assert argv[argv.index("--output-directory") + 1] == str((tmp_path / "o").resolve())
    assert argv[argv.index("--") + 1 :] == ["./app", "--n", "3"]


def test_nsys_plan(tmp_path: Path) -> None:
    argv = _plan("--tracer", "nsys", "--", "./app", cwd=tmp_path)["argv"]
    assert argv[:2] == ["nsys", "profile"] and argv[argv.index("--export") + 1] == "sqlite"
    assert argv[-2:] == ["--", "./app"]


def test_ncu_plan_filters_kernels(tmp_path: Path) -> None:
    argv = _plan(
        "--ncu", "-k", "mm_k|softmax", "--launch-skip", "3", "--launch-count", "2", "--", "python", "x.py", cwd=tmp_path
    )["argv"]
    assert argv[0] == "ncu" and argv[argv.index("--set") + 1] == "full"
    assert argv[argv.index("--import-source") + 1] == "yes"
    assert argv[argv.index("--kernel-name") + 1] == "regex:mm_k|softmax"
    assert argv[argv.index("--kernel-name-base") + 1] == "function"
    assert (argv[argv.index("--launch-skip") + 1], argv[argv.index("--launch-count") + 1]) == ("3", "2")
    assert argv[argv.index("--export") + 1] == str((tmp_path / "kscope-out" / "run").resolve())
    assert argv[-3:] == ["--", "python", "x.py"]


def test_att_plan_traces_the_chosen_dispatches(tmp_path: Path) -> None:
    argv = _plan("--att", "-k", "rmsnorm", "--launch-skip", "3", "--launch-count", "2", "--", "./app", cwd=tmp_path)[
        "argv"
    ]
    assert argv[:2] == ["rocprofv3", "--att"] and "--kernel-trace" in argv
    assert argv[argv.index("--kernel-include-regex") + 1] == "rmsnorm"
    assert argv[argv.index("--kernel-iteration-range") + 1] == "[4-5]"  # one-based, inclusive
    assert argv[argv.index("--att-buffer-size") + 1] == "0x6000000"
    (tmp_path / "kscope-out").mkdir()
    (tmp_path / "kscope-out" / "out_1_shader_engine_0_1.att").write_bytes(b"")
    assert_one_error_line(run_kscope("profile", "--att", "--dry-run", "--", "./app", cwd=tmp_path))
    assert_one_error_line(run_kscope("profile", "--att", "--ncu", "--dry-run", "--", "./app", cwd=tmp_path))


def test_yaml_config_and_cli_override(tmp_path: Path) -> None:
    (tmp_path / "bench.yaml").write_text(
        "command: python train.py --steps 10\nwindow: {wait: 2, warmup: 1, active: 4, step_fn: none}\n"
        "env: {FOO: bar}\nsources: [{path: ../vllm, name: vllm}]\n"
    )
    doc = _plan("--config", "bench.yaml", "--active", "7", cwd=tmp_path)
    assert doc["argv"] == ["python", "train.py", "--steps", "10"]
    assert doc["env"]["KSCOPE_ACTIVE"] == "7" and doc["env"]["KSCOPE_WAIT"] == "2"
    assert doc["env"]["KSCOPE_STEP_FN"] == "none"


def test_toml_config(tmp_path: Path) -> None:
    (tmp_path / "bench.toml").write_text('command = ["python3", "serve.py"]\ntracer = "torch"\n[window]\nactive = 2\n')
    doc = _plan("--config", "bench.toml", cwd=tmp_path)
    assert doc["argv"] == ["python3", "serve.py"] and doc["env"]["KSCOPE_ACTIVE"] == "2"


@pytest.mark.parametrize(
    ("files", "args"),
    [
        ({}, ("--config", "missing.yaml", "--dry-run")),
        ({"bad.yaml": "command: [unclosed\n"}, ("--config", "bad.yaml", "--dry-run")),
        ({"typo.yaml": "comand: python x.py\n"}, ("--config", "typo.yaml", "--dry-run")),
        ({"list.yaml": "- python\n"}, ("--config", "list.yaml", "--dry-run")),
        ({}, ("--dry-run",)),
        ({}, ("--tracer", "bogus", "--dry-run", "--", "python", "x.py")),
        ({}, ("--tracer", "torch", "--dry-run", "--", "./a.out")),
        ({}, ("--", "python3", "-c", "pass")),  # ran, but wrote no trace
        ({}, ("--timeout", "0", "--dry-run", "--", "python3", "x.py")),
    ],
)
def test_errors_are_one_line(files: dict[str, str], args: tuple[str, ...], tmp_path: Path) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert_one_error_line(run_kscope("profile", *args, cwd=tmp_path))


TRAIN = """
import torch
model = torch.nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(8):
    model(torch.randn(32, 64)).sum().backward()
    opt.step()
    opt.zero_grad()
print("workload done")
"""


def test_torch_hook_traces_the_step_window(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "train.py").write_text(TRAIN)
    args = ("--wait", "2", "--warmup", "1", "--active", "3", "--out", "t", "--json")
    proc = run_kscope("profile", *args, "--", sys.executable, "train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # stdout is pure JSON: the workload's own output went to stderr
    assert "workload done" in proc.stderr
    assert doc["schema"] == "kernelscope.profile-run.v1" and doc["run"]["returncode"] == 0
    [trace] = doc["run"]["traces"]
    with gzip.open(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    steps = {e["name"] for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")}
    assert len(steps) == 3
    kernels = sum(1 for e in events if e.get("cat") == "kernel")
    assert doc["gap"]["totals"]["launches"] == kernels  # 0 on a CPU-only machine, the GPU's count on one


def test_unresolvable_step_fn_traces_the_whole_run(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "train.py").write_text(TRAIN)
    args = ("--step-fn", "nowhere_module:step", "--out", "t", "--json")
    proc = run_kscope("profile", *args, "--", sys.executable, "train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "cannot resolve KSCOPE_STEP_FN" in proc.stderr
    assert "workload done" in proc.stderr
    assert json.loads(proc.stdout)["run"]["returncode"] == 0


def test_a_run_without_steps_says_how_to_trace_it(tmp_path: Path) -> None:
    """A script with no optimizer steps never opens the default window: one error line with the fix
    (not Kineto's traceback), and --step-fn none then traces the whole run."""
    pytest.importorskip("torch")
    (tmp_path / "noop.py").write_text("import torch\nprint(torch.ones(3).sum().item())\n")
    proc = run_kscope("profile", "--out", "t", "--", sys.executable, "noop.py", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "3.0\n"  # the workload's own output is passed through
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("kscope: error:") and "--step-fn none" in last and "Traceback" not in proc.stderr
    whole = run_kscope(
        "profile", "--step-fn", "none", "--out", "t2", "--json", "--", sys.executable, "noop.py", cwd=tmp_path
    )
    assert whole.returncode == 0, whole.stderr
    assert len(json.loads(whole.stdout)["run"]["traces"]) == 1


def _profile_shell(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, script: str, timeout_s: float | None) -> ProfileRun:
    """``profiling.run`` with the tracer command replaced by a shell script (no tracer on CPU)."""
    monkeypatch.setattr(
        runner, "invocation", lambda cfg, out: Invocation("nsys", ["/bin/sh", "-c", script], trace_glob="*.trace")
    )
    return run(ProfileConfig(command=["unused"], out_dir=str(tmp_path / "out"), timeout_s=timeout_s))


def test_a_profiled_workload_is_killed_with_its_process_group_at_the_timeout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    t0 = time.monotonic()
    done = _profile_shell(monkeypatch, tmp_path, f"sleep 30 & echo $! > {pid_file}; sleep 30", timeout_s=0.3)
    assert done.timed_out and done.returncode == -9 and time.monotonic() - t0 < 5
    assert _gone_soon(int(pid_file.read_text()))  # the background child went with the group


def test_a_profiled_workloads_stragglers_are_killed_and_its_traces_found(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    script = f"sleep 30 & echo $! > {pid_file}; touch {tmp_path}/out/a.trace; exit 3"
    done = _profile_shell(monkeypatch, tmp_path, script, timeout_s=None)
    assert (done.returncode, done.timed_out) == (3, False) and done.traces == [str(tmp_path / "out" / "a.trace")]
    assert _gone_soon(int(pid_file.read_text()))


def _gone_soon(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return gone(pid)
