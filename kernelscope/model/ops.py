"""Operator calls: each CPU op of a Kineto trace recorded with shapes, joined to the GPU kernels it launched.

The gap analysis reads kernels only; the roofline needs to know what each kernel computed, which only
the op's shapes say (as AMD's TraceLens does); replay rebuilds the op's inputs from them. The profiler
records each non-tensor argument's value as text (``Concrete Inputs``); ``OpCall`` parses it here, once,
for every analysis.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from kernelscope.model.replay import Number

# kscope's short names (docs/identity.md) of the torch dtypes the roofs know (fp8: both formats share the
# matrix peak)
SHORT_DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "float32": "fp32",
    "float64": "fp64",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
    "float8_e4m3fnuz": "fp8",
    "float8_e5m2fnuz": "fp8",
    "int8": "int8",
    "uint8": "uint8",
    "int16": "int16",
    "uint16": "uint16",
    "int32": "int32",
    "uint32": "uint32",
    "int64": "int64",
    "uint64": "uint64",
    "bool": "bool",
}
FLOAT_DTYPES = frozenset({"bf16", "fp16", "fp32", "fp64", "fp8"})

# The profiler's dtype names (``Input type``: caffe2 TypeMeta names) -> torch dtype names.
TORCH_DTYPES = {
    "c10::BFloat16": "bfloat16",
    "c10::Half": "float16",
    "float": "float32",
    "double": "float64",
    "c10::Float8_e4m3fn": "float8_e4m3fn",
    "c10::Float8_e5m2": "float8_e5m2",
    "c10::Float8_e4m3fnuz": "float8_e4m3fnuz",
    "c10::Float8_e5m2fnuz": "float8_e5m2fnuz",
    "c10::Float8_e8m0fnu": "float8_e8m0fnu",
    "c10::complex<c10::Half>": "complex32",
    "c10::complex<float>": "complex64",
    "c10::complex<double>": "complex128",
    "signed char": "int8",
    "unsigned char": "uint8",
    "short int": "int16",
    "int": "int32",
    "long int": "int64",
    "long long int": "int64",  # int64_t's name where long is 32-bit (Windows)
    "unsigned short": "uint16",
    "unsigned int": "uint32",
    "unsigned long": "uint64",
    "bool": "bool",
}
# ``Input type`` of the arguments that are not tensors; "" is None, or a value the profiler does not
# keep (a string, a device, a generator, an undefined tensor).
SCALAR, SCALAR_LIST, TENSOR_LIST = "Scalar", "ScalarList", "TensorList"


# why a shape-reading command has nothing to read: the trace was profiled without record_shapes
NO_SHAPES = "no kernel linked to an op with recorded input shapes (profile with record_shapes=True)"


class OpCall(msgspec.Struct, kw_only=True):
    op: str
    input_dims: list[Any]
    input_types: list[str]
    input_strides: list[Any] = msgspec.field(default_factory=list)  # empty when not recorded (old PyTorch)
    concrete: list[Any]  # as recorded: text per argument ("" when the profiler kept no value)
    kernels: list[str]
    kernel_ns: int
    kernel_each_ns: list[int] = msgspec.field(default_factory=list)  # per launched kernel, in order
    kernel_starts_ns: list[int] = msgspec.field(default_factory=list)  # each one's GPU start (trace clock)
    external_id: int
    inner: bool = True  # launched kernels itself; False: only the ops it called did (``enclosing``)

    @property
    def readable(self) -> bool:
        """Every recorded dims and strides entry is a shape (non-negative integers), a TensorList's shapes or
        nothing: what the cost models and replay read. A damaged trace can hold anything there."""
        return all(map(is_shape, self.input_dims)) and all(map(is_shape, self.input_strides))

    def text(self, i: int) -> str:
        """Argument ``i``'s recorded value as text ("" when not recorded)."""
        return str(self.concrete[i]).strip() if i < len(self.concrete) else ""

    def number(self, i: int) -> Number | None:
        """Argument ``i`` as a scalar: bools, ints, floats as numbers; inf/nan as text; None when not one."""
        return _number(self.text(i))

    def numbers(self, i: int) -> list[Number] | None:
        """Argument ``i`` as a scalar list ("[1024]", "[]"); None when not recorded or not all numbers."""
        t = self.concrete[i] if i < len(self.concrete) else ""
        if not isinstance(t, str) or not t.startswith("["):
            return None
        values = [_number(x) for x in t.strip("[]").split(",") if x.strip()]
        return None if None in values else [v for v in values if v is not None]

    def ints(self, i: int) -> list[int] | None:
        """Argument ``i`` as integers ("[2, 2]" or "2"); None when any is not an integer."""
        try:
            raw = str(self.concrete[i]) if i < len(self.concrete) else ""
            return [int(x) for x in raw.strip("[]").split(",") if x.strip()]
        except ValueError:
            return None


def is_dims(d: Any) -> bool:
    """One tensor's recorded dims (or strides): non-negative integers ([] for a 0-d tensor or no tensor)."""
    return isinstance(d, list) and all(type(x) is int and x >= 0 for x in d)


def is_shape(d: Any) -> bool:
    """A recorded input's dims (or strides): one tensor's, or a TensorList's (a list of them)."""
    return is_dims(d) or (isinstance(d, list) and all(isinstance(t, list) and is_dims(t) for t in d))


class CapturedLaunch(msgspec.Struct, kw_only=True):
    """A kernel launch a trace recorded while a CUDA/HIP graph was being captured: the graph runs it later, on
    every replay, where the replay trace no longer says which op launched it. ``call`` is that op call (its
    shapes; ``None`` where the launch had none), ``graph`` which capture it belongs to (0, 1, ... in order;
    ``None`` outside any)."""

    kernel: str
    call: OpCall | None
    graph: int | None


def _number(text: str) -> Number | None:
    t = text.strip()
    if t in ("True", "False"):
        return t == "True"
    for kind in (int, float):
        try:
            v = kind(t)
        except ValueError:
            continue
        return v if math.isfinite(v) else t.lower()
    return None
