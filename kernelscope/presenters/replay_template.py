# The body of every script `kscope replay` writes (kernelscope/presenters/replay.py): it keeps what
# follows the `from __future__` line, puts a docstring above it and the recorded call in place of the
# empty REPLAY. A real module so that ruff and mypy check it; kernelscope never imports it (it needs
# torch). It stays self-contained on purpose: the script must run where kernelscope is not installed.
from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import torch

REPLAY: dict[str, Any] = {}  # kscope replay writes the recorded call here

UNRECORDED = object()  # a value the trace does not hold: the schema's default (or None) is passed
_SCALARS = frozenset({"IntType", "SymIntType", "FloatType", "BoolType", "NumberType", "ComplexType"})


class ReplayError(Exception):
    """The recorded call cannot be made on this PyTorch: one line, exit 2."""


def contiguous(shape: list[int]) -> list[int]:
    strides: list[int] = []
    step = 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return strides[::-1]


def tensor(spec: dict[str, Any], device: str) -> Any:
    """The recorded shape, dtype and strides over a storage just large enough for them: unit-normal
    floats (in range for every dtype, and values change neither the kernel nor the time of dense ops),
    zeros for integers (valid as indices) and False for bools."""
    shape = spec["shape"]
    strides = spec["strides"] if spec["strides"] is not None else contiguous(shape)
    dtype = getattr(torch, spec["dtype"])
    where = device if spec["device"] == "cuda" else spec["device"]
    span = 1 + sum((d - 1) * s for d, s in zip(shape, strides, strict=True)) if all(shape) else 0
    if dtype.is_floating_point or dtype.is_complex:
        flat = torch.randn(span, device=where).to(dtype)  # through float32: float8 has no randn
    else:
        flat = torch.zeros(span, dtype=dtype, device=where)
    return flat.as_strided(shape, strides)


def number(v: Any) -> Any:
    return float(v) if isinstance(v, str) else v  # "inf", "-inf", "nan" are kept as text


def value(spec: dict[str, Any], device: str) -> Any:
    kind = spec["kind"]
    if kind == "tensor":
        return tensor(spec, device)
    if kind == "tensors":
        return [tensor(t, device) for t in spec["tensors"]]
    if kind == "scalar" and spec["value"] is not None:
        return number(spec["value"])
    if kind == "list" and spec["values"] is not None:
        return [number(v) for v in spec["values"]]
    return UNRECORDED


def fit(spec: dict[str, Any], arg: Any) -> int:
    """How well a recorded argument fits a schema argument: 3 its kind, 1 or 2 loosely, 0 not at all."""
    t = arg.type
    optional = t.kind() == "OptionalType"
    if optional:
        t = t.getElementType()
    kind: str = spec["kind"]
    k: str = t.kind()
    if kind == "scalar":
        return scalar_fit(spec["value"], k)
    if kind == "other":  # None, an undefined tensor, or a string, device or generator the profiler does not keep
        return 2 if optional or arg.has_default_value() else 1
    if kind == "tensor":
        return 3 * (k == "TensorType")
    if k != "ListType":
        return 0
    item = t.getElementType()
    return 3 * ("Tensor" in str(item) if kind == "tensors" else item.kind() in _SCALARS)


def scalar_fit(v: Any, k: str) -> int:
    if k not in _SCALARS:
        return 0
    if v is None or k == "NumberType":
        return 3
    if isinstance(v, bool):
        return 3 * (k == "BoolType")
    if isinstance(v, int):  # ScalarType, Layout and MemoryFormat are ints in schemas too
        return 3 if k in ("IntType", "SymIntType") else int(k == "FloatType")
    return 3 * (k == "FloatType")


def resolve(op: str, overload: str | None) -> tuple[Any, str]:
    """The overload of ``op`` whose schema fits the recorded arguments best (``overload`` if pinned)."""
    ns, _, name = op.partition("::")
    try:
        packet = getattr(getattr(torch.ops, ns), name)
    except (AttributeError, RuntimeError):
        raise ReplayError(f"this PyTorch ({torch.__version__}) has no operator {op}") from None
    best: tuple[int, bool, str] | None = None
    for ov in [overload] if overload else packet.overloads():
        args = getattr(packet, ov)._schema.arguments
        scores = [fit(s, a) for s, a in zip(REPLAY["args"], args, strict=False)]
        if len(args) == len(REPLAY["args"]) and all(scores):
            best = max(best or (0, False, ""), (sum(scores), ov == "default", ov))
    if best is None:
        raise ReplayError(f"no overload of {op} ({', '.join(packet.overloads())}) fits the recorded arguments")
    return getattr(packet, best[2]), best[2]


def bind(fn: Any, device: str) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword arguments for ``fn`` from the recorded ones (kwarg-only ones by name)."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for spec, arg in zip(REPLAY["args"], fn._schema.arguments, strict=True):
        v = value(spec, device)
        if v is UNRECORDED:
            if arg.has_default_value():
                v = arg.default_value
            elif arg.type.kind() in ("OptionalType", "TensorType"):
                v = None  # for a Tensor: undefined, as C++ callers (backward functions) pass it
            else:
                raise ReplayError(f"argument {arg.name} ({arg.type}) was not recorded: set it in REPLAY")
        if arg.kwarg_only:
            kwargs[arg.name] = v
        else:
            args.append(v)
    return args, kwargs


def shown(v: Any) -> str:
    """A value as kscope replay describes it: bfloat16[8,1024]@[1,8] (strides when not contiguous)."""
    if isinstance(v, torch.Tensor):
        text = f"{str(v.dtype).removeprefix('torch.')}[{','.join(map(str, v.shape))}]"
        if list(v.stride()) != contiguous(list(v.shape)):
            text += f"@[{','.join(map(str, v.stride()))}]"
        return text if v.device.type == "cuda" else f"{text}({v.device.type})"
    if isinstance(v, list):
        return "[" + ", ".join(shown(x) for x in v) + "]"
    return repr(v)


