"""The operator side of a Kineto trace: each CPU op with its recorded input shapes and dtypes
(``record_shapes=True``), joined to the GPU kernels it launched (by ``External id``).

The gap analysis reads kernels only; the roofline needs to know what each kernel computed, which
only the op's shapes say (as AMD's TraceLens does).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import msgspec

from kernelscope.errors import FormatError
from kernelscope.readers._io import open_binary


class OpCall(msgspec.Struct, kw_only=True):
    op: str
    input_dims: list[Any]
    input_types: list[str]
    concrete: list[Any]
    kernels: list[str]
    kernel_ns: int
    kernel_each_ns: list[int] = msgspec.field(default_factory=list)  # per launched kernel, in order
    external_id: int


class _Event(msgspec.Struct):
    name: str = ""
    cat: str = ""
    ph: str = ""
    dur: float = 0.0
    args: dict[str, Any] = {}


class _Trace(msgspec.Struct):
    traceEvents: list[_Event]
    deviceProperties: list[dict[str, Any]] = []


def read_op_calls(path: Path) -> tuple[list[OpCall], str | None]:
    """Op calls that launched kernels (innermost op per External id), and the trace's GPU name."""
    with open_binary(path) as f:
        raw = f.read()
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
        if e.cat == "cpu_op":
            ops[ext] = e  # later ops with the same id are inner ones in Kineto's order
        elif e.cat == "kernel":
            kernels[ext].append(e)
    calls = []
    for ext, ks in kernels.items():
        op = ops.get(ext)
        if op is None:
            continue
        calls.append(
            OpCall(
                op=op.name,
                input_dims=list(op.args.get("Input Dims") or []),
                input_types=[str(t) for t in op.args.get("Input type") or []],
                concrete=list(op.args.get("Concrete Inputs") or []),
                kernels=[k.name for k in ks],
                kernel_ns=round(sum(k.dur for k in ks) * 1000),
                kernel_each_ns=[round(k.dur * 1000) for k in ks],
                external_id=ext,
            )
        )
    device = next((str(p["name"]) for p in doc.deviceProperties if isinstance(p, dict) and "name" in p), None)
    return calls, device
