"""``kscope replay`` on real H100 Kineto traces: the op chosen, its recorded arguments and kernels against
the raw events read here with ``json`` + ``gzip``, the script it writes, and ``task new --from-replay``.

With torch installed (a CPU build is enough) the scripts also run: on the CPU, and, for every replayable
signature of the bundled traces, as far as resolving the ATen overload and building the inputs on the
``meta`` device (no memory, no kernels).
"""

from __future__ import annotations

import gzip
import importlib.util
import inspect
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import pytest
import typer
from conftest import KINETO_TRACES, assert_one_error_line, run_kscope
from test_loop_eval import make_workspace

from kernelscope import api
from kernelscope.analyses.replay import candidates, select, why_not
from kernelscope.data import demo_file
from kernelscope.errors import InputError
from kernelscope.model.replay import ListArg, OtherArg, Replay, ScalarArg, TensorArg
from kernelscope.presenters.replay import script
from kernelscope.readers import kineto

DATA = Path(__file__).parent / "data" / "kineto"
EAGER = DATA / "h100_transformer_eager.json.gz"
COMPILE = DATA / "h100_transformer_compile.json.gz"
# the dtype names PyTorch 2.11 writes in "Input type", as torch spells them
DTYPES = {"c10::BFloat16": "bfloat16", "float": "float32", "long int": "int64"}
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (a CPU build is enough)")


# --- ground truth from the raw trace -------------------------------------------------------------


def raw_signatures(path: Path) -> list[dict[str, Any]]:
    """Per signature of the innermost ops (op name and its recorded args), the calls and their kernels."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    ops: dict[int, dict[str, Any]] = {}
    kernels: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        ext = e.get("args", {}).get("External id")
        if e.get("cat") == "cpu_op":
            ops[ext] = e
        elif e.get("cat") == "kernel":
            kernels[ext].append(e)
    groups: dict[str, dict[str, Any]] = {}
    for ext, ks in kernels.items():
        if ext not in ops:
            continue
        op = ops[ext]
        a = op["args"]
        key = json.dumps([op["name"], a["Input Dims"], a["Input type"], a["Input Strides"], a["Concrete Inputs"]])
        g = groups.setdefault(key, {"name": op["name"], "args": a, "calls": []})
        g["calls"].append([(k["name"], k["dur"]) for k in ks])
    return list(groups.values())


def call_ns(call: list[tuple[str, float]]) -> int:
    return round(sum(d for _, d in call) * 1000)


def hottest(groups: list[dict[str, Any]], name: str) -> dict[str, Any]:
    mine = [g for g in groups if g["name"] == name]
    return max(mine, key=lambda g: sum(call_ns(c) for c in g["calls"]))


def assert_args_match(r: Replay, raw: dict[str, Any]) -> None:
    """Every recorded argument of the raw event, as the replay record holds it."""
    dims, types, strides, concrete = (raw[k] for k in ("Input Dims", "Input type", "Input Strides", "Concrete Inputs"))
    assert len(r.args) == len(types)
    for arg, d, t, s, c in zip(r.args, dims, types, strides, concrete, strict=True):
        if t in DTYPES:
            assert isinstance(arg, TensorArg)
            assert (arg.shape, arg.strides, arg.dtype) == (d, s, DTYPES[t])
        elif t == "Scalar":
            assert isinstance(arg, ScalarArg)
            assert arg.value == (c == "True" if c in ("True", "False") else float(c))
        elif t == "ScalarList":
            assert isinstance(arg, ListArg)
            assert arg.values == json.loads(c)
        else:
            assert t == "" and isinstance(arg, OtherArg)


# --- the record ----------------------------------------------------------------------------------

OPS = [
    "aten::addmm",
    "aten::_cudnn_attention_forward",
    "aten::native_layer_norm",
    "aten::_fused_rms_norm",
    "aten::_softmax",
    "aten::add",
    "aten::gelu",
    "aten::copy_",
    "aten::sum",
]


@pytest.mark.parametrize("op", OPS)
def test_op_record_matches_the_raw_event(op: str) -> None:
    truth = hottest(raw_signatures(EAGER), op)
    r = api.replay(EAGER, op=op)
    assert r.op == op and r.overload is None and r.rank == 1
    assert_args_match(r, truth["args"])
    assert r.kernels == [n for n, _ in truth["calls"][0]]
    assert r.calls == len(truth["calls"])
    assert r.total_ns == sum(call_ns(c) for c in truth["calls"])
    assert r.device == "NVIDIA H100 80GB HBM3" and r.trace == str(EAGER)


def test_out_variant_of_the_compiled_trace() -> None:
    """Inductor calls addmm with out=: the preallocated output is one more recorded tensor."""
    truth = hottest(raw_signatures(COMPILE), "aten::addmm")
    r = api.replay(COMPILE, op="addmm")
    assert_args_match(r, truth["args"])
    assert len(r.args) == 6 and isinstance(r.args[5], TensorArg) and r.args[5].shape == truth["args"]["Input Dims"][5]


@pytest.mark.parametrize("regex", ["nvjet", "softmax", "elementwise", "layer_norm", "sdpa|reduce"])
def test_kernel_selection_takes_the_most_matching_kernel_time(regex: str) -> None:
    groups = raw_signatures(EAGER)
    pattern = re.compile(regex)

    def matched_ns(g: dict[str, Any]) -> int:
        return sum(round(d * 1000) for c in g["calls"] for n, d in c if pattern.search(n))

    ranked = sorted((g for g in groups if matched_ns(g)), key=matched_ns, reverse=True)
    r = api.replay(EAGER, kernel=regex)
    assert r.op == ranked[0]["name"] and r.matches == len(ranked)
    assert_args_match(r, ranked[0]["args"])
    listed = api.replay_candidates(EAGER, kernel=regex).candidates
    assert [c.total_ns for c in listed] == [matched_ns(g) for g in ranked]
    second = api.replay(EAGER, kernel=regex, rank=2) if len(ranked) > 1 else None
    if second is not None:
        assert_args_match(second, ranked[1]["args"])


def test_enclosing_ops_carry_the_kernels_of_the_ops_they_call() -> None:
    """aten::linear launched nothing itself: replaying it launches its addmm's kernel."""
    linear, addmm = api.replay(EAGER, op="aten::linear"), api.replay(EAGER, op="aten::addmm")
    assert linear.kernels == addmm.kernels and linear.kernel_ns == addmm.kernel_ns
    sdpa = api.replay(EAGER, op="aten::scaled_dot_product_attention")
    assert sdpa.kernels == api.replay(EAGER, op="aten::_cudnn_attention_forward").kernels
    assert [a.shape for a in sdpa.args[:3] if isinstance(a, TensorArg)] == [[8, 16, 1024, 64]] * 3
    # the default reading (roofline, shapes) is unchanged: innermost ops only
    calls = kineto.read_ops(EAGER)[0].ops
    assert all(c.inner for c in calls)
    assert {c.op for c in calls} == {g["name"] for g in raw_signatures(EAGER)}


