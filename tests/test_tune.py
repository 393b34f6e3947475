"""kscope tune on the CPU: spaces and safe constraints, worker isolation (every fault status), the store
(resume, kill -9, one new config = one evaluation), stage 2's decision, the CLI. Ray: tests/test_tune_ray.py."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kernelscope import api
from kernelscope.analyses.tune import decide, finalists
from kernelscope.errors import InputError
from kernelscope.model.tune import Candidate, Outcome, Space, TuneResult
from kernelscope.tune.space import Constraint, enumerate_candidates, parse_shape, read_space

DATA = Path(__file__).parent / "data" / "tune"
FAULTS = f"{DATA / 'faults.py'}:factory"
REFERENCE = f"{DATA / 'faults.py'}:reference"
KSCOPE = [sys.executable, "-m", "kernelscope"]


# --- spaces and constraints -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "BLOCK.__class__",
        "open('/etc/passwd')",
        "(lambda: 1)()",
        "[x for x in range(3)]",
        "BLOCK[0]",
        "2 ** BLOCK",
        "9 ** 9 ** 9",
        "BLOCK := 3",
    ],
)
def test_constraints_refuse_anything_but_arithmetic(text: str) -> None:
    with pytest.raises(InputError, match="constraint"):
        Constraint(text)


def test_constraints_evaluate_over_config_and_shape() -> None:
    c = Constraint("BLOCK_M * BLOCK_K <= 8192 and BLOCK_M <= max(M, 16) and cdiv(M, BLOCK_M) >= 2")
    assert c.holds({"BLOCK_M": 64, "BLOCK_K": 64, "M": 512})
    assert not c.holds({"BLOCK_M": 256, "BLOCK_K": 64, "M": 512})
    assert not c.holds({"BLOCK_M": 64, "BLOCK_K": 64, "M": 64})  # one block along M
    with pytest.raises(InputError, match="M is neither a param nor a shape name"):
        c.holds({"BLOCK_M": 64, "BLOCK_K": 64})
    with pytest.raises(InputError, match="ZeroDivisionError"):
        Constraint("M // BLOCK > 1").holds({"M": 4, "BLOCK": 0})


def test_space_file_errors_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    for text, match in [
        ("params: [1, 2", "invalid YAML"),
        ("shapes: []", "params"),
        ("params: {B: []}", "no values"),
        ("params: {B: [1]}\nconstraints: ['B >']", "not a Python expression"),
        ("params: {B: [1]}\nincumbent: {C: 1}", "incumbent"),
        ("params: {B: [{x: 1}]}", "params"),
    ]:
        bad.write_text(text)
        with pytest.raises(InputError, match=match) as err:
            read_space(bad)
        assert "\n" not in str(err.value)


def test_enumeration_order_and_constraint_reasons() -> None:
    space = Space(params={"A": [1, 2], "B": [10, 20]}, constraints=["A * B < 40"])
    got = [(c.config, why) for c, why in enumerate_candidates(space, [{"N": 1}])]
    assert [c for c, _ in got] == [{"A": 1, "B": 10}, {"A": 1, "B": 20}, {"A": 2, "B": 10}, {"A": 2, "B": 20}]
    assert [why for _, why in got] == [None, None, None, "A * B < 40"]


def test_parse_shape() -> None:
    got = parse_shape("M=4096, N=128,dtype=bf16,x=0.5,t=true")
    assert got == {"M": 4096, "N": 128, "dtype": "bf16", "x": 0.5, "t": True}
    for bad in ("M", "=3", "", "M=inf"):
        with pytest.raises(InputError):
            parse_shape(bad)


# --- stage 2 ----------------------------------------------------------------------------------------


def _o(config: dict[str, int], us: float, regs: int | None = None) -> Outcome:
    return Outcome(shape={"N": 1}, config=config, status="ok", median_us=us, registers=regs)


def test_decide_declares_a_winner_only_when_the_ci_separates() -> None:
    a, b, c = {"B": 1}, {"B": 2}, {"B": 3}
    clear = [[10.0 + 0.01 * r, 12.0 + 0.01 * ((r * 7) % 5), 20.0] for r in range(10)]
    best = decide({"N": 1}, [a, b, c], clear, incumbent=c)
    assert best.config == a and best.tie == [] and best.rounds == 10
    assert best.runner_up == b and best.runner_up_ratio is not None and best.runner_up_ratio[1] > 1.15
    assert best.speedup == pytest.approx(20.0 / 10.045, rel=1e-3)
    # a and b alternate as the faster one: no winner, and the incumbent wins the tie-break
    noisy = [[10.0, 10.1] if r % 2 else [10.1, 10.0] for r in range(10)]
    tie = decide({"N": 1}, [a, b], noisy, incumbent=b)
    assert tie.config == b and {msgspec.json.encode(t) for t in tie.tie} == {b'{"B":1}', b'{"B":2}'}
    assert tie.runner_up == a  # the other config, never the chosen one
    # without an incumbent, fewer registers break the tie
    fewer = decide({"N": 1}, [a, b], noisy, stage1=[_o(a, 10, regs=128), _o(b, 10, regs=96)])
    assert fewer.config == b and len(fewer.tie) == 2


def test_finalists_keep_near_ties_and_the_incumbent() -> None:
    ok = [_o({"B": i}, us) for i, us in enumerate([10.0, 10.3, 10.6, 30.0, 40.0])]
    got = finalists(ok, within=0.05, top=6, incumbent={"B": 4})
    assert [o.config["B"] for o in got] == [0, 1, 4]  # 10.6 is 6 % off; the incumbent joins to be measured
    assert len(finalists(ok[3:], within=0.05, top=6, incumbent=None)) == 2  # always two to compare


# --- sweeps on the CPU: faults, store, resume -------------------------------------------------------


def _space(tmp_path: Path, modes: list[str], blocks: list[int], **extra: object) -> Path:
    space = {
        "params": {"BLOCK": blocks, "MODE": modes, **extra},
        "constraints": ["MODE == 'ok' or BLOCK == 8", "BLOCK <= N"],
        "shapes": [{"N": 4096}],
        "incumbent": {"BLOCK": 8, "MODE": "ok", **{k: v[0] for k, v in extra.items()}},  # type: ignore[index]
    }
    path = tmp_path / "space.yaml"
    path.write_text(json.dumps(space))  # JSON is YAML
    return path


def _tune(tmp_path: Path, space: Path, **kw: object) -> TuneResult:
    opts: dict[str, object] = dict(
        space=space,
        reference=REFERENCE,
        device="cpu",
        store=tmp_path / "store.sqlite",
        timeout_s=4.0,
        stage1_ms=10.0,
        rounds=4,
        round_ms=5.0,
        workers=2,
    )
    return api.tune(FAULTS, **{**opts, **kw})  # type: ignore[arg-type]


def test_every_fault_gets_its_status_and_the_sweep_finishes(tmp_path: Path) -> None:
    modes = ["ok", "segv", "hang", "exit", "wrong", "oom", "skip", "compile"]
    r = _tune(tmp_path, _space(tmp_path, modes, [4, 8, 64, 10_000]))
    by = {(o.config["BLOCK"], o.config["MODE"]): o for o in r.candidates}
    assert by[(8, "segv")].status == "crash" and "SIGSEGV" in by[(8, "segv")].detail
    assert 'faults.py", line' in by[(8, "segv")].detail  # the stack of the crash, from the worker's stderr
    assert by[(8, "exit")].status == "crash" and "exit status 7" in by[(8, "exit")].detail
    assert by[(8, "segv")].attempts == by[(8, "exit")].attempts == 2  # retried once in a fresh process
    assert by[(8, "hang")].status == "timeout" and by[(8, "hang")].attempts == 1
    assert by[(8, "wrong")].status == "mismatch" and "differ" in by[(8, "wrong")].detail
    assert by[(8, "oom")].status == "oom"
    assert by[(8, "skip")].status == "skipped" and "does not divide" in by[(8, "skip")].detail
    assert by[(8, "compile")].status == "compile_error" and "ptxas" in by[(8, "compile")].detail
    assert by[(10_000, "ok")].status == "skipped" and "BLOCK <= N" in by[(10_000, "ok")].detail
    assert all(by[(b, "ok")].status == "ok" for b in (4, 8, 64))
    assert len(r.candidates) == 4 * 8
    (best,) = r.best
    assert best.config == {"BLOCK": 64, "MODE": "ok"}  # 16x fewer loop steps than BLOCK=4: no tie possible
    assert best.speedup is not None and best.speedup > 1.5  # over the incumbent BLOCK=8, in the same rounds


def test_a_worker_starts_work_without_waiting_for_a_slow_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cpu1's start is held until cpu0 has recorded three results: cpu0 must be working before cpu1 is ready
    (an executor that waits for every worker would hold cpu1 for the 30 s guard and cpu0 would run nothing
    before it)."""
    import threading

    from kernelscope.tune import slot, sweep

    three = threading.Event()
    start, record = slot.Slot.start, sweep._Sweep._record

    def held_start(self: slot.Slot) -> Any:
        if self.name == "cpu1" and self.hello is None:
            three.wait(timeout=30)
        return start(self)

    def counted(self: sweep._Sweep, o: Outcome) -> None:
        record(self, o)
        if self.done >= 3:
            three.set()

    monkeypatch.setattr(slot.Slot, "start", held_start)
    monkeypatch.setattr(sweep._Sweep, "_record", counted)
    r = _tune(tmp_path, _space(tmp_path, ["ok"], [4, 8, 16, 32, 64]))
    use = {u.name: u for u in r.usage}
    assert use["cpu0"].items >= 3 and use["cpu1"].ready_s < 30
    assert len(r.workers) == 2 and sum(u.items for u in r.usage) == 5 + 1  # five candidates and one stage 2


