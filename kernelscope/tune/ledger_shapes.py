"""The shapes a workload really launched a Triton kernel with, from ``kscope profile``'s launch ledger: what
``kscope tune FILE.py:KERNEL --from-trace TRACE`` tunes on.

A shape is a flat ``Params`` map built from one launch's arguments, in the kernel's parameter order:

- with ``keys`` (the autotuner's ``key=[...]`` names): the value of each argument named there (a constexpr
  too, e.g. ``HEAD_DIM``), plus the element type of every tensor argument, ``NAME.dtype``, because Triton's
  autotuner keys its own cache on those dtypes as well; a tensor named in ``keys`` adds ``NAME.shape``;
- without ``keys``: every runtime scalar argument and every tensor's ``NAME.shape`` and ``NAME.dtype``.
  Constexprs are left out: block sizes are the config being tuned, not the shape.

A tensor's sizes are one readable value, ``"4096x1024"`` (``"()"`` for a 0-d tensor), as ``--shape`` and
the tables print it; ``NAME.strides`` (same form) is added where the tensor is not row-major contiguous,
since a transposed operand is a different tuning problem. Arguments passed as None are left out.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from kernelscope.analyses.ncu import selector
from kernelscope.errors import InputError
from kernelscope.model.launches import ConstexprArg, LaunchedShape, ScalarArg, TensorArg, TritonLaunch
from kernelscope.model.tune import Params, key
from kernelscope.readers import launch_ledger


def shapes_from_trace(path: Path, *, kernel: str | None = None, keys: list[str] | None = None) -> list[LaunchedShape]:
    """The distinct shapes of one kernel's real launches (autotuner timing launches left out), most
    launched first (ties in the order first launched).

    Args:
        path: a launch ledger, a ``kscope profile --out`` folder, or a trace with its ledger beside it.
        kernel: regular expression searched in kernel names; it must pick out one kernel (None: the only
            kernel launched).
        keys: argument names that make a shape (see the module's docstring); None: every argument.

    Returns a record per shape rather than bare ``Params``: the shape stays exactly what the tuner passes
    to the target (its canonical JSON is the store's identity), while its launch count, grids and the
    autotuner's chosen config (the incumbent) ride beside it.
    """
    launches = [launch for launch in launch_ledger.read(path) if not launch.autotune]
    name = _one_kernel(path, launches, kernel)
    mine = [launch for launch in launches if launch.kernel == name]
    if keys is not None:
        params = [a.name for a in mine[0].args]
        if unknown := [k for k in keys if k not in params]:
            raise InputError(f"keys {unknown} are not arguments of {name}; its arguments: {', '.join(params)}")
    found: dict[str, LaunchedShape] = {}
    chosen: dict[str, Counter[str]] = {}
    configs: dict[str, Params] = {}
    for launch in mine:
        shape = _shape(launch, keys)
        k = key(shape)
        s = found.get(k)
        if s is None:
            s = found[k] = LaunchedShape(kernel=name, shape=shape, launches=0, grids=[])
        s.launches += 1
        if launch.grid not in s.grids:
            s.grids.append(launch.grid)
        if launch.config is not None:
            c = key(launch.config)
            configs[c] = launch.config
            chosen.setdefault(k, Counter())[c] += 1
    for k, counts in chosen.items():
        found[k].config = configs[counts.most_common(1)[0][0]]
    return sorted(found.values(), key=lambda s: -s.launches)


def _one_kernel(path: Path, launches: list[TritonLaunch], kernel: str | None) -> str:
    counts = Counter(launch.kernel for launch in launches)
    if not counts:
        raise InputError(f"{path}: the launch ledger holds no Triton kernel launch (other than autotuner timing)")
    match = selector(kernel)
    names = sorted(n for n in counts if match(n, None))
    if len(names) == 1:
        return names[0]
    launched = ", ".join(f"{n} ({c})" for n, c in counts.most_common())
    if not names:
        raise InputError(f"--kernel {kernel!r} matches none of the Triton kernels launched: {launched}")
    raise InputError(f"{len(names)} Triton kernels launched ({launched}); choose one with --kernel REGEX")


def _shape(launch: TritonLaunch, keys: list[str] | None) -> Params:
    shape: Params = {}
    for a in launch.args:
        named = keys is None or a.name in keys
        if isinstance(a, TensorArg):
            if named:
                shape[f"{a.name}.shape"] = _sizes(a.shape)
                if not _row_major(a.shape, a.strides):
                    shape[f"{a.name}.strides"] = _sizes(a.strides)
            shape[f"{a.name}.dtype"] = a.dtype
        elif (
            isinstance(a, ScalarArg | ConstexprArg)
            and a.value is not None
            and (a.name in keys if keys is not None else isinstance(a, ScalarArg))
        ):
            shape[a.name] = a.value
    return shape


def _sizes(dims: list[int]) -> str:
    return "x".join(map(str, dims)) or "()"


def _row_major(shape: list[int], strides: list[int]) -> bool:
    """Contiguous in C order; dimensions of size 1 may have any stride (torch gives them several)."""
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides), strict=False):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True
