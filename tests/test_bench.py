"""``kscope bench`` / ``kernelscope.bench``: loading targets and failing cleanly here; timing on a GPU.

The timing itself is validated against CUPTI on an H100 (bench/gpu/timing_vs_cupti.py, bench/RESULTS.md);
the GPU test below runs only where PyTorch sees a GPU and checks the harness against the profiler there.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import assert_one_error_line, run_kscope

from kernelscope.errors import InputError
from kernelscope.timing import load_target


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


class _FakeCuda:
    """The slice of ``torch.cuda`` the timing engine uses, on a fake GPU clock: each call of the work
    advances it by that call's duration, so event intervals are exactly those durations."""

    def __init__(self, durations_ms: list[float]) -> None:
        self.now_ms, self.durations, self.calls = 0.0, durations_ms, 0

    def work(self) -> None:
        self.now_ms += self.durations[self.calls % len(self.durations)]
        self.calls += 1

    def Event(self, enable_timing: bool = False) -> Any:  # torch.cuda.Event
        clock = self

        class Event:
            t = 0.0

            def record(self) -> None:
                self.t = clock.now_ms

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, end: Event) -> float:
                return end.t - self.t

        return Event()

    def synchronize(self) -> None:
        pass

    def _sleep(self, cycles: int) -> None:  # the spin kernel ahead of each start event
        pass

    def current_device(self) -> int:
        return 0

    def get_device_properties(self, device: int) -> Any:
        return SimpleNamespace(L2_cache_size=50 * 2**20, clock_rate=1_980_000)

    def get_device_name(self) -> str:
        return "fake GPU"


def test_ceilings_time_through_the_timing_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """No GPU here: ``ceilings.measure._time`` runs ``timing.bench`` on a fake device clock, so the
    median it returns (in seconds) is the median of the timed calls' durations, warm-up excluded."""
    from kernelscope import timing
    from kernelscope.ceilings import measure

    cuda = _FakeCuda([1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 3.0, 4.0])  # five warm-up calls, then the timed ones
    monkeypatch.setattr(timing, "_torch", lambda: SimpleNamespace(cuda=cuda))
    assert measure._time(cuda.work, repeats=3) == pytest.approx(0.003)
    assert cuda.calls == 8
