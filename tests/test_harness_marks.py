"""kscope profile's harness marks (``profiling/hook/_kscope_harness.py``): benchmarking code of torch and
Triton runs inside ``kscope::harness::<what>`` annotations. The torch modules are stand-ins with the shape of
the real ones (PyTorch 2.11: ``torch.utils.benchmark.utils.timer.Timer``, ``torch.cuda.graphs``,
``torch._inductor.runtime.benchmarking``'s ``Benchmarker`` and subclasses); Triton's are the real ones."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

HOOK_DIR = Path(__file__).parents[1] / "kernelscope" / "profiling" / "hook"


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, list[str]]]:
    """The hook module, and the annotations opened while a stand-in torch records (innermost last)."""
    monkeypatch.syspath_prepend(str(HOOK_DIR))
    import _kscope_harness

    opened: list[str] = []

    @contextlib.contextmanager
    def record_function(label: str) -> Iterator[None]:
        opened.append(label)
        yield

    torch = SimpleNamespace(profiler=SimpleNamespace(record_function=record_function))
    monkeypatch.setitem(sys.modules, "torch", torch)
    yield _kscope_harness, opened


def _module(name: str, **attrs: Any) -> ModuleType:
    mod = ModuleType(name)
    for k, v in attrs.items():
        if isinstance(v, type):
            type.__setattr__(v, "__module__", name)  # as if defined there
        setattr(mod, k, v)
    return mod


def test_torch_benchmark_timer_measurements_are_marked(harness: tuple[ModuleType, list[str]]) -> None:
    hook, opened = harness

    class Timer:
        def timeit(self, number: int = 1) -> int:
            return number

        def blocked_autorange(self, min_run_time: float = 0.2) -> float:
            return self.timeit(3) * min_run_time  # nested: the outer annotation holds it all

        def describe(self) -> str:
            return "not a measurement"

    mod = _module("torch.utils.benchmark.utils.timer", Timer=Timer)
    hook.mark(mod)
    t = Timer()
    assert t.blocked_autorange(0.5) == 1.5 and t.describe() == "not a measurement"
    assert opened == ["kscope::harness::torch.utils.benchmark"] * 2
    hook.mark(mod)  # imported again (a reload): marked once
    t.timeit()
    assert len(opened) == 3


def test_every_inductor_benchmarker_class_is_marked(harness: tuple[ModuleType, list[str]]) -> None:
    """Inductor's subclasses override ``benchmark_gpu``: each class's own method is wrapped, not only the base's."""
    hook, opened = harness

    class Benchmarker:
        def benchmark(self, fn: Any) -> float:
            return self.benchmark_gpu(fn)

        def benchmark_gpu(self, fn: Any) -> float:
            raise NotImplementedError

    class InductorBenchmarker(Benchmarker):
        def benchmark_gpu(self, fn: Any) -> float:
            return float(fn())

    mod = _module(
        "torch._inductor.runtime.benchmarking", Benchmarker=Benchmarker, InductorBenchmarker=InductorBenchmarker
    )
    mod.Imported = dict  # a class the module imports is not its own: left alone
    hook.mark(mod)
    assert InductorBenchmarker().benchmark_gpu(lambda: 2) == 2.0
    assert opened == ["kscope::harness::torch._inductor.benchmark"]
    assert "_kscope_marked" not in dir(dict.get)


def test_module_functions_and_missing_attributes(harness: tuple[ModuleType, list[str]]) -> None:
    """``make_graphed_callables`` (a module function) is marked; a version without a target is left as it is."""
    hook, opened = harness
    mod = _module("torch.cuda.graphs", make_graphed_callables=lambda f, args: f)
    hook.mark(mod)
    assert mod.make_graphed_callables(len, ()) is len
    assert opened == ["kscope::harness::torch.cuda.make_graphed_callables"]
    hook.mark(_module("torch.utils.benchmark.utils.timer"))  # no Timer: nothing to do, nothing printed


def test_a_failure_leaves_the_module_working(
    harness: tuple[ModuleType, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    hook, _ = harness

    class Frozen(type):
        def __setattr__(cls, name: str, value: Any) -> None:
            raise TypeError("read-only class")

    class Timer(metaclass=Frozen):
        def timeit(self, number: int = 1) -> int:
            return number

    hook.mark(_module("torch.utils.benchmark.utils.timer", Timer=Timer))
    assert Timer().timeit(4) == 4
    assert capsys.readouterr().err.strip() == (
        "[kscope] harness marks for torch.utils.benchmark.utils.timer disabled: TypeError: read-only class"
    )


def _hooked(tmp_path: Path, script: Path) -> subprocess.CompletedProcess[str]:
    """``script`` run under the hook (as ``kscope profile`` runs a workload), with a stand-in ``torch``
    package that has no profiler: the hook starting the profiler in it fails loudly."""
    (tmp_path / "torch").mkdir(exist_ok=True)
    (tmp_path / "torch" / "__init__.py").write_text("")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HOOK_DIR), str(tmp_path)])}
    env["KSCOPE_TRACE_DIR"] = str(tmp_path / "out")
    cmd = [sys.executable, str(script)]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_inductor_compile_workers_get_no_profiler(tmp_path: Path) -> None:
    """Inductor's compile pool runs ``torch/_inductor/compile_worker/__main__.py`` (SubprocPool) with the
    workload's environment: it imports torch but runs no GPU work, and a trace of its own would make the
    folder two runs. The same import in any other script starts the profiler (here: fails without one)."""
    worker = tmp_path / "site" / "torch" / "_inductor" / "compile_worker" / "__main__.py"
    worker.parent.mkdir(parents=True)
    worker.write_text("import torch\nprint('worker ok')\n")
    done = _hooked(tmp_path, worker)
    assert done.returncode == 0 and done.stdout == "worker ok\n", done.stderr
    other = tmp_path / "workload.py"
    other.write_text("import torch\n")
    assert "No module named 'torch.profiler'" in _hooked(tmp_path, other).stderr
