"""kscope's PyTorch-profiler injection, loaded by Python itself through ``PYTHONPATH``.

``kscope profile`` puts this folder first on ``PYTHONPATH``; Python imports ``sitecustomize`` at start-up.
Nothing happens until the workload imports ``torch``: a meta-path finder wraps torch's loader and, once
torch is loaded, starts ``torch.profiler.profile`` (CPU + GPU activities, shapes recorded). Steps come from
every optimizer step (a global ``torch.optim`` step post-hook, the default) or from wrapping one
callable named by ``KSCOPE_STEP_FN`` (``pkg.module:Class.method``): after each step the profiler
advances, so the ``wait/warmup/active`` schedule selects a step window and Kineto records
``ProfilerStep#N`` annotations. With ``KSCOPE_STEP_FN=none`` the whole run is traced. The trace is
written when the window closes or at exit, one file per process: ``$KSCOPE_TRACE_DIR/trace_rank<R>_pid<P>.json.gz``.

When the workload imports ``triton``, ``_kscope_launches`` (beside this file) records every Triton kernel
launch, which the trace cannot give with its arguments, into ``launches_rank<R>_pid<P>.jsonl`` there;
``KSCOPE_LAUNCHES=0`` turns it off, ``KSCOPE_LAUNCHES=N`` records at most N launches (default 1,000,000).
It hooks ``triton``'s own import rather than torch's start: the workload's kernels are created when its
modules import triton, perhaps before torch, and a Triton-only workload never starts the profiler.

Benchmarking and tuning code (Triton's autotuner and ``do_bench``, ``torch.utils.benchmark``, Inductor's
benchmarker...) is wrapped in ``kscope::harness::`` annotations by ``_kscope_harness`` (beside this file) as
each of its modules is imported, so the trace says which kernels were the harness.

Kept free of kernelscope imports: it runs inside the user's interpreter, which may not have kernelscope.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

_ENV = os.environ


def _out_path(prefix: str = "trace", ext: str = "json.gz") -> str:
    rank = _ENV.get("RANK", _ENV.get("LOCAL_RANK", "0"))
    return os.path.join(_ENV["KSCOPE_TRACE_DIR"], f"{prefix}_rank{rank}_pid{os.getpid()}.{ext}")


def _resolve(dotted: str) -> tuple[Any, str]:
    """Split ``pkg.mod.Class.method`` (or ``pkg.mod:Class.method``) into (owner object, attribute)."""
    mod_name, _, attr_path = dotted.partition(":")
    if not attr_path:  # dotted form: import the longest importable prefix
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            try:
                importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            mod_name, attr_path = ".".join(parts[:cut]), ".".join(parts[cut:])
            break
    owner: Any = importlib.import_module(mod_name)
    *path, leaf = attr_path.split(".")
    for p in path:
        owner = getattr(owner, p)
    return owner, leaf


# helper processes a workload starts that import torch but run none of its GPU work: no trace of their own
# (an empty trace_rank0_pid<P> beside the workload's would make the folder look like two runs)
_HELPERS = ("torch/_inductor/compile_worker/",)  # Inductor's compile pool (SubprocPool runs its __main__.py)


def _start(torch: ModuleType) -> None:
    main = (sys.argv[0] if sys.argv else "").replace(os.sep, "/")
    if any(h in main for h in _HELPERS):
        return
    import torch.profiler as tp

    done = {"written": False}
    steps = [0]

    def export(prof: Any) -> None:
        if not done["written"]:
            done["written"] = True
            prof.export_chrome_trace(_out_path())
            print(f"[kscope] trace written: {_out_path()}", file=sys.stderr)
            if ledger := sys.modules.get("_kscope_launches"):  # the launches up to the trace, on disk with it
                ledger.flush()

    acts = [tp.ProfilerActivity.CPU]
    if torch.cuda.is_available():  # ROCm builds report HIP devices through the cuda namespace as well
        acts.append(tp.ProfilerActivity.CUDA)
    step_fn = _ENV.get("KSCOPE_STEP_FN", "optimizer")
    target: tuple[Any, str] | None = None
    if step_fn not in ("optimizer", "none"):
        try:  # resolved before anything starts: a bad name must not break the user's `import torch`
            target = _resolve(step_fn)
            getattr(*target)
        except (ImportError, AttributeError, ValueError) as exc:
            print(f"[kscope] cannot resolve KSCOPE_STEP_FN={step_fn!r} ({exc}); tracing the whole run", file=sys.stderr)
            step_fn = "none"
    schedule = None
    wait = int(_ENV.get("KSCOPE_WAIT", "5"))
    if step_fn != "none":
        schedule = tp.schedule(
            wait=wait,
            warmup=int(_ENV.get("KSCOPE_WARMUP", "2")),
            active=int(_ENV.get("KSCOPE_ACTIVE", "5")),
            repeat=1,
        )
    prof = tp.profile(
        activities=acts,
        schedule=schedule,
        record_shapes=_ENV.get("KSCOPE_RECORD_SHAPES", "1") == "1",
        on_trace_ready=export,
    )
    os.makedirs(_ENV["KSCOPE_TRACE_DIR"], exist_ok=True)
    prof.start()

    def _step() -> None:
        steps[0] += 1
        prof.step()

    if step_fn == "optimizer":  # every optimizer subclass overrides step(); the global hook sees them all
        from torch.optim.optimizer import register_optimizer_step_post_hook

        register_optimizer_step_post_hook(lambda *_: _step())
    elif target is not None:
        owner, leaf = target
        inner = getattr(owner, leaf)

        def stepped(*a: Any, **kw: Any) -> Any:
            out = inner(*a, **kw)
            _step()
            return out

        setattr(owner, leaf, stepped)

    def finish() -> None:
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        if schedule is not None and steps[0] <= wait:
            # the window never opened: Kineto never started, and exporting would raise
            print(
                f"[kscope] no trace: {steps[0]} step(s) ({step_fn}) seen, the window opens after wait={wait}; "
                "--step-fn none traces the whole run",
                file=sys.stderr,
            )
            return
        prof.stop()
        if not done["written"]:  # the window never closed (fewer steps than asked): keep what was traced
            export(prof)

    atexit.register(finish)


def _record_launches(triton: ModuleType) -> None:
    try:  # a bad KSCOPE_LAUNCHES must not break the user's `import triton`
        import _kscope_launches as ledger  # type: ignore[import-not-found]  # beside this file at run time

        limit = int(_ENV.get("KSCOPE_LAUNCHES", "1000000"))
    except (ImportError, ValueError) as exc:
        print(f"[kscope] launch ledger disabled: {exc}", file=sys.stderr)
        return
    ledger.install(triton, lambda: _out_path("launches", "jsonl"), limit)
    atexit.register(ledger.flush)


def _mark_harness() -> None:
    try:  # marks are an aid: without them the workload runs as it would
        import _kscope_harness as harness  # type: ignore[import-not-found]  # beside this file at run time
    except ImportError as exc:
        print(f"[kscope] harness marks disabled: {exc}", file=sys.stderr)
        return
    for name in harness.TARGETS:
        sys.meta_path.insert(0, _AfterImport(name, harness.mark))


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then(module)`` right after the module ``name`` (top-level or dotted) has finished importing,
    then steps aside."""

    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            original(module)
            self.then(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if _ENV.get("KSCOPE_TRACE_DIR"):
    _mark_harness()
    sys.meta_path.insert(0, _AfterImport("torch", _start))
    if _ENV.get("KSCOPE_LAUNCHES") != "0":
        sys.meta_path.insert(0, _AfterImport("triton", _record_launches))