def test_store_resumes_and_a_new_config_costs_one_evaluation(tmp_path: Path) -> None:
    space = _space(tmp_path, ["ok", "wrong"], [4, 8, 64])
    first = _tune(tmp_path, space)
    ran = [o for o in first.candidates if not o.reused and o.status != "skipped"]
    assert first.reused == 0 and len(ran) == 4
    # both workers reported; four candidates and one stage 2 ran, set-up is part of the busy time
    assert [u.name for u in first.usage] == ["cpu0", "cpu1"] and sum(u.items for u in first.usage) == 5
    for u in first.usage:
        assert 0 < u.ready_s < first.wall_s and u.setup_s <= u.busy_s <= first.wall_s - u.ready_s
    assert sum(u.setup_s for u in first.usage) > 0
    assert first.stage1_end_s is not None and first.work_end_s is not None
    assert first.stage1_end_s < first.work_end_s < first.wall_s
    assert sum(u.stage2_s > 0 for u in first.usage) == 1  # one shape: one stage 2, on one worker
    again = _tune(tmp_path, space)
    assert again.reused == 4 and all(o.reused for o in again.candidates if o.status != "skipped")
    assert sum(u.items for u in again.usage) == 0 and again.stage1_end_s is None
    assert [b.config for b in again.best] == [b.config for b in first.best]  # same finalists: the stored decision
    more = _tune(tmp_path, _space(tmp_path, ["ok", "wrong"], [4, 8, 64, 128]))
    fresh = [o for o in more.candidates if not o.reused and o.status != "skipped"]
    assert more.reused == 4 and [o.config for o in fresh] == [{"BLOCK": 128, "MODE": "ok"}]
    rows = sqlite3.connect(tmp_path / "store.sqlite").execute("SELECT count(*) FROM results").fetchone()
    assert rows == (5,)


