"""``kernelscope.bench``: time a GPU callable with device events, honestly.

Choices and why:
- Device events around each call, not wall clocks: the host returns before the kernel ends.
- A spin kernel (``torch.cuda._sleep``) is queued before each start event, sized from the host time one
  launch of ``fn`` takes: while the GPU spins, the host queues the start event and ``fn``'s kernels, so
  the GPU never idles between the start event and the work. Without it a Python launcher slower than
  the kernel (Triton's is tens of µs) is timed as kernel time: measured on an H100, a 46.5 µs softmax
  read as 65 µs (bench/RESULTS.md).
- Warm-up by time (``warmup_ms``), not by count: it must outlast JIT compilation, autotuning and clock
  ramp-up whatever one call costs; the warm-up calls also size the number of timed calls so the run
  lasts about ``min_time_ms``.
- ``cold`` (default): the L2 is flushed before every timed call by writing a buffer twice the device's
  L2 size (read from the device); the flush runs before the start event, outside the timed interval.
  ``hot`` re-runs on warm caches, as a kernel inside a fused model loop often sees.
- ``graph``: the calls are captured once into a CUDA/HIP graph of ``calls_per_sample`` calls and
  replayed; one event pair spans a replay, so launch overhead — which dominates microsecond kernels —
  is amortized. A graph cannot hold a flush between calls without timing it, so graph mode is hot.
- Medians with the IQR and a bootstrap CI of the median (``analyses.stats``): timings are right-skewed,
  a mean follows its outliers. (Triton's ``do_bench`` returns the mean although its docstring says
  median; compare like with like.)
- A spread warning when IQR/median exceeds 5 %: the number is not to be trusted alone.
- ``timer="cupti"``: each call inside a ``record_function`` range of the PyTorch profiler, and the
  call's time is the summed GPU duration of the kernels it launched (CUPTI on NVIDIA, roctracer/
  rocprofiler on AMD): kernel execution only. Device events also count the GPU's per-launch dispatch
  time (about 3 µs per kernel on an H100, bench/RESULTS.md), which a stream really spends but a kernel
  engineer comparing kernel bodies usually does not want; above ~150 µs the two agree within 2 %.
"""

from __future__ import annotations

import importlib
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kernelscope.analyses.stats import bootstrap_median, summarize
from kernelscope.errors import InputError, MissingToolError, ToolFailedError
from kernelscope.model.measurement import Measurement
from kernelscope.model.stats import Summary

NOISY = 0.05  # IQR / median above which a measurement carries a warning
MAX_CALLS = 10_000


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise MissingToolError(
            "torch", "kernelscope.bench times GPU callables through PyTorch's device events"
        ) from None
    if not torch.cuda.is_available():
        raise MissingToolError("a CUDA or ROCm GPU", "kernelscope.bench needs a GPU visible to PyTorch")
    return torch


