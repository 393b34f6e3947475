"""The Triton launch ledger: the profiling hook that writes it, the reader, and the shapes ``kscope tune
--from-trace`` takes from it.

No GPU here, so no kernel is compiled: ``launch`` does what Triton 3.6 does once a kernel is compiled, with
a stand-in for the compiled kernel, and the tests go through Triton's own ``CompiledKernel.launch_metadata``,
``knobs.runtime.launch_enter_hook`` and ``Autotuner.run``/``_bench``.
"""

from __future__ import annotations

import collections
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import msgspec
import pytest

from kernelscope.errors import FormatError, InputError
from kernelscope.model.launches import ConstexprArg, ScalarArg, TensorArg
from kernelscope.profiling.tracers import HOOK_DIR
from kernelscope.readers import launch_ledger
from kernelscope.tune.ledger_shapes import shapes_from_trace

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")
from triton import knobs  # noqa: E402
from triton.compiler.compiler import ASTSource, CompiledKernel  # noqa: E402
from triton.runtime import autotuner, jit  # noqa: E402

FIXTURE = Path(__file__).parent / "data" / "launches" / "autotuned_add"
LEDGER = "launches_rank0_pid4242.jsonl"
KernelMetadata = collections.namedtuple("KernelMetadata", "name num_warps num_stages num_ctas shared")


class FakeDtype:
    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


class FakeTensor:
    """What Triton and the ledger read of a torch tensor: ``data_ptr``, ``dtype``, ``shape``, ``stride()``."""

    def __init__(self, shape: tuple[int, ...], dtype: str = "float16", strides: tuple[int, ...] | None = None):
        self.shape, self.dtype = shape, FakeDtype(dtype)
        self._strides = strides or tuple(math.prod(shape[i + 1 :]) for i in range(len(shape)))

    def data_ptr(self) -> int:
        return 0

    def stride(self) -> tuple[int, ...]:
        return self._strides


