"""Workspaces, task validation, the recorded environment, allowed globs and the command runner."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import assert_one_error_line, run_kscope
from test_loop_eval import Synth, git, gone, make_workspace

from kernelscope import api
from kernelscope.errors import FormatError, InputError
from kernelscope.loop import environment, runner
from kernelscope.loop.paths import matches, normalize_glob
from kernelscope.model.task import Task

# --- workspace ------------------------------------------------------------------------------------


def test_init_makes_the_layout_and_is_idempotent(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    first = api.init_workspace(ws)
    assert first.new and first.schema == "kernelscope.workspace.v1"
    for name in ("tasks", "runs", "memory"):
        assert (ws / name).is_dir()
    assert (ws / "ledger.jsonl").read_text() == ""
    (ws / "ledger.jsonl").write_text('{"kept": true}\n')
    (ws / "memory").rmdir()
    again = api.init_workspace(ws)
    assert not again.new and again.created == first.created
    assert (ws / "memory").is_dir() and (ws / "ledger.jsonl").read_text() == '{"kept": true}\n'


def test_init_refuses_a_foreign_folder_and_a_bad_config(tmp_path: Path) -> None:
    (tmp_path / "src.py").write_text("")
    with pytest.raises(InputError, match="not empty and not a kscope workspace"):
        api.init_workspace(tmp_path)
    ws = tmp_path / "ws"
    api.init_workspace(ws)
    (ws / "kscope.toml").write_text('schema = "kernelscope.workspace.v1"\ncreated = "x"\nkscope_version = "1"\nx = 1\n')
    with pytest.raises(FormatError, match=r"kscope\.toml"):
        api.init_workspace(ws)


def test_init_cli(tmp_path: Path) -> None:
    proc = run_kscope("init", "ws", "--json", cwd=tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout)["new"] is True
    assert run_kscope("init", "ws", cwd=tmp_path).stdout.startswith("already a workspace")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    assert_one_error_line(run_kscope("init", "full", cwd=tmp_path))


# --- task new / show --------------------------------------------------------------------------------


@pytest.fixture
def synth(tmp_path: Path) -> Synth:
    return make_workspace(tmp_path)


def _task_args(s: Synth) -> dict[str, Any]:
    return {
        "workspace": s.ws,
        "repo": s.repo,
        "baseline_ref": "base",
        "allowed": ["kernel/**"],
        "eval_command": f"{sys.executable} bench.py --n 'a b'",
        "metric": "time_us",
        "direction": "lower",
        "timeout": 10.0,
    }


def _new(s: Synth, name: str = "t", **kw: Any) -> Task:
    return api.new_task(name, **{**_task_args(s), **kw})


def test_task_new_writes_a_typed_task_and_task_md(synth: Synth) -> None:
    task = _new(synth, correctness=["pytest -x tests/test_k.py"], kernel="gemm", shapes="M=N=K=4096", target=1.2)
    assert task.eval_command == [sys.executable, "bench.py", "--n", "a b"]  # argv, no shell
    assert task.correctness == [["pytest", "-x", "tests/test_k.py"]]
    assert task.repo == str(synth.repo.resolve())
    assert task.baseline_commit == git(synth.repo, "rev-parse", "base").strip()
    folder = synth.ws / "tasks" / "t"
    saved = msgspec.json.decode((folder / "task.json").read_bytes(), type=Task)
    assert saved == task and saved.schema == "kernelscope.task.v1"
    md = (folder / "TASK.md").read_text()
    for heading in ("Goal", "Allowed files", "Eval contract", "Metric protocol", "Correctness gate"):
        assert f"## {heading}" in md
    for fact in ("`kernel/**`", "KSCOPE_METRIC time_us=", "KSCOPE_METRICS_FILE", "1.2", "gemm", "M=N=K=4096"):
        assert fact in md, fact
    assert "pytest -x tests/test_k.py" in md
    assert api.show_task("t", workspace=synth.ws) == task
    with pytest.raises(InputError, match="exists"):
        _new(synth)


def test_task_md_warns_when_the_judge_is_an_allowed_file(synth: Synth) -> None:
    _new(synth, allowed=["*.py", "kernel/"])
    assert "**Warning**: `bench.py`" in (synth.ws / "tasks" / "t" / "TASK.md").read_text()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"allowed": ["../outside/**"]}, "'..'"),
        ({"allowed": ["/etc/*"]}, "outside the repository"),
        ({"allowed": [".git/hooks/*"]}, ".git"),
        ({"allowed": []}, "no --allowed"),
        ({"baseline_ref": "no-such-ref"}, "names no commit"),
        ({"baseline_ref": "--output=x"}, "an option"),
        ({"direction": "sideways"}, "lower"),
        ({"timeout": 0.0}, "--timeout"),
        ({"runs": 3}, "--runs"),
        ({"warmup": -1}, "--warmup"),
        ({"metric": "time us"}, "--metric"),
        ({"eval_command": "python 'unbalanced"}, "quotation"),
        ({"eval_command": "  "}, "empty"),
        ({"target": 0.5}, "--target"),
    ],
)
def test_task_new_rejects_bad_values(synth: Synth, changes: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        _new(synth, **changes)
    assert not (synth.ws / "tasks" / "t" / "task.json").exists()


@pytest.mark.parametrize("name", ["../evil", "a/b", ".hidden", "", "x" * 65])
def test_task_names_cannot_escape_the_workspace(synth: Synth, name: str) -> None:
    with pytest.raises(InputError, match="task name"):
        _new(synth, name)


def test_the_repo_must_be_a_git_top_level(synth: Synth, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InputError, match="expected a git repository"):
        _new(synth, repo=plain)
    with pytest.raises(InputError, match="top level"):
        _new(synth, repo=synth.repo / "kernel")


def test_absolute_globs_inside_the_repo_become_relative(synth: Synth) -> None:
    task = _new(synth, allowed=[str(synth.repo / "kernel" / "*.json"), "kernel/"])
    assert task.allowed == ["kernel/*.json", "kernel/"]


def test_a_glob_through_a_symlink_out_of_the_repo_is_refused(synth: Synth, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (synth.repo / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(InputError, match="symlink out of the repository"):
        _new(synth, allowed=["link/**"])


def test_a_hand_edited_task_with_an_unknown_field_or_escape_is_refused(synth: Synth) -> None:
    _new(synth)
    path = synth.ws / "tasks" / "t" / "task.json"
    good = json.loads(path.read_text())
    for bad in ({**good, "runz": 5}, {**good, "allowed": ["../x"]}, {**good, "schema": "kernelscope.task.v9"}):
        path.write_text(json.dumps(bad))
        with pytest.raises(FormatError, match=r"task\.json"):
            api.show_task("t", workspace=synth.ws)


def test_a_violation_through_a_new_symlink(synth: Synth, tmp_path: Path) -> None:
    """A candidate that adds an allowed-looking symlink out of the repository is a violation."""
    _new(synth, runs=5, warmup=0)
    (synth.repo / "kernel" / "escape").symlink_to(tmp_path)
    result = api.evaluate("t", workspace=synth.ws)
    assert result.status == "violation"
    assert result.violations == ["kernel/escape (a symlink out of the repository)"]


def test_task_new_cli_errors_are_one_line(synth: Synth) -> None:
    assert_one_error_line(run_kscope("task", "new", "t", "-w", synth.ws, cwd=synth.root))  # --repo missing
    proc = run_kscope(
        *("task", "new", "t", "-w", synth.ws, "--repo", synth.repo, "--baseline-ref", "base", "--allowed", "../x"),
        *("--eval-command", "true", "--metric", "m", "--direction", "lower", "--timeout", "1"),
        cwd=synth.root,
    )
    assert_one_error_line(proc)
    assert_one_error_line(run_kscope("task", "show", "nope", "-w", synth.ws, cwd=synth.root))


# --- globs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "glob", "hit"),
    [
        ("kernel/a.py", "kernel/*.py", True),
        ("kernel/sub/a.py", "kernel/*.py", False),  # * stays within a folder
        ("kernel/sub/a.py", "kernel/**/*.py", True),
        ("kernel/a.py", "kernel/**/*.py", True),  # ** may be no folder at all
        ("kernel/sub/deep/a.cu", "kernel/", True),  # trailing / = everything below
        ("kernelx/a.py", "kernel/", False),
        ("a.cu", "?.cu", True),
        ("ab.cu", "?.cu", False),
        ("k1.cu", "k[0-9].cu", True),
        ("kx.cu", "k[!0-9].cu", True),
        ("src/k.cu", "*.cu", False),
    ],
)
def test_glob_semantics(path: str, glob: str, hit: bool) -> None:
    assert matches(path, [glob]) is hit


def test_normalize_glob_keeps_a_trailing_slash(tmp_path: Path) -> None:
    assert normalize_glob("kernel/", tmp_path) == "kernel/"
    assert normalize_glob("./kernel/*.cu", tmp_path) == "kernel/*.cu"


# --- environment ------------------------------------------------------------------------------------


def test_profiler_variables_are_stripped_and_remembered() -> None:
    hook = str(Path(environment.__file__).parent.parent / "profiling" / "hook")
    env = {
        "PATH": "/usr/bin",
        "CUDA_LAUNCH_BLOCKING": "1",
        "NSYS_PROFILING_SESSION_ID": "3",
        "NCU_PROFILE": "1",
        "ROCPROFILER_LIBRARY_CTOR": "1",
        "HSA_TOOLS_LIB": "/opt/rocm/lib/librocprofiler-sdk-tool.so",
        "KSCOPE_TRACE_DIR": "/tmp/out",
        "LD_PRELOAD": "/usr/lib/libjemalloc.so:/opt/rocm/lib/librocprofiler64.so",
        "PYTHONPATH": f"{hook}:/home/me/src",
        "HF_TOKEN": "hf_secret",
        "OMP_NUM_THREADS": "8",
    }
    rec = environment.record(env)
    assert rec.vars == {
        "PATH": "/usr/bin",
        "LD_PRELOAD": "/usr/lib/libjemalloc.so",
        "PYTHONPATH": "/home/me/src",
        "OMP_NUM_THREADS": "8",
    }
    assert set(rec.stripped) == {
        "CUDA_LAUNCH_BLOCKING",
        "NSYS_PROFILING_SESSION_ID",
        "NCU_PROFILE",
        "ROCPROFILER_LIBRARY_CTOR",
        "HSA_TOOLS_LIB",
        "KSCOPE_TRACE_DIR",
        "LD_PRELOAD",
        "PYTHONPATH",
    }
    assert rec.stripped["LD_PRELOAD"] == "/opt/rocm/lib/librocprofiler64.so" and rec.stripped["PYTHONPATH"] == hook
    assert rec.inherit == ["HF_TOKEN"] and "hf_secret" not in msgspec.json.encode(rec).decode()
    assert environment.for_eval(rec, {"HF_TOKEN": "now", "CUDA_LAUNCH_BLOCKING": "1"})["HF_TOKEN"] == "now"
    assert "CUDA_LAUNCH_BLOCKING" not in environment.for_eval(rec, {"CUDA_LAUNCH_BLOCKING": "1"})


def test_evals_run_in_the_recorded_environment(synth: Synth, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    monkeypatch.setenv("KEEP_ME", "yes")
    task = _new(synth, eval_command="sh -c 'echo KSCOPE_METRIC time_us=${CUDA_LAUNCH_BLOCKING:-7}; echo $KEEP_ME'")
    assert task.environment.stripped == {"CUDA_LAUNCH_BLOCKING": "1"}
    monkeypatch.setenv("KEEP_ME", "changed later")
    result = api.evaluate("t", workspace=synth.ws, runs=5)
    run = result.executions[-1]
    assert run.metrics == {"time_us": 7.0} and run.stdout_tail.endswith("yes\n")


# --- runner -----------------------------------------------------------------------------------------


def _run(argv: list[str], shell: bool = False, timeout_s: float = 5.0, cwd: Path | None = None) -> runner.Outcome:
    return runner.run(argv, shell=shell, cwd=cwd or Path.cwd(), env=dict(os.environ), timeout_s=timeout_s)


def test_metric_parsing() -> None:
    out = "KSCOPE_METRIC t=1\nnoise KSCOPE_METRIC t=5\nKSCOPE_METRIC t=2.5\nKSCOPE_METRIC u=3e2\nKSCOPE_METRIC v=nan\n"
    metrics, problems = runner.parse_metrics(out)
    assert metrics == {"t": 2.5, "u": 300.0}  # the last line for a name wins; only whole lines count
    assert problems == ["KSCOPE_METRIC v=nan: not a finite number"]


def test_the_metrics_file_wins_and_bad_files_are_reported(tmp_path: Path) -> None:
    f = tmp_path / "m.json"
    f.write_text('{"t": 9, "flag": true}')
    metrics, problems = runner.parse_metrics("KSCOPE_METRIC t=1\n", str(f))
    assert metrics == {"t": 9.0} and "flag" in problems[0]
    f.write_text("[1, 2]")
    assert "JSON object" in runner.parse_metrics("", str(f))[1][0]


def test_a_command_that_cannot_start_is_reported(tmp_path: Path) -> None:
    o = _run([str(tmp_path / "missing")])
    assert o.returncode is None and not o.timed_out and "cannot start" in o.problems[0]


def test_stragglers_left_in_the_background_are_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    o = _run([f"sleep 30 & echo $! > {pid_file}; echo KSCOPE_METRIC x=1"], shell=True)
    assert o.returncode == 0 and o.metrics == {"x": 1.0}
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(pid)


def test_timeout_kills_the_group_promptly() -> None:
    t0 = time.monotonic()
    o = _run(["sh", "-c", "sleep 30 & sleep 30"], timeout_s=0.3)
    assert o.timed_out and o.returncode is None
    assert time.monotonic() - t0 < 3  # the background sleep holds no pipe that could stall the wait


def test_output_tails_are_bounded() -> None:
    o = _run([sys.executable, "-c", f"print('x' * {3 * runner.TAIL_CHARS}); print('KSCOPE_METRIC m=1')"])
    assert len(o.stdout_tail) == runner.TAIL_CHARS and o.metrics == {"m": 1.0}


def test_a_workspace_inside_the_repository_is_not_the_candidates_change(tmp_path: Path) -> None:
    s = make_workspace(tmp_path)
    inner = s.repo / ".kscope"
    api.init_workspace(inner)
    api.new_task("t", **{**_task_args(s), "workspace": inner, "runs": 5})
    result = api.evaluate("t", workspace=inner)
    assert result.status == "neutral" and result.changed_files == []
    assert result.baseline.cwd == str(inner / "cache" / "baselines" / "t")


# --- task new --from-gap -------------------------------------------------------------------------------


def _raw_kernel_times(trace: Path) -> tuple[dict[str, float], dict[int, dict[str, Any]], list[dict[str, Any]]]:
    """Independent of kscope: kernel µs by name, cpu ops by External id, kernel events."""
    import gzip

    with gzip.open(trace) as f:
        events = json.load(f)["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    by_name: dict[str, float] = {}
    for k in kernels:
        by_name[k["name"]] = by_name.get(k["name"], 0.0) + k["dur"]
    ops = {e["args"]["External id"]: e for e in events if e.get("cat") == "cpu_op" and "External id" in e["args"]}
    return by_name, ops, kernels


def test_from_gap_takes_the_top_kernel_its_shapes_and_a_roofline_stop(synth: Synth) -> None:
    from kernelscope.data import demo_file

    trace = demo_file("h100_transformer_eager.json.gz")
    by_name, ops, kernels = _raw_kernel_times(trace)
    top = max(by_name, key=lambda n: by_name[n])
    # the op (name and input dims) that spent the most of that kernel's time
    per_op: dict[tuple[str, str], float] = {}
    for k in kernels:
        if k["name"] == top and (op := ops.get(k["args"].get("External id"))) is not None:
            key = (op["name"], json.dumps(op["args"]["Input Dims"]))
            per_op[key] = per_op.get(key, 0.0) + k["dur"]
    hot_name, hot_dims = max(per_op, key=lambda k: per_op[k])
    task = api.new_task("gemm", **{**_task_args(synth), "from_gap": trace})
    assert task.kernel == top and task.identity and "gemm" in task.identity
    assert task.shapes is not None and task.shapes.startswith(hot_name + "(")
    shapes = [d for d in json.loads(hot_dims) if d]
    for shape in shapes:
        assert ",".join(map(str, shape)) in task.shapes
    pct = 100 * by_name[top] / sum(by_name.values())
    assert f"gap: {pct:.1f} % of kernel time" in task.evidence[0]
    # stop condition: 90 % of the roof the launching op reaches (the roofline's own tests check its counts)
    point = next(p for p in api.roofline(trace).points if p.label == f"{hot_name} {shapes}")
    assert point.pct_of_roof is not None and point.pct_of_roof < 90
    assert task.target_speedup == round(90 / point.pct_of_roof, 2)
    md = (synth.ws / "tasks" / "gemm" / "TASK.md").read_text()
    assert task.identity in md and "Why this kernel" in md


def test_from_gap_row_selection_and_errors(synth: Synth, tmp_path: Path) -> None:
    from kernelscope.data import demo_file

    trace = demo_file("h100_transformer_eager.json.gz")
    by_name, _, _ = _raw_kernel_times(trace)
    ranked = sorted(by_name, key=lambda n: -by_name[n])
    second = api.new_task("second", **{**_task_args(synth), "from_gap": trace, "gap_rank": 2})
    assert second.kernel == ranked[1]
    gelu = api.new_task("gelu", **{**_task_args(synth), "from_gap": trace, "kernel": "Gelu"})
    assert gelu.kernel == next(n for n in ranked if "Gelu" in n) and gelu.shapes and "gelu" in gelu.shapes
    # a kernel trace without op shapes (rocprofv3 CSV): kernel and identity, no shapes, no stop
    rocprof = demo_file("mi350x", "rmsnorm", "discover_kernel_trace.csv")
    amd = api.new_task("amd", **{**_task_args(synth), "from_gap": rocprof})
    assert amd.kernel and amd.identity and amd.shapes is None and amd.target_speedup is None
    common = ["task", "new", "x", "-w", synth.ws, "--repo", synth.repo, "--baseline-ref", "base", "--allowed", "k/**"]
    common += ["--eval-command", "true", "--metric", "m", "--direction", "lower", "--timeout", "5"]
    assert_one_error_line(run_kscope(*common, "--from-gap", trace, "--kernel", "no_such_kernel_xyz", cwd=tmp_path))
    assert_one_error_line(run_kscope(*common, "--from-gap", trace, "--gap-rank", "999", cwd=tmp_path))
    assert_one_error_line(run_kscope(*common, "--from-gap", tmp_path / "missing.json", cwd=tmp_path))


def test_from_gap_on_a_gpu_the_database_lacks_keeps_the_task(synth: Synth, tmp_path: Path) -> None:
    """The stop condition is optional: a trace from a GPU kscope has no specs for still makes the task,
    with the shapes, no target, and an evidence line saying why."""
    import gzip

    from kernelscope.data import demo_file

    with gzip.open(demo_file("h100_transformer_eager.json.gz")) as f:
        doc = json.load(f)
    for p in doc["deviceProperties"]:
        p["name"] = "Imaginary GPU 9000"
    trace = tmp_path / "unknown_gpu.json"
    trace.write_text(json.dumps(doc))
    task = api.new_task("unknown", **{**_task_args(synth), "from_gap": trace})
    assert task.shapes is not None and task.target_speedup is None
    assert any(e.startswith("roofline: none") and "Imaginary GPU 9000" in e for e in task.evidence)