def test_a_sweep_killed_with_sigkill_keeps_every_finished_result(tmp_path: Path) -> None:
    space = _space(tmp_path, ["ok"], [1, 2, 4, 8, 16, 32, 64, 128], SLEEP=[0.4])
    store = tmp_path / "store.sqlite"
    cmd = _argv(space, store, "--workers", "1", "--json")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    done = 0
    while time.monotonic() < deadline and done < 3:
        time.sleep(0.2)
        if store.exists():
            try:
                done = sqlite3.connect(store).execute("SELECT count(*) FROM results").fetchone()[0]
            except sqlite3.OperationalError:  # the tables are being created
                continue
    os.killpg(proc.pid, signal.SIGKILL)  # kscope and its worker, mid-sweep
    proc.wait()
    assert 3 <= done < 8
    kept = sqlite3.connect(store).execute("SELECT count(*) FROM results").fetchone()[0]
    r = _tune(tmp_path, space, workers=1)
    assert r.reused == kept >= done  # nothing finished was lost
    assert sum(not o.reused for o in r.candidates) == 8 - kept  # and nothing finished ran twice
    assert all(o.status == "ok" for o in r.candidates)


# --- the command line -------------------------------------------------------------------------------


def _kscope(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KSCOPE, *args], capture_output=True, text=True, cwd=cwd, timeout=300, check=False)