def _flush_buffer(torch: Any) -> Any:
    """Twice the L2, so every line of the previous call's data is evicted (not just most)."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = int(getattr(props, "L2_cache_size", 0)) or 256 * 2**20  # unknown: larger than any current L2
    return torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")


def bench(
    fn: Callable[[], object],
    *,
    label: str = "fn",
    mode: str = "cold",
    graph: bool = False,
    warmup_ms: float = 50.0,
    min_time_ms: float = 300.0,
    calls: int | None = None,
    calls_per_sample: int = 20,
    timer: str = "events",
    seed: int = 0,
) -> Measurement:
    """Time ``fn()`` (a zero-argument callable that launches GPU work) per call, in microseconds.

    Args:
        mode: ``cold`` (flush L2 before each call) or ``hot``.
        graph: replay a captured graph of ``calls_per_sample`` calls per sample (hot only).
        warmup_ms: run ``fn`` for at least this long before timing.
        min_time_ms: timed calls are chosen to last about this long (at most 10,000).
        calls: the number of timed samples instead of ``min_time_ms``.
        timer: ``events`` (device events around each call) or ``cupti`` (kernel durations, see above).
        seed: the bootstrap's seed, so the CI is reproducible.
    """
    if mode not in ("cold", "hot"):
        raise InputError(f"mode {mode!r}: expected cold or hot")
    if timer not in ("events", "cupti"):
        raise InputError(f"timer {timer!r}: expected events or cupti")
    if graph and mode == "cold":
        raise InputError("graph mode replays calls back to back: use mode='hot' (a flush cannot sit between them)")
    torch = _torch()
    flush = _flush_buffer(torch) if mode == "cold" else None
    warm, per_call_ms, host_s = _warm_up(torch, fn, flush, warmup_ms)
    n = calls or max(5, min(MAX_CALLS, int(min_time_ms / max(per_call_ms, 1e-3))))
    if graph:
        samples = _graph_samples(torch, fn, n, calls_per_sample)
    elif timer == "cupti":
        samples = _profiler_samples(torch, fn, min(n, 2000), flush, _spin_cycles(torch, host_s))  # memory per event
    else:
        samples = _event_samples(torch, fn, n, flush, _spin_cycles(torch, host_s))
    summary = summarize(samples)
    warnings = _noise(summary)
    return Measurement(
        label=label,
        device=str(torch.cuda.get_device_name()),
        mode=mode,
        graph=graph,
        samples_us=samples,
        summary=summary,
        median_ci=bootstrap_median(samples, confidence=0.95, seed=seed),
        warmup_calls=warm,
        calls_per_sample=calls_per_sample if graph else 1,
        flush_bytes=int(flush.numel() * 4) if flush is not None else 0,
        timer="kernel durations (profiler)" if timer == "cupti" and not graph else "device events",
        warnings=warnings,
    )


def _noise(summary: Summary) -> list[str]:
    if summary.median > 0 and summary.iqr / summary.median > NOISY:
        return [f"noisy: IQR is {100 * summary.iqr / summary.median:.1f}% of the median"]
    return []


def _warm_up(torch: Any, fn: Callable[[], object], flush: Any, warmup_ms: float) -> tuple[int, float, float]:
    """Calls made, and the medians of their GPU time (ms, flush excluded) and of the host time one
    launch takes (s): medians, because the first calls compile, autotune and initialize libraries."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    gpu_ms: list[float] = []
    host_s: list[float] = []
    t0 = time.perf_counter()
    while len(gpu_ms) < 5 or (time.perf_counter() - t0) * 1e3 < warmup_ms:
        if flush is not None:
            flush.zero_()
        start.record()
        h = time.perf_counter()
        fn()
        host_s.append(time.perf_counter() - h)
        end.record()
        end.synchronize()
        gpu_ms.append(start.elapsed_time(end))
    return len(gpu_ms), statistics.median(gpu_ms), statistics.median(host_s)


def _spin_cycles(torch: Any, host_s: float) -> int:
    """GPU clock cycles that outlast twice the host's launch time (plus 20 µs for the event)."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    hz = float(getattr(props, "clock_rate", 0) or 2_000_000) * 1e3  # kHz; 2 GHz if unknown: spins longer
    return int((2 * host_s + 20e-6) * hz)


def _timed(torch: Any, n: int, before: Callable[[], object], work: Callable[[], object]) -> list[float]:
    """``n`` device-event intervals (µs) around ``work``, each after ``before`` (outside the interval);
    one synchronize at the end, so the host never waits between samples."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for s, e in zip(starts, ends, strict=True):
        before()
        s.record()
        work()
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends, strict=True)]


def _event_samples(torch: Any, fn: Callable[[], object], n: int, flush: Any, spin: int) -> list[float]:
    def before() -> None:
        if flush is not None:
            flush.zero_()
        torch.cuda._sleep(spin)  # keeps the GPU busy while the host queues the start event and fn

    return _timed(torch, n, before, fn)


_CALL = "kscope::call"


