"""The operator side of a Kineto trace: each CPU op with its recorded input shapes, strides and dtypes
(``record_shapes=True``), joined to the GPU kernels it launched (by ``External id``).

The gap analysis reads kernels only; the roofline needs to know what each kernel computed, which
only the op's shapes say (as AMD's TraceLens does); replay rebuilds the op's inputs from them.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from pathlib import Path
from typing import Any

import msgspec

from kernelscope.errors import FormatError
from kernelscope.readers._io import open_binary
from kernelscope.readers.kineto import _KERNEL_CATS

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
_OP_CATS = frozenset({"cpu_op", "Operator"})  # "Operator": PyTorch 1.8's spelling


class OpCall(msgspec.Struct, kw_only=True):
    op: str
    input_dims: list[Any]
    input_types: list[str]
    input_strides: list[Any] = msgspec.field(default_factory=list)  # empty when not recorded (old PyTorch)
    concrete: list[Any]
    kernels: list[str]
    kernel_ns: int
    kernel_each_ns: list[int] = msgspec.field(default_factory=list)  # per launched kernel, in order
    external_id: int
    inner: bool = True  # launched kernels itself; False: only the ops it called did (``enclosing``)


class _Event(msgspec.Struct):
    name: str = ""
    cat: str = ""
    ph: str = ""
    ts: float = 0.0
    dur: float = 0.0
    pid: int | float | str | None = None  # what kineto.py accepts: ROCm puts the device here, some tools text
    tid: int | float | str | None = None
    args: dict[str, Any] = {}


class _Trace(msgspec.Struct):
    traceEvents: list[_Event]
    deviceProperties: list[dict[str, Any]] = []


def read_op_calls(path: Path, *, enclosing: bool = False) -> tuple[list[OpCall], str | None]:
    """Op calls that launched kernels (innermost op per External id), and the trace's GPU name.

    ``enclosing`` also returns every op that encloses such calls on its thread (``aten::linear``
    around ``aten::addmm``), each with the kernels of all the ops below it, in launch order.
    """
    try:
        with open_binary(path) as f:
            raw = f.read()
    except (EOFError, zlib.error) as exc:  # a cut or damaged gzip stream
        raise FormatError(path, "a readable (gzip) JSON trace", f"a damaged file ({exc})") from None
    try:
        doc = msgspec.json.decode(raw, type=_Trace)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise FormatError(path, "a PyTorch profiler (Kineto) trace", str(exc)) from None
    ops: dict[int, _Event] = {}
    kernels: dict[int, list[_Event]] = defaultdict(list)
    for e in doc.traceEvents:
        ext = e.args.get("External id")
        if not isinstance(ext, int):
            continue
        if e.cat in _OP_CATS:
            ops[ext] = e  # later ops with the same id are inner ones in Kineto's order
        elif e.cat in _KERNEL_CATS:
            kernels[ext].append(e)
    launchers = [(ops[ext], ks) for ext, ks in kernels.items() if ext in ops]
    if enclosing:
        inner = {id(op) for op, _ in launchers}
        calls = [_call(op, ks, inner=id(op) in inner) for op, ks in _subtrees(doc.traceEvents, launchers)]
    else:
        calls = [_call(op, ks, inner=True) for op, ks in launchers]
    device = next((str(p["name"]) for p in doc.deviceProperties if isinstance(p, dict) and "name" in p), None)
    return calls, device


def _subtrees(events: list[_Event], launchers: list[tuple[_Event, list[_Event]]]) -> list[tuple[_Event, list[_Event]]]:
    """Each op with the kernels launched by it or by any op nested in it (by time, on its thread)."""
    own = {id(op): ks for op, ks in launchers}
    threads: dict[tuple[Any, Any], list[_Event]] = defaultdict(list)
    for e in events:
        if e.cat in _OP_CATS and e.ph == "X":
            threads[(e.pid, e.tid)].append(e)
    found: dict[int, tuple[_Event, list[_Event]]] = {}
    for ops in threads.values():
        ops.sort(key=lambda e: (e.ts, -e.dur))  # a parent before the children that start with it
        stack: list[_Event] = []
        for op in ops:
            while stack and op.ts >= stack[-1].ts + stack[-1].dur:
                stack.pop()
            stack.append(op)
            for up in stack if id(op) in own else ():
                found.setdefault(id(up), (up, []))[1].extend(own[id(op)])
    return [(op, sorted(ks, key=lambda k: k.ts)) for op, ks in found.values()]


def _call(op: _Event, ks: list[_Event], *, inner: bool) -> OpCall:
    return OpCall(
        op=op.name,
        input_dims=list(op.args.get("Input Dims") or []),
        input_types=[str(t) for t in op.args.get("Input type") or []],
        input_strides=list(op.args.get("Input Strides") or []),
        concrete=list(op.args.get("Concrete Inputs") or []),
        kernels=[k.name for k in ks],
        kernel_ns=round(sum(k.dur for k in ks) * 1000),
        kernel_each_ns=[round(k.dur * 1000) for k in ks],
        external_id=op.args["External id"],
        inner=inner,
    )
