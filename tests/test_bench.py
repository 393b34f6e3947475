"""``kscope bench`` / ``kernelscope.bench``: loading targets and failing cleanly here; timing on a GPU;
on a fake GPU, the engine's users (ceilings) and its standalone copy (the replay script).

The timing itself is validated against CUPTI on an H100 (bench/gpu/timing_vs_cupti.py, bench/RESULTS.md);
the GPU test below runs only where PyTorch sees a GPU and checks the harness against the profiler there.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import assert_one_error_line, run_kscope

from kernelscope.errors import InputError
from kernelscope.timing import load_target

TEMPLATE = Path(__file__).parents[1] / "kernelscope" / "presenters" / "replay_template.py"


def _has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def test_load_target_from_a_file_with_arguments(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text("def make(n=1, scale=1.0, name='x'):\n    return lambda: (n, scale, name)\n")
    fn = load_target(f"{tmp_path / 'k.py'}:make", ["n=3", "scale=0.5", "name=y"])
    assert fn() == (3, 0.5, "y")


@pytest.mark.parametrize(
    ("body", "spec", "message"),
    [
        ("def make():\n    return 1\n", "k.py:make", "zero-argument callable"),
        ("def make():\n    raise RuntimeError('no GPU here')\n", "k.py:make", "RuntimeError: no GPU here"),
        ("import not_a_module\n", "k.py:make", "ModuleNotFoundError"),
        ("x = 1\n", "k.py:make", "no callable 'make'"),
        ("", "k.py", "expected FILE.py:FACTORY"),
        ("", "missing.py:make", "no such file"),
    ],
)
def test_bad_targets_say_why(body: str, spec: str, message: str, tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(body)
    with pytest.raises(InputError, match=message):
        load_target(str(tmp_path / spec))
    assert_one_error_line(run_kscope("bench", str(tmp_path / spec)))


@pytest.mark.skipif(_has_gpu(), reason="checks the no-GPU path")
def test_without_a_gpu_bench_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text("def make():\n    return lambda: None\n")
    assert_one_error_line(run_kscope("bench", f"{tmp_path / 'k.py'}:make"))


@pytest.mark.skipif(not _has_gpu(), reason="needs a GPU visible to PyTorch")
def test_bench_agrees_with_the_profiler_on_a_gpu() -> None:
    import torch

    from kernelscope import bench

    src = torch.empty(32 * 2**20, device="cuda")
    dst = torch.empty_like(src)
    events = bench(lambda: dst.copy_(src), mode="cold", min_time_ms=100)
    kernels = bench(lambda: dst.copy_(src), mode="cold", min_time_ms=100, timer="cupti")
    assert kernels.summary.median <= events.summary.median  # events add the launch's dispatch time
    assert events.summary.median / kernels.summary.median < 1.15


class _FakeGpu:
    """The slice of ``torch`` the timing methods use, on fake clocks: each call of ``work`` takes
    ``host_ms`` of host time (``perf_counter``) and the next of ``gpu_ms`` on the device clock that
    events read, so every interval either method measures is known exactly."""

    def __init__(self, gpu_ms: list[float], host_ms: float = 0.7, l2: int = 50 * 2**20, khz: int = 1_980_000) -> None:
        self.host_s, self.gpu_now_ms, self.gpu_ms, self.host_ms = 0.0, 0.0, gpu_ms, host_ms
        self.calls, self.spins, self.buffers = 0, list[int](), list[int]()
        props = SimpleNamespace(L2_cache_size=l2, clock_rate=khz)
        self.time = SimpleNamespace(perf_counter=lambda: self.host_s)
        self.torch = SimpleNamespace(int32="int32", empty=self._empty, cuda=SimpleNamespace(
            Event=self._event, synchronize=lambda: None, _sleep=self.spins.append, current_device=lambda: 0,
            get_device_properties=lambda device: props, get_device_name=lambda: "fake GPU"))  # fmt: skip

    def work(self) -> None:
        self.host_s += self.host_ms / 1e3
        self.gpu_now_ms += self.gpu_ms[min(self.calls, len(self.gpu_ms) - 1)]
        self.calls += 1

    def _empty(self, n: int, dtype: str, device: str) -> Any:
        self.buffers.append(n)
        return SimpleNamespace(zero_=lambda: None, numel=lambda: n)

    def _event(self, enable_timing: bool = False) -> Any:
        gpu = self

        class Event:
            t = 0.0

            def record(self) -> None:
                self.t = gpu.gpu_now_ms

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, end: Event) -> float:
                return end.t - self.t

        return Event()


def _on(gpu: _FakeGpu, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelscope import timing

    monkeypatch.setattr(timing, "_torch", lambda: gpu.torch)
    monkeypatch.setattr(timing, "time", gpu.time)


def test_ceilings_time_through_the_timing_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """No GPU here: ``ceilings.measure._time`` runs ``timing.bench`` on a fake device clock, so the
    median it returns (in seconds) is the median of the timed calls' durations, warm-up excluded."""
    from kernelscope.ceilings import measure

    gpu = _FakeGpu([1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 3.0, 4.0], host_ms=0.01)  # 5 warm-up calls, 3 timed
    _on(gpu, monkeypatch)
    assert measure._time(gpu.work, repeats=3) == pytest.approx(0.003)
    assert gpu.calls == 8 and gpu.buffers == []  # warm caches: no flush buffer


@pytest.mark.parametrize(("l2", "khz"), [(50 * 2**20, 1_980_000), (0, 0)])  # the device's, or unknown
def test_the_standalone_replay_template_times_as_kernelscope_timing_does(
    l2: int, khz: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay script stays self-contained (it runs where kscope is not installed), so its copy of
    ``timing.bench``'s cold method is checked here, on the same fake GPU: the same warm-up (5 calls and
    50 ms), L2 flush buffer, spin kernel before each start event, and samples."""
    from kernelscope import timing

    gpu_ms = [float(i % 7 + 1) for i in range(200)]
    template_gpu, timing_gpu = _FakeGpu(gpu_ms, l2=l2, khz=khz), _FakeGpu(gpu_ms, l2=l2, khz=khz)
    monkeypatch.setitem(sys.modules, "torch", template_gpu.torch)
    spec = importlib.util.spec_from_file_location("replay_template", TEMPLATE)
    assert spec is not None and spec.loader is not None
    template = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(template)
    monkeypatch.setattr(template, "time", template_gpu.time)
    times = template.gpu_times(template_gpu.work, 9)
    _on(timing_gpu, monkeypatch)
    m = timing.bench(timing_gpu.work, mode="cold", calls=9)
    assert m.warmup_calls == 72 and template_gpu.calls == timing_gpu.calls == 72 + 9  # 72 x 0.7 ms > 50 ms
    assert template_gpu.buffers == timing_gpu.buffers and m.flush_bytes == 4 * template_gpu.buffers[0]
    assert template_gpu.spins == timing_gpu.spins and len(set(timing_gpu.spins)) == 1
    assert times == m.samples_us
