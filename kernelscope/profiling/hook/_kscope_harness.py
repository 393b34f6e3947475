"""kscope's harness marks: benchmarking and tuning code runs inside a PyTorch profiler annotation
``kscope::harness::<what>``, so the trace itself says which GPU work timed kernels rather than ran the
workload, exactly (``kernelscope.analyses.harness`` sets every kernel launched inside one aside; its rules
only guess, for traces recorded elsewhere).

``sitecustomize`` calls ``mark(module)`` right after each module of ``TARGETS`` has been imported, before
the workload can bind the names (``triton`` imports ``triton.testing`` itself, and ``torch.cuda`` re-exports
``make_graphed_callables`` after ``torch.cuda.graphs`` ran). What is marked, by the code that does it
(PyTorch 2.11, Triton 3.6):

- Triton's autotuner timing one config (``Autotuner._bench``); ``triton.testing.do_bench`` and
  ``do_bench_cudagraph`` called directly (a benchmark script, ``triton.testing.perf_report``);
- ``torch.utils.benchmark.Timer``'s measurements (``timeit``, ``repeat``, ``autorange``,
  ``blocked_autorange``, ``adaptive_autorange``), warm-up included;
- ``torch.cuda.make_graphed_callables`` (its warm-up iterations and the capture);
- Inductor's benchmarker (``torch._inductor.runtime.benchmarking``: max-autotune choosing between
  generated kernels), every benchmarking class of the module.

TunableOp tunes inside the C++ GEMM call and offers no Python entry: its bursts are found by the rules.
Like ``sitecustomize`` this imports nothing from kernelscope (the user's interpreter may not have it).
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

# an annotation around benchmarking: kernelscope.model.columns.HARNESS_MARK (this module cannot import it)
HARNESS_MARK = "kscope::harness::"

_TIMER = ("timeit", "repeat", "autorange", "blocked_autorange", "adaptive_autorange")
_INDUCTOR = ("benchmark", "benchmark_gpu", "benchmark_gpu_with_cuda_graph")

# module -> (attribute, what): ``Class.method``, a module function, or ``*.method`` for every class the module
# defines with that method (subclasses override it). Attributes another version lacks are skipped.
TARGETS: dict[str, tuple[tuple[str, str], ...]] = {
    "triton.runtime.autotuner": (("Autotuner._bench", "triton.autotune"),),
    "triton.testing": (
        ("do_bench", "triton.testing.do_bench"),
        ("do_bench_cudagraph", "triton.testing.do_bench_cudagraph"),
    ),
    "torch.utils.benchmark.utils.timer": tuple((f"Timer.{m}", "torch.utils.benchmark") for m in _TIMER),
    "torch.cuda.graphs": (("make_graphed_callables", "torch.cuda.make_graphed_callables"),),
    "torch._inductor.runtime.benchmarking": tuple((f"*.{m}", "torch._inductor.benchmark") for m in _INDUCTOR),
}


def mark(module: ModuleType) -> None:
    """Wrap ``module``'s benchmarking callables (``TARGETS[module.__name__]``) in their annotation; a
    failure leaves the module as it was, with one stderr line (the workload must run regardless)."""
    try:
        for attribute, what in TARGETS.get(module.__name__, ()):
            owner_name, _, name = attribute.rpartition(".")
            for owner in _owners(module, owner_name, name):
                fn = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
                if inspect.isfunction(fn) and not hasattr(fn, "_kscope_marked"):
                    setattr(owner, name, marked(fn, HARNESS_MARK + what))
    except Exception as exc:
        print(f"[kscope] harness marks for {module.__name__} disabled: {type(exc).__name__}: {exc}", file=sys.stderr)


def _owners(module: ModuleType, owner_name: str, name: str) -> list[Any]:
    """Where ``name`` is defined: the module itself, its class ``owner_name``, or (``*``) each class defined
    in the module whose own namespace has ``name``."""
    if not owner_name:
        return [module] if hasattr(module, name) else []
    if owner_name == "*":
        classes = [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__]
        return [c for c in classes if name in c.__dict__]
    owner = getattr(module, owner_name, None)
    return [owner] if isinstance(owner, type) and name in owner.__dict__ else []


def marked(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
    """``fn`` inside a PyTorch profiler annotation ``label`` when torch is loaded (a no-op when no profiler
    records; a Triton-only workload never imports torch for it)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        torch = sys.modules.get("torch")
        if torch is None:
            return fn(*args, **kwargs)
        with torch.profiler.record_function(label):
            return fn(*args, **kwargs)

    wrapper._kscope_marked = True  # type: ignore[attr-defined]  # marked once, however often imported
    return wrapper
