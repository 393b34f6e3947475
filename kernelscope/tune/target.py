"""What a worker tunes: a user's factory (``FILE.py:FACTORY``), built per candidate, and its reference.

``FACTORY(config, shape)`` does the set-up (allocation, compilation) and returns the zero-argument callable
to time; what that callable returns is compared with ``REFERENCE(shape)`` when one is given. Outputs are
compared with ``atol``/``rtol`` (tensors and arrays, elementwise; a NaN anywhere is a mismatch, which is
why a factory should pre-fill its outputs with NaN) and everything else with ``==``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

from kernelscope.errors import InputError
from kernelscope.model.tune import Params, key
from kernelscope.timing import load_object
from kernelscope.tune.protocol import Setup


class Target(Protocol):
    def build(self, config: Params, shape: Params) -> Callable[[], object]: ...

    def expected(self, shape: Params) -> object: ...  # NO_REFERENCE when there is none

    def resources(self, fn: Callable[[], object]) -> tuple[int | None, int | None]: ...  # registers, shared bytes


NO_REFERENCE = object()


class Checked:
    """What every target shares: ``REFERENCE(shape)`` computed once per shape (every config of a shape is
    checked against the same answer), and the resources a build attached to its callable."""

    def __init__(self, setup: Setup) -> None:
        self.reference = callable_object(setup.reference, "FUNC(shape)") if setup.reference else None
        self._expected: dict[str, object] = {}

    def expected(self, shape: Params) -> object:
        if self.reference is None:
            return NO_REFERENCE
        k = key(shape)
        if k not in self._expected:
            self._expected[k] = self.reference(dict(shape))
        return self._expected[k]

    def resources(self, fn: Callable[[], object]) -> tuple[int | None, int | None]:
        return getattr(fn, "registers", None), getattr(fn, "shared_bytes", None)


class FactoryTarget(Checked):
    def __init__(self, setup: Setup) -> None:
        self.factory = callable_object(setup.spec, "FACTORY(config, shape)")
        super().__init__(setup)

    def build(self, config: Params, shape: Params) -> Callable[[], object]:
        fn = self.factory(dict(config), dict(shape))
        if not callable(fn):
            raise TypeError(f"the factory returned {type(fn).__name__}, expected a zero-argument callable")
        return fn  # type: ignore[no-any-return]


def callable_object(spec: str, what: str) -> Callable[..., Any]:
    obj = load_object(spec)
    if not callable(obj):
        raise InputError(f"{spec}: expected a callable {what}, found {type(obj).__name__}")
    return obj  # type: ignore[no-any-return]


def load(setup: Setup) -> Target:
    if setup.kind == "triton":
        from kernelscope.tune.triton_target import TritonTarget

        return TritonTarget(setup)
    return FactoryTarget(setup)


def mismatch(got: object, want: object, atol: float, rtol: float, where: str = "output") -> str | None:
    """Why ``got`` is not ``want`` (None: they agree). Tensors (torch, numpy) elementwise within tolerance,
    sequences and dicts item by item, anything else with ``==``."""
    if _is_array(got) or _is_array(want):
        return _array_mismatch(got, want, atol, rtol, where)
    if isinstance(want, (list, tuple, dict)) and isinstance(got, type(want)):
        return _items_mismatch(got, want, atol, rtol, where)
    if isinstance(want, float) and isinstance(got, (int, float)):
        ok = math.isclose(got, want, rel_tol=rtol, abs_tol=atol)
        return None if ok else f"{where}: {got!r}, expected {want!r}"
    return None if got == want else f"{where}: {_short(got)}, expected {_short(want)}"


def _items_mismatch(got: Any, want: Any, atol: float, rtol: float, where: str) -> str | None:
    if isinstance(want, dict):
        if got.keys() != want.keys():
            return f"{where}: keys {sorted(map(str, got))}, expected {sorted(map(str, want))}"
        pairs = [(f"{where}[{k!r}]", got[k], want[k]) for k in want]
    else:
        if len(got) != len(want):
            return f"{where}: {len(got)} items, expected {len(want)}"
        pairs = [(f"{where}[{i}]", g, w) for i, (g, w) in enumerate(zip(got, want, strict=True))]
    return _first(mismatch(g, w, atol, rtol, at) for at, g, w in pairs)


def _first(reasons: Any) -> str | None:
    return next((r for r in reasons if r is not None), None)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_array(x: object) -> bool:
    return type(x).__module__.split(".")[0] in ("torch", "numpy") and hasattr(x, "shape")


def _array_mismatch(got: Any, want: Any, atol: float, rtol: float, where: str) -> str | None:
    """Elementwise, in float64, where the data lives: two torch tensors are compared on their device (a
    copy of a 4096x4096 output to the host and a numpy pass took 0.2 s per candidate on an H100 host)."""
    if _torch(got) and _torch(want):
        import torch

        xp: Any = torch
        g = got.detach().double()
        w = want.detach().to(g.device).double()
    else:
        import numpy

        xp = numpy
        g, w = (_numpy(x).astype(numpy.float64) for x in (got, want))
    if tuple(g.shape) != tuple(w.shape):
        return f"{where}: shape {tuple(g.shape)}, expected {tuple(w.shape)}"
    size = math.prod(g.shape)
    if size == 0:
        return None
    nan_g, nan_w = xp.isnan(g), xp.isnan(w)
    if bool(nan_g.any()) and not bool(nan_w.any()):
        return f"{where}: {int(nan_g.sum())} of {size} values are NaN (never written?)"
    close = xp.isclose(g, w, atol=atol, rtol=rtol, equal_nan=True)
    if bool(close.all()):
        return None
    err = float(xp.where(nan_g | nan_w, 0.0, xp.abs(g - w)).max())
    bad = int((~close).sum())
    return f"{where}: {bad} of {size} values differ beyond atol={atol:g}/rtol={rtol:g} (max abs error {err:.4g})"


def _torch(x: object) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _numpy(x: Any) -> Any:
    import numpy as np

    if _torch(x):
        x = x.detach()
        if x.dtype.is_floating_point:  # bf16/fp8 have no numpy dtype
            x = x.float()
        return x.cpu().numpy()
    return np.asarray(x)