def gpu_times(call: Callable[[], Any], runs: int) -> list[float]:
    """Device-event times (µs) of ``runs`` calls, each on a cold L2 (kernelscope.bench's method, kept
    short). The flush writes twice the L2 before each start event. A spin kernel queued before the
    start event, sized from the host time one launch takes, keeps the GPU busy while the host queues the
    event and the op: without it a slow launcher is timed as kernel time."""
    cuda: Any = torch.cuda  # typed or not, depending on the torch installed: either way for the checkers
    props = cuda.get_device_properties(cuda.current_device())
    l2 = int(getattr(props, "L2_cache_size", 0)) or 256 << 20
    flush = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")
    host: list[float] = []
    t0 = time.perf_counter()
    while len(host) < 5 or time.perf_counter() - t0 < 0.05:  # warm-up: libraries, autotuning, clocks
        flush.zero_()
        h = time.perf_counter()
        call()
        host.append(time.perf_counter() - h)
        cuda.synchronize()
    hz = float(getattr(props, "clock_rate", 0) or 2_000_000) * 1e3  # kHz; unknown: 2 GHz (spins longer)
    spin = int((2 * statistics.median(host) + 20e-6) * hz)
    starts = [cuda.Event(enable_timing=True) for _ in range(runs)]
    ends = [cuda.Event(enable_timing=True) for _ in range(runs)]
    for s, e in zip(starts, ends, strict=True):
        flush.zero_()
        cuda._sleep(spin)
        s.record()
        call()
        e.record()
    cuda.synchronize()
    return [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends, strict=True)]


def host_times(call: Callable[[], Any], runs: int) -> list[float]:
    """Wall-clock times (µs) on a device without events (``--device cpu``: to try the call anywhere)."""
    call()
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        call()
        out.append((time.perf_counter() - t) * 1e6)
    return out


def launched(call: Callable[[], Any]) -> list[tuple[str, float]]:
    """The kernels one call launches (name, µs), read from the profiler's own trace as kscope read the
    recorded one (ROCm builds profile through the same CUDA activity)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    kernels = sorted((e for e in events if e.get("cat") in ("kernel", "Kernel")), key=lambda e: e["ts"])
    return [(e["name"], float(e.get("dur", 0.0))) for e in kernels]


def check(call: Callable[[], Any]) -> bool:
    """Whether one call launches the kernels the trace recorded, in order; prints both lists."""
    for _ in range(3):  # past first-call setup (cuBLAS workspaces, autotuning)
        call()
    torch.cuda.synchronize()
    got = launched(call)
    want = list(zip(REPLAY["kernels"], (ns / 1e3 for ns in REPLAY["kernel_each_ns"]), strict=True))
    same = [name for name, _ in got] == [name for name, _ in want]
    print(f"kernels: {'same as the trace' if same else 'DIFFERENT from the trace'}")
    for side, rows in (("trace", want), ("replay", got)):
        for name, us in rows or [("(none)", 0.0)]:
            print(f"  {side:6} {us:10.1f} µs  {repr(name)[1:-1]}")  # a name's control characters, escaped
    print(f"KSCOPE_METRIC kernel_match={int(same)}")
    return same


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="launch once under torch.profiler: same kernels?")
    parser.add_argument("--runs", type=int, default=100, help="timed calls (default 100)")
    parser.add_argument("--device", default="cuda", help="where the inputs live (cpu: try the call without a GPU)")
    parser.add_argument("--impl", metavar="MODULE:FUNCTION", help="time FUNCTION(*args, **kwargs) instead")
    opts = parser.parse_args()
    device = torch.device(opts.device)
    gpu = device.type == "cuda"  # ROCm builds call their GPUs cuda too
    if opts.check and not gpu:
        parser.error("--check compares GPU kernels: it needs a cuda device")
    if opts.runs < 2:
        parser.error("--runs: at least 2")
    if gpu and device.index is not None:
        torch.cuda.set_device(device)  # the flush buffer and the events follow the current device
    torch.manual_seed(0)
    try:
        op, overload = resolve(REPLAY["op"], REPLAY["overload"])
        args, kwargs = bind(op, opts.device)
    except ReplayError as exc:
        print(f"replay: error: {exc}", file=sys.stderr)
        return 2
    fn, name = op, f"{REPLAY['op']}.{overload}"
    if opts.impl:
        sys.path.insert(0, os.getcwd())  # the working tree under evaluation
        module, _, attr = opts.impl.partition(":")
        fn, name = getattr(importlib.import_module(module), attr), opts.impl
    shown_args = [shown(a) for a in args] + [f"{k}={shown(v)}" for k, v in kwargs.items()]
    print(f"{name}({', '.join(shown_args)})")

    def call() -> Any:
        return fn(*args, **kwargs)

    if opts.check:
        return 0 if check(call) else 1
    times = gpu_times(call, opts.runs) if gpu else host_times(call, opts.runs)
    q1, _, q3 = statistics.quantiles(times, n=4)
    median = statistics.median(times)
    timer = "device events, L2 flushed" if gpu else "host clock"
    print(f"median {median:.2f} µs over {len(times)} calls (IQR {q3 - q1:.2f} µs; {timer})")
    print(f"trace: {REPLAY['kernel_ns'] / 1e3:.2f} µs per call (kernel durations on {REPLAY['device'] or 'its GPU'})")
    print(f"KSCOPE_METRIC time_us={median:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