def _argv(space: Path, store: Path | str, *extra: str) -> list[str]:
    """``kscope tune`` of the stand-in kernel on the CPU with short timings."""
    return [
        *KSCOPE,
        "tune",
        FAULTS,
        "--space",
        str(space),
        "--reference",
        REFERENCE,
        "--device",
        "cpu",
        "--store",
        str(store),
        "--stage1-ms",
        "5",
        "--rounds",
        "3",
        *extra,
    ]


def _cpu_sweep(tmp_path: Path, space: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _argv(space, tmp_path / "s.sqlite", *extra), capture_output=True, text=True, timeout=300, check=False
    )


def test_cli_json_show_export_and_errors(tmp_path: Path) -> None:
    space = _space(tmp_path, ["ok", "wrong"], [8, 64])
    store = str(tmp_path / "store.sqlite")
    done = subprocess.run(_argv(space, store, "--json"), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["schema"] == "kernelscope.tune.v1"
    assert {"best", "candidates", "reused"} <= doc.keys()
    assert doc["best"][0]["config"] == {"BLOCK": 64, "MODE": "ok"} and len(doc["best"][0]["ci_us"]) == 2
    assert {c["status"] for c in doc["candidates"]} == {"ok", "mismatch", "skipped"}
    assert sum(u["items"] for u in doc["usage"]) == 3 + 1 and doc["work_end_s"] <= doc["wall_s"]
    human = subprocess.run(
        _argv(space, tmp_path / "fresh.sqlite"), capture_output=True, text=True, timeout=300, check=False
    )
    assert human.returncode == 0 and "devices busy: " in human.stdout and "stage 2 " in human.stdout
    shown = _kscope("tune", "show", "--store", store, "--status", "mismatch", "--json")
    assert shown.returncode == 0 and [o["config"]["MODE"] for o in json.loads(shown.stdout)] == ["wrong"]
    csv = tmp_path / "all.csv"
    assert _kscope("tune", "export", "--store", store, "-o", str(csv)).returncode == 0
    assert len(csv.read_text().splitlines()) == 1 + 3  # header + the three candidates that ran
    for args, match in [
        (["tune", FAULTS, "--space", str(space), "--device", "tpu"], "--device tpu"),
        (["tune", "missing.py:f", "--space", str(space), "--store", store], "missing.py"),
        (["tune", f"{DATA / 'faults.py'}:nope", "--space", str(space), "--device", "cpu", "--store", store], "'nope'"),
        (["tune", "show", "--store", str(tmp_path / "none.sqlite")], "no tuning store"),
    ]:
        bad = _kscope(*args)
        assert bad.returncode == 2, (args, bad.stderr)
        assert bad.stderr.count("\n") == 1 and match in bad.stderr and "Traceback" not in bad.stderr


# --- device probe, screen, writers, --apply ---------------------------------------------------------


def test_nvidia_smi_probe_honours_cuda_visible_devices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelscope.tune.executors import probe_devices

    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\necho '0, GPU-aaaa-1111, NVIDIA H100 80GB HBM3'\necho '1, GPU-bbbb-2222, NVIDIA H100 80GB HBM3'\n"
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert probe_devices().ids == ["GPU-aaaa-1111", "GPU-bbbb-2222"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert probe_devices().ids == ["GPU-bbbb-2222"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-aaaa")  # a UUID prefix, as CUDA accepts
    found = probe_devices()
    assert found.vendor == "nvidia" and found.ids == ["GPU-aaaa-1111"] and found.names == ["NVIDIA H100 80GB HBM3"]


# the JIT's view of contiguous operands: inner strides are 1, outer ones plain i32 here
SIGNATURE = (
    "a_ptr=*fp16,b_ptr=*fp16,c_ptr=*fp16,stride_am=i32,stride_ak=i32:1,"
    "stride_bk=i32,stride_bn=i32:1,stride_cm=i32,stride_cn=i32:1"
)


def test_screen_only_needs_no_gpu(tmp_path: Path) -> None:
    """The AMD screen on a CPU machine: Triton compiles gfx942 code objects offline, kscope reads them."""
    pytest.importorskip("triton")
    done = _kscope(
        "tune",
        f"{DATA / 'matmul_autotune.py'}:matmul_kernel",
        "--screen",
        "gfx942",
        "--screen-only",
        "--shape",
        "M=4096,N=4096,K=4096",
        "--signature",
        SIGNATURE,
        "--json",
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["screen_arch"] == "gfx942" and doc["candidates"] == [] and len(doc["screen"]) == 4
    kept = [s for s in doc["screen"] if s["kept"]]
    assert [s["config"]["BLOCK_SIZE_M"] for s in kept] == [64, 128]  # the two small tiles
    assert all(s["status"] == "pruned" and "spills" in s["detail"] for s in doc["screen"] if not s["kept"])


def test_cli_writes_the_winners(tmp_path: Path) -> None:
    space = _space(tmp_path, ["ok"], [8, 64])
    out = tmp_path / "tuned.json"
    done = _cpu_sweep(tmp_path, space, "--write", "generic", str(out), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "kernelscope.tune-configs.v1"
    assert doc["configs"][0]["shape"] == {"N": 4096} and doc["configs"][0]["config"] == {"BLOCK": 64, "MODE": "ok"}
    bad = _cpu_sweep(tmp_path, space, "--write", "xml", str(out))
    assert bad.returncode == 2 and "--write xml" in bad.stderr


EVAL = """\
import json
from pathlib import Path
from typing import Any
best = json.loads(Path("kernel/tuned.json").read_text())["configs"][0]["config"]
print(f"KSCOPE_METRIC time_us={1000.0 / best['BLOCK']}")
"""


def test_apply_makes_the_winner_a_task_candidate(tmp_path: Path) -> None:
    """--write into a task's repository, then --apply: kscope eval measures the tuned file against the
    committed one, and the ledger records it."""
    repo = tmp_path / "repo"
    (repo / "kernel").mkdir(parents=True)
    (repo / "bench.py").write_text(EVAL)
    (repo / "kernel" / "tuned.json").write_text(json.dumps({"configs": [{"config": {"BLOCK": 8}}]}))
    for cmd in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.email=t@t", "-c", "user.name=t", "-c", "commit.gpgsign=false", "commit", "-qm", "base"],
    ):
        subprocess.run(["git", "-C", str(repo), *cmd], check=True)
    ws = tmp_path / "ws"
    api.init_workspace(ws)
    api.new_task(
        "mm",
        workspace=ws,
        repo=repo,
        baseline_ref="main",
        allowed=["kernel/**"],
        eval_command=f"{sys.executable} bench.py",
        metric="time_us",
        direction="lower",
        runs=5,
        warmup=0,
        timeout=30,
    )
    space = _space(tmp_path, ["ok"], [8, 64])
    done = _cpu_sweep(
        tmp_path,
        space,
        "--write",
        "generic",
        str(repo / "kernel" / "tuned.json"),
        "--apply",
        "mm",
        "--workspace",
        str(ws),
        "--memory",
    )
    assert done.returncode == 0, done.stderr
    assert "improved" in done.stdout
    (line,) = (ws / "ledger.jsonl").read_text().splitlines()
    assert json.loads(line)["status"] == "improved"
    record = json.loads((ws / "memory" / "v1.json").read_text())  # --memory: the iteration, from the eval
    assert record["category"] == "tile_shape" and "BLOCK=64" in record["title"]


class _Recorder:
    """An executor that runs nothing: one worker, items in queue order, made-up replies; it records
    the order in which the jobs reached the worker."""

    kind = "fake"
    size = 1

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def start(self) -> Any:
        from kernelscope.tune.executors import WorkerInfo
        from kernelscope.tune.protocol import Hello

        self.info = WorkerInfo("w0", Hello(device="fake", device_uuid="", visible=0, environment={}))
        return self.info

    def workers(self) -> list[Any]:
        return [self.info]

    def map(self, items: list[Any], on_done: Any) -> None:
        from kernelscope.tune.executors import Backlog
        from kernelscope.tune.protocol import Compare, CompareReply, RunReply

        queue = Backlog(items, 1)
        while queue:
            item = queue.take("w0")
            job = item.job
            self.seen.append(("compare" if isinstance(job, Compare) else "run", job.shape["N"]))
            if isinstance(job, Compare):
                times = [[float(c["BLOCK"]) for c in job.configs] for _ in range(job.rounds)]
                reply: Any = CompareReply(times=times, kept=list(range(len(job.configs))))
            else:
                us = float(job.config["BLOCK"])
                done = Outcome(shape=job.shape, config=job.config, status="ok", median_us=us, ci_us=[us, us], samples=5)
                reply = RunReply(outcome=done)
            queue.add(on_done(item, reply, self.info))

    def close(self) -> None:
        pass


def test_a_shapes_stage_2_starts_when_its_stage_1_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stage 2 of the first shape runs before the second shape's stage 1, not after every shape's."""
    from kernelscope.tune import sweep

    fake = _Recorder()
    monkeypatch.setattr(sweep._Sweep, "executor", lambda self: fake)
    space = Space(params={"BLOCK": [1, 2, 3]}, shapes=[{"N": 10}, {"N": 20}])
    r = api.tune(FAULTS, space=space, device="cpu", store=tmp_path / "s.sqlite", rounds=3)
    assert fake.seen == [("run", 10)] * 3 + [("compare", 10)] + [("run", 20)] * 3 + [("compare", 20)]
    assert [b.config["BLOCK"] for b in r.best] == [1, 1]
    fake.seen.clear()
    again = api.tune(FAULTS, space=space, device="cpu", store=tmp_path / "s.sqlite", rounds=3)
    assert fake.seen == [] and again.reused == 6  # stage 1 and stage 2 both from the store


def test_an_edited_source_file_starts_fresh_results(tmp_path: Path) -> None:
    """--source names a file the factory's kernel lives in: its bytes join the store's key."""
    helper = tmp_path / "kernel_impl.py"
    helper.write_text("SCALE = 2\n")
    space = _space(tmp_path, ["ok"], [8, 64])
    assert _tune(tmp_path, space, sources=[helper]).reused == 0
    assert _tune(tmp_path, space, sources=[helper]).reused == 2
    helper.write_text("SCALE = 3\n")
    assert _tune(tmp_path, space, sources=[helper]).reused == 0
    with pytest.raises(InputError, match="--source"):
        _tune(tmp_path, space, sources=[tmp_path / "missing.py"])


def _item(config: str, urgent: bool = False) -> Any:
    from kernelscope.tune.executors import Item
    from kernelscope.tune.protocol import Run

    return Item(job=Run(shape={}, config={"c": config}), timeout_s=1, affinity=config, urgent=urgent)


def test_a_free_worker_takes_a_config_it_has_built_from_near_the_head() -> None:
    from kernelscope.tune.executors import LOOK_AHEAD, Backlog

    def took(worker: str) -> str:
        return str(backlog.take(worker).job.config["c"])  # type: ignore[union-attr]

    backlog = Backlog([_item(c) for c in "ABCD"], workers=2)
    assert [took("w0"), took("w1"), took("w0"), took("w1")] == ["A", "B", "C", "D"]  # nothing built: in order
    backlog.add([_item(c) for c in "ABCD"])  # the next shape
    assert took("w1") == "B" and took("w0") == "A"  # each its own config, not the head
    backlog.add([_item("S", urgent=True)])
    assert took("w0") == "S"  # urgent work (a stage 2) first, whatever it has built
    backlog.forget("w1")  # restarted: nothing loaded, so D is nobody's; C is w0's
    assert took("w1") == "D"
    n = LOOK_AHEAD * 2
    far = Backlog([_item(str(i)) for i in range(n + 1)] + [_item("A")], workers=2)
    far.served = {"w0": {"A"}, "w1": {str(i) for i in range(n + 1)}}
    assert far.take("w0").affinity == "0"  # its own config is beyond the look-ahead: the head, the order holds
    one = Backlog([_item(c) for c in "AB"] + [_item(c) for c in "AB"], workers=1)
    assert [one.take("w0").affinity for _ in range(4)] == ["A", "B", "A", "B"]  # one worker: in order


def test_a_stage2_waits_for_the_worker_that_has_most_of_its_finalists_loaded() -> None:
    from kernelscope.tune.executors import Backlog, Item
    from kernelscope.tune.protocol import Compare

    backlog = Backlog([_item(c) for c in "ABCDEF"], workers=2)
    backlog.served = {"w0": {"A", "B"}, "w1": {"C"}}
    stage2 = Item(job=Compare(shape={}, configs=[]), timeout_s=1, urgent=True, wants=frozenset("ABC"))
    backlog.add([stage2])
    assert backlog.take("w1").affinity == "C"  # w1 has one finalist, w0 two: w1 goes on with stage 1
    assert backlog.take("w0") is stage2  # w0 rebuilds one finalist instead of two
    assert backlog.served["w0"] >= {"A", "B", "C"}  # and has them all loaded now
    last = Backlog([], workers=2)
    last.served = {"w0": {"A", "B"}, "w1": set()}
    last.add([Item(job=Compare(shape={}, configs=[]), timeout_s=1, urgent=True, wants=frozenset("AB"))])
    assert last.take("w1").wants == frozenset("AB")  # nothing else to do: the idle worker takes it


def test_stage1_order_interleaves_the_last_shapes_one_per_worker() -> None:
    from kernelscope.tune.sweep import stage1_order

    cands = [Candidate(shape={"s": s}, config={"c": c}) for s in (1, 2, 3) for c in (1, 2)]

    def order(workers: int) -> list[tuple[int, int]]:
        return [(int(c.shape["s"]), int(c.config["c"])) for c in stage1_order(cands, workers)]

    assert order(1) == [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1), (3, 2)]
    assert order(2) == [(1, 1), (1, 2), (2, 1), (3, 1), (2, 2), (3, 2)]
    assert order(8) == [(1, 1), (2, 1), (3, 1), (1, 2), (2, 2), (3, 2)]
