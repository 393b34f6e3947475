"""Tuning a ``@triton.autotune`` kernel as it stands: its ``triton.Config`` list is the space, and each
config is launched directly through the kernel's JIT function, with arguments from the user's ``--launch``.

``FUNC(shape)`` (``--launch FILE.py:FUNC``) allocates the inputs and returns ``{"grid": ..., "args": [...]}``
plus optional ``"kwargs"`` and ``"output"``: ``grid`` is what Triton takes (a tuple or a callable of the
meta-parameters); ``output`` is the tensor the kernel writes, which the built callable returns so the worker
can compare it with ``--reference``.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernelscope.errors import InputError, MissingToolError
from kernelscope.model.tune import Params, Space, key, label
from kernelscope.timing import load_object
from kernelscope.tune.protocol import Setup
from kernelscope.tune.target import Checked, callable_object

_ALWAYS = ("num_warps", "num_stages")  # part of every config, default or not: the knobs every space varies


def require_triton() -> None:
    try:
        import triton  # noqa: F401
    except ImportError:
        raise MissingToolError("triton", "pip install triton (kscope tune imports Triton kernels with it)") from None


def load_autotuner(spec: str) -> Any:
    """The ``triton.runtime.autotuner.Autotuner`` that ``FILE.py:KERNEL`` (or ``MODULE:KERNEL``) names."""
    require_triton()
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    obj = load_object(spec)
    if isinstance(obj, (JITFunction, Heuristics)):
        raise InputError(f"{spec}: a plain @triton.jit kernel has no autotune configs; give a space with --space")
    if not isinstance(obj, Autotuner):
        raise InputError(f"{spec}: expected a @triton.autotune kernel, found {type(obj).__name__}")
    if not obj.configs:
        raise InputError(f"{spec}: the @triton.autotune kernel has no configs")
    return obj


def config_params(config: Any) -> Params:
    """A ``triton.Config`` as kscope's config: its kwargs (the constexprs), ``num_warps``, ``num_stages``, and
    each other launch option (``num_ctas``, ``maxnreg``...) that differs from ``triton.Config``'s default."""
    defaults = {n: p.default for n, p in inspect.signature(type(config).__init__).parameters.items()}
    out: Params = {}
    for name, value in config.all_kwargs().items():
        if name in config.kwargs or name in _ALWAYS or value != defaults.get(name):
            if not isinstance(value, (bool, int, float, str)):
                raise InputError(f"triton.Config({config}): {name}={value!r} is not a number, string or bool")
            out[name] = value
    return out


def autotune_space(spec: str) -> Space:
    """The autotuner's configs as an explicit space, in the order the kernel lists them. Its
    ``prune_configs_by`` is not applied: every config is a candidate (kscope's screen does the pruning)."""
    return Space(configs=[config_params(c) for c in load_autotuner(spec).configs])


def kernel_key(spec: str) -> str:
    """Triton's own hash of the kernel's source and the JIT functions it calls (``JITFunction.cache_key``):
    part of the store's source hash, since the kernel may live in another file than the one named."""
    return str(load_autotuner(spec).fn.cache_key)


def autotune_keys(spec: str) -> list[str]:
    """The argument names in the autotuner's ``key``: the ones a shape is made of."""
    return [str(k) for k in load_autotuner(spec).keys]


@dataclass(frozen=True)
class _Call:
    """What ``FUNC(shape)`` returned, checked."""

    grid: Any
    args: list[Any]
    kwargs: dict[str, Any]
    output: Any

    @classmethod
    def parse(cls, got: object, where: str) -> _Call:
        expected = "a dict with 'grid' and 'args' (optional 'kwargs', 'output')"
        if not isinstance(got, dict) or "grid" not in got or "args" not in got:
            raise InputError(f"{where}: FUNC(shape) returned {type(got).__name__}, expected {expected}")
        args, kwargs = got["args"], got.get("kwargs", {})
        if not isinstance(args, (list, tuple)) or not isinstance(kwargs, dict):
            raise InputError(f"{where}: 'args' must be a list and 'kwargs' a dict")
        unknown = sorted(set(got) - {"grid", "args", "kwargs", "output"})
        if unknown:
            raise InputError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}, expected {expected}")
        return cls(grid=got["grid"], args=list(args), kwargs=dict(kwargs), output=got.get("output"))


