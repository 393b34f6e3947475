"""Triton launch ledger records: what one Triton kernel launch ran on, and the shapes a workload launched.

``kscope profile`` (the torch hook's ``_kscope_launches``) writes one ``TritonLaunch`` per JSON line into
``launches_rank<R>_pid<P>.jsonl`` beside the trace: the Kineto trace names a Triton kernel but not its
arguments, which ``kscope tune --from-trace`` needs. ``t_ns`` is ``time.perf_counter_ns()`` of the
launching process (CLOCK_MONOTONIC on Linux, the clock of the PyTorch profiler's ``ts`` in µs), taken
just before the launch; ``tid`` is the OS thread id, as the trace's CPU events give it.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from kernelscope.model.tune import Params

# a ledger line out of these ranges is damaged, not a launch (the reader refuses it with its line number)
Count = Annotated[int, msgspec.Meta(ge=0)]
Positive = Annotated[int, msgspec.Meta(ge=1)]

Value = int | float | str | bool | None


class TensorArg(msgspec.Struct, frozen=True, tag="tensor", tag_field="kind"):
    """A tensor argument: its element type (``float16``), sizes and strides in elements, never its data.
    A TMA ``TensorDescriptor`` is one too, with its ``block_shape``."""

    name: str
    dtype: str
    shape: list[int]
    strides: list[int]
    block_shape: list[int] | None = None


class ScalarArg(msgspec.Struct, frozen=True, tag="scalar", tag_field="kind"):
    """A runtime scalar (an int, a float, or None for an absent optional pointer); non-finite floats as text."""

    name: str
    value: Value


class ConstexprArg(msgspec.Struct, frozen=True, tag="constexpr", tag_field="kind"):
    """A ``tl.constexpr`` parameter: compiled in, like a block size; objects (a ``tl.dtype``) as their text."""

    name: str
    value: Value


class OtherArg(msgspec.Struct, frozen=True, tag="other", tag_field="kind"):
    """An argument of another kind (a tuple, ...): only its type name."""

    name: str
    type: str


Arg = TensorArg | ScalarArg | ConstexprArg | OtherArg


class TritonLaunch(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One launch. ``num_warps``/``num_stages``/``num_ctas``/``shared`` (bytes of shared memory) are the
    launched compiled kernel's; ``autotune`` marks a launch made while ``@triton.autotune`` timed its
    configs, and ``config`` is the config the autotuner chose, on the launches it then made for real.
    ``module`` is the Python module that defines the kernel (which copy ran, where several projects carry one);
    ``rank``/``pid`` come from the ledger file's name."""

    kernel: str
    t_ns: Count
    grid: list[Count]
    num_warps: Positive
    num_stages: Count
    args: list[Arg]
    num_ctas: Positive = 1
    shared: Count = 0
    tid: int = 0
    autotune: bool = False
    config: Params | None = None
    module: str | None = None
    rank: int | None = None
    pid: int | None = None


class LaunchedShape(msgspec.Struct, kw_only=True):
    """A distinct shape one kernel was launched with (autotuner timing launches left out): ``launches``
    times, with these ``grids`` (first seen first), and the ``config`` its autotuner chose most often for it
    (None for a kernel without ``@triton.autotune``) — the incumbent a sweep compares against."""

    kernel: str
    shape: Params
    launches: int
    grids: list[list[int]]
    config: Params | None = None
