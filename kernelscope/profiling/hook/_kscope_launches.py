"""kscope's Triton launch ledger: one JSON line per Triton kernel launch, written beside the PyTorch trace.

``sitecustomize`` imports this module right after the workload has imported ``triton``, so it is in place
before the workload's own ``@triton.jit`` kernels are created. Like ``sitecustomize`` it imports nothing
from kernelscope (the user's interpreter may not have it); ``kernelscope.readers.launch_ledger`` reads
what it writes and ``kernelscope.model.launches`` describes the line.

How a launch is seen (Triton 3.6, ``compiler/compiler.py`` and ``runtime/jit.py``): the launcher hands a
``LazyDict`` to every ``triton.knobs.runtime.launch_enter_hook``; ``CompiledKernel.launch_metadata`` queues
``(fn.launch_metadata, (grid, compiled metadata, {argument name: value}))`` in it, but only for a
JITFunction whose ``launch_metadata`` is set. So every JITFunction gets a ``_Recorder`` there (answering
for the user's own function, if any, when a profiler such as proton evaluates the LazyDict), and the
enter hook reads the queued arguments without evaluating anything: a user's ``launch_metadata`` function
still runs only when something asks for it.

Launches inside ``Autotuner._bench`` (the autotuner timing its configs) are marked ``"autotune": true`` (the
trace's own mark around them is ``_kscope_harness``'s); launches from ``Autotuner.run`` itself carry the
config the autotuner chose for that key. Times are
``time.perf_counter_ns()`` (CLOCK_MONOTONIC on Linux), the clock of the PyTorch profiler's ``ts``.

Cheap (a few µs a launch: lines are buffered and appended to the file every ``_FLUSH_EVERY`` launches, at
exit and when the trace is written) and harmless: any exception disables the ledger with one stderr line.
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

_FLUSH_EVERY = 4096


class _Local(threading.local):
    """The Autotuner whose ``_bench`` / ``run`` is on this thread's stack (class defaults: a missing
    attribute of a ``threading.local`` costs an exception on every launch)."""

    bench: Any = None
    tuner: Any = None


_local = _Local()
_tensors: dict[tuple[Any, Any, Any], str] = {}  # (dtype, shape, strides) -> the line's text for them


class _State:
    def __init__(self) -> None:
        self.path: Callable[[], str] = lambda: ""
        self.limit = 0
        self.count = 0
        self.off = True  # not recording: not installed, full, or failed
        self.failed = False
        self.buffer: list[str] = []
        self.lock = threading.Lock()


_state = _State()
os.register_at_fork(after_in_child=_state.buffer.clear)  # the parent writes its own launches


class _Recorder:
    """A JITFunction's ``launch_metadata``: marks its launches for the ledger, knows which parameters are
    constexprs and which module defines the kernel (the copy that ran, where several projects carry one),
    and answers for the user's own ``launch_metadata`` when Triton evaluates it."""

    __slots__ = ("constexprs", "module", "user")

    def __init__(self, constexprs: frozenset[str], module: str, user: Callable[..., dict[str, Any]] | None) -> None:
        self.constexprs = constexprs
        self.module = f',"module":{json.dumps(module)}' if module else ""
        self.user = user

    def __call__(self, grid: Any, metadata: Any, args: dict[str, Any]) -> dict[str, Any]:
        return self.user(grid, metadata, args) if self.user is not None else {}