class Launch:
    """One config of the kernel, launched through the autotuner's JIT function rather than the Autotuner, so
    several configs can be alive at once (stage 2 interleaves them).

    Each call does what Triton's autotuner does around each call it benchmarks (``Autotuner._bench``): the
    Config's ``pre_hook``, the autotuner's ``pre_hook`` (``reset_to_zero`` zeroes those tensors,
    ``restore_value`` snapshots them), the launch, then the ``post_hook`` (``restore_value`` copies the
    snapshot back, also after an exception). Their cost is inside every config's time alike, as in Triton.
    Building launches once: that compiles (a compile error or a config too big for this GPU raises here)
    and gives the compiled kernel's ``registers`` (per thread) and ``shared_bytes``; then ``output`` is
    filled with NaN, so a config that does not write all of it fails the check.
    """

    def __init__(self, autotuner: Any, config: Any, call: _Call) -> None:
        self.autotuner, self.config, self.call = autotuner, config, call
        self.kwargs = {**call.kwargs, **config.all_kwargs()}
        self.nargs = {**dict(zip(autotuner.arg_names, call.args, strict=False)), **self.kwargs}
        self.kernel: Callable[..., Any] = autotuner.fn[call.grid]
        compiled = self._launch()
        self.registers: int | None = getattr(compiled, "n_regs", None)
        self.shared_bytes: int | None = getattr(getattr(compiled, "metadata", None), "shared", None)
        floating = getattr(call.output, "is_floating_point", None)
        if callable(floating) and floating():
            call.output.fill_(math.nan)

    def _launch(self) -> Any:
        if self.config.pre_hook is not None:
            self.config.pre_hook(self.nargs)
        self.autotuner.pre_hook(self.nargs)
        try:
            compiled = self.kernel(*self.call.args, **self.kwargs)
        except Exception as exc:
            self.autotuner.post_hook(self.nargs, exception=exc)
            raise
        self.autotuner.post_hook(self.nargs, exception=None)
        return compiled

    def __call__(self) -> object:
        self._launch()
        return self.call.output


class TritonTarget(Checked):
    """The ``triton`` kind of ``kscope tune``: ``setup.spec`` names the ``@triton.autotune`` kernel,
    ``setup.launch`` the ``FUNC(shape)`` that gives its grid and arguments."""

    def __init__(self, setup: Setup) -> None:
        self.autotuner = load_autotuner(setup.spec)
        if not setup.launch:
            raise InputError(
                f"{setup.spec}: a Triton kernel needs --launch FILE.py:FUNC, where FUNC(shape) allocates the "
                "inputs and returns {'grid': ..., 'args': [...], 'output': tensor}"
            )
        self.spec, self.where = setup.spec, setup.launch
        self.launch = callable_object(setup.launch, "FUNC(shape)")
        self.configs = {key(config_params(c)): c for c in self.autotuner.configs}
        super().__init__(setup)

    def find_config(self, config: Params) -> Any:
        """The ``triton.Config`` whose kscope form is ``config``."""
        found = self.configs.get(key(config))
        if found is None:
            raise InputError(f"{label(config)} is not one of the {len(self.configs)} configs of {self.spec}")
        return found

    def build(self, config: Params, shape: Params) -> Launch:
        found = self.find_config(config)
        call = _Call.parse(self.launch(dict(shape)), self.where)
        both = sorted(call.kwargs.keys() & found.all_kwargs().keys())
        if both:
            raise InputError(f"{self.where}: 'kwargs' sets {', '.join(both)}, which the autotune configs set")
        if self.reference is not None and call.output is None:
            raise InputError(f"{self.where}: --reference needs the tensor the kernel writes as 'output'")
        return Launch(self.autotuner, found, call)