def launch(fn: Any, grid: tuple[int, ...], *args: Any, num_warps: int = 4, num_stages: int = 3) -> None:
    """``fn[grid](*args)`` after compilation, as Triton 3.6 runs it: ``JITFunction.run`` calls
    ``kernel.launch_metadata(grid, stream, *bound_args.values())`` (every parameter, constexprs included;
    compiler/compiler.py), then the backend's C launcher (backends/nvidia/driver.py) calls
    ``knobs.runtime.launch_enter_hook(launch_metadata)`` just before ``cuLaunchKernelEx``. The compiled kernel
    is a stand-in holding what ``launch_metadata`` reads."""
    metadata = KernelMetadata(fn.__name__, num_warps, num_stages, 1, 1024 * num_stages)
    compiled = SimpleNamespace(
        name=fn.__name__, function=None, metadata=metadata, src=ASTSource(fn, {}), _init_handles=lambda: None
    )
    lazy = CompiledKernel.launch_metadata(compiled, grid, None, *args)
    knobs.runtime.launch_enter_hook(lazy)


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The hook installed as ``sitecustomize`` installs it, writing ``tmp_path/LEDGER``; Triton's classes
    are restored afterwards."""
    monkeypatch.syspath_prepend(str(HOOK_DIR))
    import _kscope_launches as hook

    monkeypatch.setattr(jit.JITFunction, "__init__", jit.JITFunction.__init__)
    monkeypatch.setattr(autotuner.Autotuner, "_bench", autotuner.Autotuner._bench)
    monkeypatch.setattr(autotuner.Autotuner, "run", autotuner.Autotuner.run)
    hook.install(triton, lambda: str(tmp_path / LEDGER), 1_000_000)
    yield hook
    knobs.runtime.launch_enter_hook.remove(hook._on_launch)
    hook._state.buffer.clear()


def kernels() -> SimpleNamespace:
    """Fresh JITFunctions (created after the hook is installed, like the workload's)."""

    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
        pass

    @triton.jit
    def scale(x_ptr, n, BLOCK: tl.constexpr):
        pass

    return SimpleNamespace(add=add, scale=scale)


class Runner:
    """Stands in for the JITFunction under ``@triton.autotune``: ``run`` binds the arguments as Triton's
    binder does (config kwargs fill the constexprs, num_warps/num_stages go to the compiler) and launches."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def run(self, *args: Any, num_warps: int, num_stages: int, num_ctas: int, **kwargs: Any) -> None:
        bound = dict(zip(self.fn.arg_names, args, strict=False)) | kwargs
        grid = (-(-bound["n"] // bound["BLOCK"]),)
        launch(self.fn, grid, *bound.values(), num_warps=num_warps, num_stages=num_stages)


def autotuned_workload() -> None:
    """``add`` autotuned over two configs on key ``n`` (the second times faster), called 3 times at n=4096
    and once at n=1024; ``scale`` launched twice without an autotuner."""
    k = kernels()
    times = iter([2.0, 1.0] * 2)

    def do_bench(kernel_call: Any, quantiles: Any) -> float:
        kernel_call()  # each config is launched once while timed
        return next(times)

    configs = [triton.Config({"BLOCK": 64}, num_warps=4), triton.Config({"BLOCK": 128}, num_warps=8)]
    tuned = triton.autotune(configs=configs, key=["n"], do_bench=do_bench)(k.add)
    tuned.fn = Runner(k.add)
    for n in (4096, 4096, 1024, 4096):
        x = FakeTensor((n,))
        tuned.run(x, x, FakeTensor((n,)), n, 0.5)
    for _ in range(2):
        launch(k.scale, (8,), FakeTensor((64, 32), "float32", strides=(1, 64)), 2048, 256)


def lines(path: Path) -> list[dict[str, Any]]:
    return [msgspec.json.decode(line) for line in path.read_bytes().splitlines()]


def test_every_launch_is_one_line_with_its_arguments(ledger: ModuleType, tmp_path: Path) -> None:
    k = kernels()
    x = FakeTensor((4096, 1024))
    launch(k.add, (64, 2), x, x, FakeTensor((4096, 1024), "bfloat16"), 4096 * 1024, 0.5, 256, num_warps=8)
    ledger.flush()
    [line] = lines(tmp_path / LEDGER)
    assert line["kernel"] == "add" and line["grid"] == [64, 2, 1] and line["num_warps"] == 8
    assert (line["num_stages"], line["num_ctas"], line["shared"]) == (3, 1, 3072)
    assert line["tid"] > 0 and line["t_ns"] > 0 and "autotune" not in line and "config" not in line
    assert line["module"] == k.add.fn.__module__  # the copy that ran, where several projects carry one
    assert launch_ledger.read(tmp_path / LEDGER)[0].module == line["module"]
    assert line["args"] == [
        {"kind": "tensor", "name": "x_ptr", "dtype": "float16", "shape": [4096, 1024], "strides": [1024, 1]},
        {"kind": "tensor", "name": "y_ptr", "dtype": "float16", "shape": [4096, 1024], "strides": [1024, 1]},
        {"kind": "tensor", "name": "out_ptr", "dtype": "bfloat16", "shape": [4096, 1024], "strides": [1024, 1]},
        {"kind": "scalar", "name": "n", "value": 4194304},
        {"kind": "scalar", "name": "alpha", "value": 0.5},
        {"kind": "constexpr", "name": "BLOCK", "value": 256},
    ]


@pytest.mark.parametrize(
    ("value", "kind", "written"),
    [
        (None, "scalar", None),
        (True, "scalar", True),
        (float("-inf"), "scalar", "-inf"),
        (("a", "b"), "other", None),
    ],
)
def test_odd_arguments_stay_json(ledger: ModuleType, tmp_path: Path, value: Any, kind: str, written: Any) -> None:
    k = kernels()
    launch(k.scale, (1,), value, 7, tl.float16)
    ledger.flush()
    [launched] = launch_ledger.read(tmp_path / LEDGER)
    first, _, constexpr = launched.args
    assert first.__struct_config__.tag == kind
    assert getattr(first, "value", None) == written
    assert constexpr == ConstexprArg("BLOCK", "fp16")


def test_autotuner_timing_launches_are_marked_and_real_ones_carry_the_chosen_config(
    ledger: ModuleType, tmp_path: Path
) -> None:
    autotuned_workload()
    ledger.flush()
    adds = [line for line in lines(tmp_path / LEDGER) if line["kernel"] == "add"]
    marks = [(line.get("autotune", False), line.get("config", {}).get("BLOCK"), line["grid"][0]) for line in adds]
    timed_4096 = [(True, None, 64), (True, None, 32)]  # both configs, once each
    timed_1024 = [(True, None, 16), (True, None, 8)]
    real_4096 = (False, 128, 32)
    assert marks == [*timed_4096, real_4096, real_4096, *timed_1024, (False, 128, 8), real_4096]
    assert adds[2]["config"] == {"BLOCK": 128, "num_warps": 8, "num_ctas": 1, "num_stages": 3}
    assert adds[2]["num_warps"] == 8


def test_autotuner_timing_runs_inside_a_harness_annotation(ledger: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ``Autotuner._bench`` (one config timed) runs inside ``kscope::harness::triton.autotune``, the
    annotation the gap table sets aside exactly; the workload's own calls do not."""
    import contextlib
    import sys

    opened: list[str] = []
    inside: list[bool] = []

    @contextlib.contextmanager
    def record_function(label: str) -> Iterator[None]:
        opened.append(label)
        inside.append(True)
        try:
            yield
        finally:
            inside.pop()

    fake = SimpleNamespace(profiler=SimpleNamespace(record_function=record_function))
    monkeypatch.setitem(sys.modules, "torch", fake)
    import _kscope_harness  # sitecustomize marks triton.runtime.autotuner as it is imported

    _kscope_harness.mark(autotuner)
    seen: list[bool] = []
    monkeypatch.setattr(ledger, "_record", lambda *a: seen.append(bool(inside)))
    autotuned_workload()
    assert opened == ["kscope::harness::triton.autotune"] * 4  # 2 configs x 2 keys
    assert seen[:2] == [True, True] and seen[2] is False  # timed launches inside, the real call outside


def test_the_fixture_is_what_the_hook_writes(ledger: ModuleType, tmp_path: Path) -> None:
    """``tests/data/launches/autotuned_add`` is ``autotuned_workload``'s ledger (times and thread ids
    scrubbed); KSCOPE_REGENERATE=1 rewrites it."""
    autotuned_workload()
    ledger.flush()
    written = [line | {"t_ns": 1000 + i, "tid": 4242} for i, line in enumerate(lines(tmp_path / LEDGER))]
    if os.environ.get("KSCOPE_REGENERATE") == "1":
        (FIXTURE / LEDGER).write_bytes(b"".join(msgspec.json.encode(line) + b"\n" for line in written))
    assert written == lines(FIXTURE / LEDGER)


def test_the_hook_never_raises_into_the_workload(
    ledger: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    k = kernels()
    broken = SimpleNamespace(name="add", function=None, metadata=None, src=ASTSource(k.add, {}))
    broken._init_handles = lambda: None
    for _ in range(2):  # metadata without num_warps: the ledger gives up, the launch goes on
        knobs.runtime.launch_enter_hook(CompiledKernel.launch_metadata(broken, (1,), None, *range(6)))
    launch(k.scale, (1,), FakeTensor((4,)), 4, 4)
    ledger.flush()
    err = capsys.readouterr().err.splitlines()
    assert err == ["[kscope] launch ledger disabled: AttributeError: 'NoneType' object has no attribute 'name'"]
    assert not (tmp_path / LEDGER).exists()


def test_a_failed_write_disables_the_ledger(
    ledger: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / LEDGER).mkdir()  # the file cannot be opened
    launch(kernels().scale, (1,), FakeTensor((4,)), 4, 4)
    ledger.flush()
    assert capsys.readouterr().err.startswith("[kscope] launch ledger disabled: IsADirectoryError")


def test_a_triton_without_the_hook_chain_is_left_alone(
    ledger: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = SimpleNamespace(__version__="3.1.0", knobs=SimpleNamespace(runtime=SimpleNamespace(launch_enter_hook=None)))
    ledger.install(old, lambda: str(tmp_path / LEDGER), 10)
    err = capsys.readouterr().err
    assert (
        err == "[kscope] launch ledger disabled: RuntimeError: Triton 3.1.0 has no launch_enter_hook chain (3.6 has)\n"
    )


def test_the_ledger_stops_at_its_limit(ledger: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger._state.limit = 2
    k = kernels()
    for _ in range(3):
        launch(k.scale, (1,), FakeTensor((4,)), 4, 4)
    ledger.flush()
    assert len(lines(tmp_path / LEDGER)) == 2
    assert "launch ledger full: 2 launches recorded (KSCOPE_LAUNCHES)" in capsys.readouterr().err


# --- the reader -------------------------------------------------------------------------------------


def test_read_a_ledger_a_folder_or_the_trace_beside_it(tmp_path: Path) -> None:
    launches = launch_ledger.read(FIXTURE / LEDGER)
    assert len(launches) == 10 and {(x.rank, x.pid) for x in launches} == {(0, 4242)}
    first = launches[0]
    assert first.autotune and first.config is None and first.grid == [64, 1, 1]
    assert first.args[0] == TensorArg("x_ptr", "float16", [4096], [1])
    assert first.args[3] == ScalarArg("n", 4096)
    assert launch_ledger.read(FIXTURE) == launches
    (tmp_path / LEDGER).write_bytes((FIXTURE / LEDGER).read_bytes())
    (tmp_path / "trace_rank0_pid4242.json.gz").touch()
    assert launch_ledger.read(tmp_path / "trace_rank0_pid4242.json.gz") == launches
    (tmp_path / "trace_rank1_pid9.json.gz").touch()
    with pytest.raises(InputError, match=r"no Triton launch ledger beside it \(launches_rank1_pid9.jsonl\)"):
        launch_ledger.read(tmp_path / "trace_rank1_pid9.json.gz")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="holds no Triton launch ledger"):
        launch_ledger.read(tmp_path / "empty")


@pytest.mark.parametrize(
    ("damage", "where", "killed"),
    [
        (lambda data: data[: data.rindex(b",")], ":10:", True),  # cut mid-line, as a kill does
        (lambda data: data.replace(b"\n", b"\n{not json\n", 1), ":2:", False),
        (lambda data: data.replace(b'"grid":[64,1,1]', b'"grid":"64"', 1), ":1:", False),
        (lambda data: data.replace(b'"t_ns":1000,', b'"t_ns":-1,', 1), ":1:", False),  # found by bench/fuzz.py
        (lambda data: data.replace(b'"num_warps":4', b'"num_warps":0', 1), ":1:", False),
    ],
    ids=["truncated-last-line", "garbage-line", "wrong-type", "negative-time", "no-warps"],
)
def test_a_damaged_ledger_is_one_line_naming_the_line(tmp_path: Path, damage: Any, where: str, killed: bool) -> None:
    path = tmp_path / LEDGER
    path.write_bytes(damage((FIXTURE / LEDGER).read_bytes()))
    with pytest.raises(FormatError) as info:
        launch_ledger.read(path)
    message = str(info.value)
    assert "\n" not in message and f"{LEDGER}{where} expected a launch ledger line" in message
    assert ("killed while writing" in message) == killed


def test_invalid_utf8_in_a_name_is_replaced_not_raised(tmp_path: Path) -> None:
    """Found by bench/fuzz.py: a byte that is not UTF-8 inside a string escaped as UnicodeDecodeError."""
    path = tmp_path / LEDGER
    path.write_bytes((FIXTURE / LEDGER).read_bytes().replace(b'"x_ptr"', b'"x_\xfe"', 1))
    assert launch_ledger.read(path)[0].args[0].name == "x_\ufffd"


# --- the shapes ---------------------------------------------------------------------------------------


def test_shapes_by_the_autotuner_keys() -> None:
    found = shapes_from_trace(FIXTURE, kernel="^add$", keys=["n"])
    dtypes = {"x_ptr.dtype": "float16", "y_ptr.dtype": "float16", "out_ptr.dtype": "float16"}
    assert [(s.shape, s.launches, s.grids) for s in found] == [
        ({**dtypes, "n": 4096}, 3, [[32, 1, 1]]),
        ({**dtypes, "n": 1024}, 1, [[8, 1, 1]]),
    ]
    assert found[0].config == {"BLOCK": 128, "num_warps": 8, "num_ctas": 1, "num_stages": 3}
    assert found[0].kernel == "add"


def test_shapes_without_keys_are_every_scalar_and_tensor() -> None:
    [s] = shapes_from_trace(FIXTURE, kernel="sca")
    assert s.shape == {"x_ptr.shape": "64x32", "x_ptr.strides": "1x64", "x_ptr.dtype": "float32", "n": 2048}
    assert (s.launches, s.config) == (2, None)
    [first, _] = shapes_from_trace(FIXTURE, kernel="add")
    assert first.shape == {
        **{f"{t}.{f}": v for t in ("x_ptr", "y_ptr", "out_ptr") for f, v in (("shape", "4096"), ("dtype", "float16"))},
        "n": 4096,
        "alpha": 0.5,
    }


def test_shapes_say_which_kernels_were_launched() -> None:
    with pytest.raises(InputError, match=r"matches none of the Triton kernels launched: add \(4\), scale \(2\)"):
        shapes_from_trace(FIXTURE, kernel="matmul")
    with pytest.raises(InputError, match=r"2 Triton kernels launched .*; choose one with --kernel REGEX"):
        shapes_from_trace(FIXTURE)
    with pytest.raises(InputError, match=r"keys \['M'\] are not arguments of add; its arguments: x_ptr, y_ptr"):
        shapes_from_trace(FIXTURE, kernel="add", keys=["M"])
    with pytest.raises(InputError, match="not a regular expression"):
        shapes_from_trace(FIXTURE, kernel="(")


# --- sitecustomize: the ledger in a real interpreter ------------------------------------------------------


def _python(tmp_path: Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    tests = str(Path(__file__).parent)
    path = os.pathsep.join([str(HOOK_DIR), tests, str(Path(tests).parent)])
    environ = {**os.environ, "PYTHONPATH": path, "KSCOPE_TRACE_DIR": str(tmp_path / "out"), **env}
    run = [sys.executable, "-c", code]
    return subprocess.run(run, env=environ, capture_output=True, text=True, timeout=120, check=False)


def test_sitecustomize_hooks_triton_and_writes_nothing_without_launches(tmp_path: Path) -> None:
    code = (
        "import sys, triton\n"
        "import _kscope_launches as hook\n"
        "assert hook._on_launch in triton.knobs.runtime.launch_enter_hook.calls\n"
        "assert type(triton.runtime.jit.JITFunction.__init__).__name__ == 'function'\n"
        "assert triton.runtime.autotuner.Autotuner.run.__wrapped__\n"
        "from triton.testing import do_bench\n"  # marked before the workload can bind the name
        "assert do_bench._kscope_marked and triton.testing.do_bench_cudagraph._kscope_marked\n"
        "assert triton.runtime.autotuner.Autotuner._bench.__wrapped__._kscope_marked\n"
    )
    done = _python(tmp_path, code)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and not (tmp_path / "out").exists()


def test_sitecustomize_writes_the_ledger_at_exit(tmp_path: Path) -> None:
    code = "import triton\nfrom test_launch_ledger import autotuned_workload\nautotuned_workload()\n"
    done = _python(tmp_path, code, RANK="3")
    assert done.returncode == 0, done.stderr
    [written] = (tmp_path / "out").glob("launches_rank3_pid*.jsonl")
    assert len(launch_ledger.read(written)) == 10


def test_kscope_launches_0_turns_it_off(tmp_path: Path) -> None:
    done = _python(tmp_path, "import sys, triton\nassert '_kscope_launches' not in sys.modules\n", KSCOPE_LAUNCHES="0")
    assert done.returncode == 0, done.stderr