def test_what_the_trace_did_not_record_is_noted() -> None:
    r = api.replay(EAGER, op="aten::_cudnn_attention_forward")
    assert [i for i, a in enumerate(r.args) if isinstance(a, OtherArg)] == [3, 4, 5, 12]
    assert any("3, 4, 5, 12 not recorded" in n for n in r.notes)


def test_traces_without_strides_make_contiguous_inputs(tmp_path: Path) -> None:
    """PyTorch before 2.1 wrote no "Input Strides": the record says so and the script makes them contiguous."""
    with gzip.open(EAGER, "rt") as f:
        doc = json.load(f)
    for e in doc["traceEvents"]:
        e.get("args", {}).pop("Input Strides", None)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    r = api.replay(old, op="aten::addmm")
    assert all(a.strides is None for a in r.args if isinstance(a, TensorArg))
    assert any("strides not recorded" in n for n in r.notes)


def test_non_aten_ops_name_why_and_the_nearest_replayable() -> None:
    with pytest.raises(InputError, match=r"Inductor-generated Triton kernel.*nearest replayable ops: --op aten::"):
        api.replay(COMPILE, kernel="triton_per_fused_native_layer_norm")
    with pytest.raises(InputError, match=r"replayable matches: --rank 1 aten::addmm"):
        api.replay(COMPILE, kernel="triton_poi_fused_gelu|nvjet", rank=4)
    listed = api.replay_candidates(COMPILE).candidates
    assert {c.op for c in listed if not c.replayable} == {g["name"] for g in raw_signatures(COMPILE)} - {
        "aten::addmm",
        "aten::_cudnn_attention_forward",
        "aten::copy_",
        "aten::_softmax",
        "aten::sum",
    }


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"kernel": "no_such_kernel"}, "no op .* launched a kernel matching"),
        ({"op": "aten::mm"}, "no aten::mm call"),
        ({"op": "aten::softmx"}, "did you mean aten::softmax"),
        ({"kernel": "("}, "not a regular expression"),
        ({"op": "aten::addmm", "rank": 5}, "only 4 signature"),
        ({"op": "aten::addmm", "rank": 0}, "hottest match is 1"),
        ({}, "give --kernel REGEX or --op NAME"),
        ({"op": "aten::addmm", "kernel": "x"}, "choose one of"),
    ],
)
def test_bad_selections(options: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        api.replay(EAGER, **options)


# --- the script ----------------------------------------------------------------------------------


@pytest.mark.parametrize("op", OPS)
def test_script_compiles_and_its_header_round_trips(op: str, tmp_path: Path) -> None:
    r = api.replay(EAGER, op=op)
    text = script(r, "replay.py")
    compile(text, "replay.py", "exec")
    assert text.startswith("#!/usr/bin/env python3\n") and "REPLAY: dict[str, Any] = {}" not in text
    assert "import kernelscope" not in text and "from kernelscope" not in text  # self-contained
    path = tmp_path / "replay.py"
    path.write_text(text)
    assert Replay.from_script(path) == r


def test_a_header_that_is_not_one_is_a_format_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    for text in ("x = 1\n", "REPLAY = {'op': 1}\n", "REPLAY = open('x')\n", "def (:\n"):
        bad.write_text(text)
        with pytest.raises(InputError, match="a script written by kscope replay"):
            Replay.from_script(bad)


def load_script(r: Replay, tmp_path: Path, name: str = "replay") -> ModuleType:
    path = tmp_path / f"{name}.py"
    path.write_text(script(r, path.name))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines only: main() runs under __main__
    return module


@needs_torch
def test_every_replayable_signature_resolves_and_binds(tmp_path: Path) -> None:
    """For each replayable signature of the four bundled traces, the script finds the overload and builds
    the inputs (on the meta device), backward ops with undefined tensors included."""
    chosen: dict[str, str] = {}
    m = load_script(api.replay(EAGER, op="aten::addmm"), tmp_path)  # its REPLAY is swapped below
    for name in KINETO_TRACES:
        trace = demo_file(name)
        prof, _ = kineto.read_ops(trace, enclosing=True)  # once: the api would re-read it per call
        calls, device = prof.ops, prof.devices[0].name
        for op in sorted({c.op for c in calls if why_not(c) is None}):
            for cand in candidates(calls, kernel=None, op=op, trace=name, device=device).candidates:
                r = select(calls, kernel=None, op=op, rank=cand.rank, trace=name, device=device)
                vars(m)["REPLAY"] = msgspec.to_builtins(r)
                fn, overload = m.resolve(r.op, None)
                args, kwargs = m.bind(fn, "meta")
                assert len(args) + len(kwargs) == len(r.args)
                chosen[f"{op} {cand.args}"] = overload
    assert len(chosen) > 100
    seen = {(key.partition(" ")[0], overload) for key, overload in chosen.items()}
    assert {
        ("aten::addmm", "default"),
        ("aten::addmm", "out"),  # Inductor's out= call
        ("aten::add", "Tensor"),
        ("aten::add_", "Tensor"),
        ("aten::sum", "default"),
        ("aten::sum", "dim_IntList"),
        ("aten::softmax", "int"),
        ("aten::to", "dtype"),
        ("aten::copy_", "default"),
        ("aten::_cudnn_attention_backward", "default"),
    } <= seen
    assert {o for op, o in seen if op == "aten::addmm"} == {"default", "out"}


@needs_torch
@pytest.mark.parametrize(
    ("trace", "op", "call"),
    [
        (COMPILE, "aten::addmm", "aten::addmm.out("),
        (EAGER, "aten::copy_", "aten::copy_.default("),
        (EAGER, "aten::gelu", "approximate='none'"),
        (EAGER, "aten::_softmax", "aten::_softmax.default(float32[8,1024,1024](cpu), -1, False)"),
    ],
)
def test_script_runs_on_the_cpu(trace: Path, op: str, call: str, tmp_path: Path) -> None:
    path = tmp_path / "replay.py"
    path.write_text(script(api.replay(trace, op=op), path.name))
    proc = subprocess.run(
        [sys.executable, str(path), "--device", "cpu", "--runs", "2"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert call in proc.stdout.splitlines()[0]
    assert re.search(r"^KSCOPE_METRIC time_us=\d+\.\d+$", proc.stdout, re.MULTILINE)


@needs_torch
def test_an_unrecorded_required_value_is_one_error_line(tmp_path: Path) -> None:
    r = api.replay(EAGER, op="aten::native_layer_norm")
    broken = msgspec.structs.replace(r, args=[r.args[0], ScalarArg(value=None), *r.args[2:]])
    path = tmp_path / "replay.py"
    path.write_text(script(broken, path.name))
    proc = subprocess.run([sys.executable, str(path), "--device", "cpu"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and proc.stderr.startswith("replay: error: no overload of aten::native_layer_norm")


# --- the command line ----------------------------------------------------------------------------


def test_cli_writes_the_script_and_its_json(tmp_path: Path) -> None:
    proc = run_kscope("replay", EAGER, "--op", "aten::addmm", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "kernelscope.replay.v1" and doc["script"] == str(tmp_path / "replay_addmm.py")
    assert Replay.from_script(Path(doc["script"])) == msgspec.convert({**doc, "script": None}, Replay)
    assert_one_error_line(run_kscope("replay", EAGER, "--op", "aten::addmm", cwd=tmp_path))  # never replaced
    again = run_kscope("replay", EAGER, "--op", "aten::addmm", "-o", "replay_addmm.py", cwd=tmp_path)
    assert again.returncode == 0 and "nvjet_sm90" in again.stdout


def test_cli_script_on_stdout_and_the_list(tmp_path: Path) -> None:
    proc = run_kscope("replay", EAGER, "--kernel", "softmax", "-o", "-", cwd=tmp_path)
    assert proc.returncode == 0 and list(tmp_path.iterdir()) == []
    compile(proc.stdout, "replay.py", "exec")
    listed = json.loads(run_kscope("replay", EAGER, "--list", "--json", cwd=tmp_path).stdout)
    assert listed["schema"] == "kernelscope.replay-list.v1"
    totals = [c["total_ns"] for c in listed["candidates"]]
    assert totals == sorted(totals, reverse=True) and len(totals) == len(raw_signatures(EAGER))
    table = run_kscope("replay", COMPILE, "--list", cwd=tmp_path).stdout
    assert "not replayable: an Inductor-generated Triton kernel" in table


@pytest.mark.parametrize(
    "args",
    [
        ("{tmp}/missing.json", "--op", "aten::mm"),
        ("{tmp}/cut.json.gz", "--op", "aten::mm"),
        ("{tmp}/bad.json", "--op", "aten::mm"),
        ("{tmp}/noshapes.json", "--op", "aten::addmm"),
        ("{eager}", "--kernel", "no_such_kernel"),
        ("{eager}", "--op", "aten::addmm", "--rank", "9"),
        ("{eager}",),
        ("{compile}", "--kernel", "triton_per_fused_native_layer_norm"),
        ("{eager}", "--op", "aten::addmm", "--json", "-o", "-"),
        ("{eager}", "--list", "-o", "x.py"),
    ],
)
def test_cli_errors_are_one_line(args: tuple[str, ...], tmp_path: Path) -> None:
    (tmp_path / "cut.json.gz").write_bytes(EAGER.read_bytes()[:20_000])
    (tmp_path / "bad.json").write_text('{"traceEvents": [')
    with gzip.open(EAGER, "rt") as f:
        doc = json.load(f)
    for e in doc["traceEvents"]:
        for key in ("Input Dims", "Input type", "Input Strides", "Concrete Inputs"):
            e.get("args", {}).pop(key, None)
    (tmp_path / "noshapes.json").write_text(json.dumps(doc))
    subs = {"tmp": str(tmp_path), "eager": str(EAGER), "compile": str(COMPILE)}
    proc = run_kscope("replay", *(a.format(**subs) for a in args), cwd=tmp_path)
    assert_one_error_line(proc)


def test_cli_options_match_the_library() -> None:
    from kernelscope.cli import app

    params = {p.name: p for p in typer.main.get_command(app).commands["replay"].params}  # type: ignore[attr-defined]
    for fn in (api.replay, api.replay_candidates):
        for name, param in inspect.signature(fn).parameters.items():
            assert name in params, f"kscope replay has no option for api.{fn.__name__}({name}=...)"
            if param.default is not inspect.Parameter.empty:
                assert params[name].default == param.default, name


# --- kscope task new --from-replay ---------------------------------------------------------------


def test_task_new_from_replay_fills_the_task(tmp_path: Path) -> None:
    s = make_workspace(tmp_path)
    path = tmp_path / "scripts" / "replay_addmm.py"
    path.parent.mkdir()
    r = api.replay(EAGER, op="aten::addmm")
    path.write_text(script(r, path.name))
    common: dict[str, Any] = {"workspace": s.ws, "repo": s.repo, "baseline_ref": "base", "allowed": ["kernel/**"]}
    task = api.new_task("t", **common, timeout=60.0, from_replay=path)
    assert task.eval_command == ["python3", str(path.resolve())]
    assert (task.metric, task.direction) == ("time_us", "lower")
    assert task.kernel == r.kernels[0]
    assert task.shapes == "aten::addmm(bfloat16[4096], bfloat16[8192,1024], bfloat16[1024,4096]@[1,1024], 1, 1)"
    mine = api.new_task("u", **common, timeout=60.0, from_replay=path, metric="kernel_match", direction="higher")
    assert (mine.metric, mine.direction, mine.eval_command) == ("kernel_match", "higher", task.eval_command)
    with pytest.raises(InputError, match="needs --eval-command CMD, --metric NAME"):
        api.new_task("v", **common, timeout=60.0, direction="lower")
    proc = run_kscope(
        *("task", "new", "w", "-w", s.ws, "--repo", s.repo, "--baseline-ref", "base", "--allowed", "kernel/**"),
        *("--timeout", "60", "--from-replay", path, "--json"),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["eval_command"] == task.eval_command
    assert_one_error_line(
        run_kscope(
            *("task", "new", "x", "-w", s.ws, "--repo", s.repo, "--baseline-ref", "base", "--allowed", "kernel/**"),
            *("--timeout", "60", "--from-replay", s.repo / "bench.py"),
            cwd=tmp_path,
        )
    )


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("f<64>(float*, int)", "f<64>"),
        ("Foo::operator()(int)", "Foo::operator()"),
        ("f(int (*)(int))", "f"),
        ("g<(int)2>(void)", "g<(int)2>"),
        ("(anonymous namespace)::k", "(anonymous namespace)::k"),
        ("plain_kernel", "plain_kernel"),
        ("cut(int, flo", "cut(int, flo"),  # a profiler's cut name: no parameter list to drop
    ],
)
def test_the_candidate_list_shows_kernels_without_their_parameter_lists(name: str, shown: str) -> None:
    from kernelscope.presenters.base import without_params

    assert without_params(name) == shown


def test_a_call_whose_shapes_are_damaged_is_listed_not_replayed() -> None:
    """Found by bench/fuzz.py (kineto-shapes): a damaged trace's Input Dims ("" where a dimension belongs)
    made replay --list raise ValueError. Such a call is listed, with the reason it cannot be replayed."""
    from kernelscope.model.ops import OpCall

    call = OpCall(op="aten::mm", input_dims=[[64, ""], [2048, 8192]], input_types=["c10::BFloat16"] * 2,
                  concrete=["", ""], kernels=["k"], kernel_ns=1000, external_id=1)  # fmt: skip
    assert why_not(call) == "its recorded input shapes or strides are not shapes (a damaged trace)"
    listed = candidates([call], kernel=None, op=None, trace="t.json", device=None)
    assert [(c.op, c.replayable, c.why_not) for c in listed.candidates] == [("aten::mm", False, why_not(call))]


def test_a_kernel_with_an_impossible_time_joins_no_op_call(tmp_path: Path) -> None:
    """Found by bench/fuzz.py (kineto-shapes, seed 77): a kernel whose dur was -1e18 µs made an op call's
    kernel time negative in replay --list. The shapes view drops it, as the columns drop and count it."""
    doc = json.loads(gzip.decompress(demo_file("h100_transformer_eager.json.gz").read_bytes()))
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel" and "External id" in e.get("args", {}))
    kernel["dur"] = -1e18
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    from kernelscope.errors import DroppedRecordsWarning

    with pytest.warns(DroppedRecordsWarning, match="dropped 1 kernels"):
        listed = api.replay_candidates(bad)
        points = api.roofline(bad, gpu="H100 SXM").points
    assert listed.candidates and all(c.kernel_ns >= 0 and c.total_ns >= 0 for c in listed.candidates)
    assert points and all(p.time_us >= 0 for p in points)