def _profiler_samples(torch: Any, fn: Callable[[], object], n: int, flush: Any, spin: int) -> list[float]:
    """Per call, the GPU time of the kernels launched inside its range (flush and spin are outside it).
    The spin matters here too: a GPU left idle while the host opens the range clocks down, and an H100
    GEMM then ran 11 % slower than back to back (bench/RESULTS.md)."""
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            if flush is not None:
                flush.zero_()
            torch.cuda._sleep(spin)
            with record_function(_CALL):
                fn()
        torch.cuda.synchronize()
    # Each range also appears on the GPU timeline (a user annotation spanning its kernels): a call's
    # time is the sum of the kernels that start inside its span, so gaps between them do not count.
    gpu = sorted(
        (e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
        key=lambda e: e.time_range.start,
    )
    spans = [e.time_range for e in gpu if e.name == _CALL]
    kernels = [e.time_range for e in gpu if e.name != _CALL]
    samples, k = [], 0
    for span in spans:
        total = 0.0
        while k < len(kernels) and kernels[k].start < span.end:
            if kernels[k].start >= span.start - 0.5:  # µs; the span may be rounded past its kernel
                total += kernels[k].elapsed_us()
            k += 1
        samples.append(total)
    if len(spans) != n or not all(samples):
        raise ToolFailedError(f"the profiler saw {len(spans)} of {n} calls on the GPU timeline: cannot use timer=cupti")
    return samples


def _graph_samples(torch: Any, fn: Callable[[], object], n: int, per: int) -> list[float]:
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # capture must not run on the default stream
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(per):
            fn()
    g.replay()
    torch.cuda.synchronize()
    return [t / per for t in _timed(torch, max(5, n // per), lambda: None, g.replay)]


def bench_host(
    fn: Callable[[], object], *, label: str = "fn", warmup_ms: float = 20.0, min_time_ms: float = 100.0, seed: int = 0
) -> Measurement:
    """Time ``fn()`` on the host with the wall clock (``perf_counter``): for CPU kernels and for running
    ``kscope tune``'s factories without a GPU. Calls shorter than 20 µs are timed in batches (the clock's
    own cost would otherwise be part of every sample); the same warm-up by time and statistics as ``bench``."""
    t0 = time.perf_counter()
    warm: list[float] = []
    while len(warm) < 3 or time.perf_counter() - t0 < warmup_ms / 1e3:
        h = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - h)
    per_call = statistics.median(warm)
    batch = max(1, int(20e-6 / max(per_call, 1e-9)))
    n = max(5, min(MAX_CALLS, int(min_time_ms / 1e3 / max(per_call * batch, 1e-9))))
    samples = []
    for _ in range(n):
        h = time.perf_counter()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter() - h) / batch * 1e6)
    summary = summarize(samples)
    warnings = _noise(summary)
    return Measurement(
        label=label,
        device="cpu",
        mode="hot",
        graph=False,
        samples_us=samples,
        summary=summary,
        median_ci=bootstrap_median(samples, confidence=0.95, seed=seed),
        warmup_calls=len(warm),
        calls_per_sample=batch,
        timer="wall clock (host)",
        warnings=warnings,
    )


def _value(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _user_code(what: str, call: Callable[[], Any]) -> Any:
    """Run the user's code; whatever it raises becomes one error line (their traceback is theirs)."""
    try:
        return call()
    except Exception as exc:  # user code may raise anything
        raise InputError(f"{what} failed: {type(exc).__name__}: {exc}") from None


def load_object(spec: str, role: str = "NAME", what: str = "") -> Any:
    """The object ``FILE.py:NAME`` or ``MODULE:NAME`` names (the file is imported as a module). ``role``
    names NAME in the errors (``FACTORY``), ``what`` qualifies a missing one (``callable ``)."""
    where, _, name = spec.rpartition(":")
    if not where or not name:
        raise InputError(f"{spec!r}: expected FILE.py:{role} or MODULE:{role}")
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise InputError(f"{where}: no such file")
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if module_spec is None or module_spec.loader is None:
            raise InputError(f"{where}: not a Python module")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[path.stem] = module  # dataclasses and pickling look modules up by name
        _user_code(f"{where}: importing it", lambda: module_spec.loader.exec_module(module))  # type: ignore[union-attr]
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise InputError(f"{where}: cannot import ({exc})") from None
    if not hasattr(module, name):
        raise InputError(f"{spec}: {where} has no {what}{name!r}")
    return getattr(module, name)


def load_target(spec: str, args: Sequence[str] = ()) -> Callable[[], object]:
    """``FILE.py:FACTORY`` or ``MODULE:FACTORY`` called with ``NAME=VALUE`` args (numbers parsed);
    the factory does the setup (allocations, compilation) and returns the callable to time."""
    factory = load_object(spec, "FACTORY", "callable ")
    if not callable(factory):
        raise InputError(f"{spec}: {spec.rpartition(':')[2]!r} is not callable")
    kwargs = {}
    for a in args:
        key, sep, val = a.partition("=")
        if not sep:
            raise InputError(f"--arg {a}: expected NAME=VALUE")
        kwargs[key.strip()] = _value(val)
    fn = _user_code(f"{spec}: the factory", lambda: factory(**kwargs))
    if not callable(fn):
        raise InputError(f"{spec}: the factory must return a zero-argument callable, returned {type(fn).__name__}")
    return fn  # type: ignore[no-any-return]