def install(triton: ModuleType, path: Callable[[], str], limit: int) -> None:
    """Record every launch of the JITFunctions created from now on into ``path()`` (called at each flush,
    so a forked child writes its own file), at most ``limit`` launches."""
    _state.path, _state.limit, _state.count, _state.off, _state.failed = path, limit, 0, False, False
    try:
        from triton.runtime import autotuner, jit

        hooks = triton.knobs.runtime.launch_enter_hook
        if not hasattr(hooks, "add"):  # a single callable before Triton's HookChain: other launch arguments too
            raise RuntimeError(f"Triton {triton.__version__} has no launch_enter_hook chain (3.6 has)")
        init = jit.JITFunction.__init__

        @functools.wraps(init)
        def recording_init(self: Any, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            try:
                constexprs = frozenset(p.name for p in self.params if p.is_constexpr)
                module = getattr(self.fn, "__module__", None) or ""
                self.launch_metadata = _Recorder(constexprs, module, self.launch_metadata)
            except Exception as exc:
                _disable(exc)

        jit.JITFunction.__init__ = recording_init
        tuner = autotuner.Autotuner
        tuner._bench = _scoped(tuner._bench, "bench")
        tuner.run = _scoped(tuner.run, "tuner")
        hooks.add(_on_launch)
    except Exception as exc:
        _disable(exc)


def _scoped(method: Callable[..., Any], role: str) -> Callable[..., Any]:
    """``method`` of an Autotuner, noting on this thread that the Autotuner is inside it (nesting-safe)."""

    @functools.wraps(method)
    def scoped(self: Any, *args: Any, **kwargs: Any) -> Any:
        outer = getattr(_local, role)
        setattr(_local, role, self)
        try:
            return method(self, *args, **kwargs)
        finally:
            setattr(_local, role, outer)

    return scoped


def _on_launch(lazy: Any) -> None:
    """Triton's launch-enter hook: one ledger line per launch of a recorded JITFunction."""
    if _state.off:
        return
    t_ns = time.perf_counter_ns()
    try:
        for func, queued in lazy.extras:
            if type(func) is _Recorder:
                _record(t_ns, func, *queued)
    except Exception as exc:
        _disable(exc)


def _record(t_ns: int, func: _Recorder, grid: Any, metadata: Any, args: dict[str, Any]) -> None:
    """Append the launch's line, written with f-strings and cached tensor texts rather than ``json``: on the
    (shared, slow) development machine the C encoder alone took 12 µs for a five-argument line, this whole
    function 8 µs. Kernel, argument and dtype names are identifiers, safe unquoted."""
    _state.count += 1
    if _state.count > _state.limit:
        _state.off = True
        print(f"[kscope] launch ledger full: {_state.limit} launches recorded (KSCOPE_LAUNCHES)", file=sys.stderr)
        return
    g = grid if len(grid) == 3 else (*grid, 1, 1)
    m = metadata
    constexprs, extra = func.constexprs, func.module
    if _local.bench is not None:
        extra += ',"autotune":true'
    elif _local.tuner is not None:
        extra += f',"config":{_config(_local.tuner.best_config)}'
    _state.buffer.append(
        f'{{"kernel":"{m.name}","t_ns":{t_ns},"tid":{threading.get_native_id()},"grid":[{g[0]},{g[1]},{g[2]}],'
        f'"num_warps":{m.num_warps},"num_stages":{m.num_stages},"num_ctas":{getattr(m, "num_ctas", 1)},'
        f'"shared":{m.shared},"args":[{",".join([_arg(n, v, n in constexprs) for n, v in args.items()])}]{extra}}}'
    )
    if len(_state.buffer) >= _FLUSH_EVERY:
        flush()


def _arg(name: str, value: Any, constexpr: bool) -> str:
    if constexpr:
        return f'{{"kind":"constexpr","name":"{name}","value":{_json(value)}}}'
    render = _renderers.get(type(value))
    if render is None:  # once per type: hasattr() on an int costs more than the whole line
        render = _renderers[type(value)] = (
            _tensor
            if hasattr(value, "data_ptr")  # how Triton itself tells a tensor
            else _descriptor
            if hasattr(value, "block_shape") and hasattr(value, "base")  # triton.tools.tensor_descriptor (TMA)
            else _scalar
            if value is None or isinstance(value, int | float)
            else _other
        )
    return render(name, value)


def _tensor(name: str, t: Any) -> str:
    """Formatted once per (dtype, shape, strides): a workload launches the same few again and again."""
    k = (t.dtype, t.shape, t.stride())
    body = _tensors.get(k)
    if body is None:
        if len(_tensors) >= _FLUSH_EVERY:
            _tensors.clear()
        body = _tensors[k] = f'"dtype":"{_dtype(k[0])}","shape":{list(k[1])},"strides":{list(k[2])}}}'
    return f'{{"kind":"tensor","name":"{name}",{body}'


def _descriptor(name: str, d: Any) -> str:
    return (
        f'{{"kind":"tensor","name":"{name}","dtype":"{_dtype(d.base.dtype)}","shape":{list(d.shape)},'
        f'"strides":{list(d.strides)},"block_shape":{list(d.block_shape)}}}'
    )


def _scalar(name: str, v: Any) -> str:
    return f'{{"kind":"scalar","name":"{name}","value":{_json(v)}}}'


def _other(name: str, v: Any) -> str:
    return f'{{"kind":"other","name":"{name}","type":{json.dumps(type(v).__name__)}}}'


_renderers: dict[type, Callable[[str, Any], str]] = {}


def _json(v: Any) -> str:
    """A value as JSON: numbers, booleans and null as they are; strings quoted; non-finite floats and objects
    (a ``tl.dtype``, a JITFunction passed as a constexpr) as their quoted text."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return int.__repr__(v)  # not repr(): an IntEnum, a numpy float64 print their class too
    if isinstance(v, float) and math.isfinite(v):
        return float.__repr__(v)
    return json.dumps(v if isinstance(v, str) else str(v))


_configs: dict[int, tuple[Any, str]] = {}  # id -> (the autotuner's Config, kept alive so the id stays its; JSON)


def _config(config: Any) -> str:
    """The autotuner's chosen ``Config`` as a JSON object of ``all_kwargs()`` (one per config, cached)."""
    hit = _configs.get(id(config))
    if hit is None or hit[0] is not config:
        body = ",".join(f"{json.dumps(k)}:{_json(v)}" for k, v in config.all_kwargs().items())
        hit = _configs[id(config)] = (config, f"{{{body}}}")
    return hit[1]


def _dtype(dtype: Any) -> str:
    return str(dtype).rpartition(".")[2]  # torch.float16 -> float16


def flush() -> None:
    """Append the buffered lines to the ledger file (called at exit and when the trace is written)."""
    with _state.lock:
        n = len(_state.buffer)
        if not n:
            return
        lines = _state.buffer[:n]
        del _state.buffer[:n]  # launches on other threads meanwhile stay for the next flush
    try:
        path = _state.path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    except Exception as exc:
        _disable(exc)


def _disable(exc: BaseException) -> None:
    if not _state.failed:
        print(f"[kscope] launch ledger disabled: {type(exc).__name__}: {exc}", file=sys.stderr)
    _state.off = _state.failed = True
    _state.buffer.clear()
