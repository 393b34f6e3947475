"""Roofline: where kernels sit against the datasheet and the measured ceilings.

FLOPs and bytes come from the caller (numbers or expressions over shape variables) or from the
operators a Kineto trace recorded with their input shapes (GEMM, batched GEMM, attention,
convolution, normalization, softmax, elementwise). Bytes are the compulsory traffic: every input
read once and the output written once (a lower bound: a kernel that re-reads from DRAM moves more),
so the intensity is an upper bound and "memory-bound" calls are conservative.
"""

from __future__ import annotations

import ast
import math
import operator
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import msgspec

from kernelscope.errors import InputError
from kernelscope.model.ops import SHORT_DTYPES, TORCH_DTYPES, OpCall
from kernelscope.model.roofline import TARGET, Peaks, RooflinePoint, RooflineResult

_DTYPE = {name: SHORT_DTYPES[t] for name, t in TORCH_DTYPES.items() if t in SHORT_DTYPES}
_BYTES = {
    "bf16": 2,
    "fp16": 2,
    "fp32": 4,
    "fp64": 8,
    "fp8": 1,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "uint64": 8,
    "bool": 1,
}
# flops per output element of the common non-matrix ops (a convention, stated with the result)
_VECTOR_FLOPS = {
    "aten::native_layer_norm": 8,
    "aten::layer_norm": 8,
    "aten::_fused_rms_norm": 5,
    "aten::rms_norm": 5,
    "aten::_softmax": 5,
    "aten::softmax": 5,
    "aten::_log_softmax": 6,
    "aten::gelu": 8,
    "aten::silu": 4,
    "aten::relu": 1,
    "aten::add": 1,
    "aten::mul": 1,
    "aten::sub": 1,
    "aten::div": 1,
    "aten::sum": 1,
    "aten::mean": 1,
    "aten::copy_": 0,
    "aten::to": 0,
    "aten::_to_copy": 0,
    "aten::clone": 0,
    "aten::fill_": 0,
    "aten::add_": 1,
    "aten::mul_": 1,
    "aten::tanh": 4,
    "aten::exp": 4,
    "aten::sigmoid": 4,
    "aten::pow": 2,
}


class _Attn(NamedTuple):
    """Where an attention op keeps its shapes and its mask flag (argument positions per ATen schema)."""

    layout: str  # "bhsd" ([batch, heads, seq, dim], the SDPA ops) or "bshd" (flash/xformers kernels)
    q: int  # argument index of the query; key follows it
    causal_arg: int  # argument index of is_causal (or xformers' custom_mask_type)
    backward: bool


# Argument positions from aten/src/ATen/native/native_functions.yaml.
_ATTENTION = {
    "aten::scaled_dot_product_attention": _Attn("bhsd", 0, 5, False),
    "aten::_scaled_dot_product_flash_attention": _Attn("bhsd", 0, 4, False),
    "aten::_scaled_dot_product_flash_attention_for_cpu": _Attn("bhsd", 0, 4, False),
    "aten::_scaled_dot_product_efficient_attention": _Attn("bhsd", 0, 6, False),
    "aten::_scaled_dot_product_cudnn_attention": _Attn("bhsd", 0, 6, False),
    "aten::_cudnn_attention_forward": _Attn("bhsd", 0, 10, False),
    "aten::_flash_attention_forward": _Attn("bshd", 0, 8, False),
    "aten::_efficient_attention_forward": _Attn("bshd", 0, 9, False),
    "aten::_scaled_dot_product_flash_attention_backward": _Attn("bhsd", 1, 11, True),
    "aten::_scaled_dot_product_efficient_attention_backward": _Attn("bhsd", 1, 11, True),
    "aten::_scaled_dot_product_cudnn_attention_backward": _Attn("bhsd", 1, 14, True),
    "aten::_cudnn_attention_backward": _Attn("bhsd", 1, 14, True),
    "aten::_flash_attention_backward": _Attn("bshd", 1, 10, True),
    "aten::_efficient_attention_backward": _Attn("bshd", 1, 11, True),
}


class Cost(msgspec.Struct, kw_only=True):
    flops: float
    bytes: float
    dtype: str
    matrix: bool  # runs on the matrix units (GEMM, attention, convolution)
    note: str = ""


def _numel(dims: Any) -> int:
    """Elements of a recorded shape; of a TensorList (a list of shapes), all its tensors' together."""
    if not isinstance(dims, list) or not dims:
        return 0
    if isinstance(dims[0], list):
        return sum(_numel(d) for d in dims)
    return math.prod(int(d) for d in dims)


def _tensor_dims(call: OpCall) -> list[list[int]]:
    """The shape of every tensor input; a TensorList input (``aten::cat``, foreach ops) is recorded as a
    list of shapes and adds each of its tensors."""
    out: list[list[int]] = []
    for d in call.input_dims:
        if isinstance(d, list) and d:
            out.extend(t for t in d if isinstance(t, list) and t) if isinstance(d[0], list) else out.append(d)
    return out


def op_dtype(call: OpCall) -> str:
    """The op's compute dtype: its first floating (or 8-bit) tensor input's, fp32 when none is recorded."""
    for t in call.input_types:
        if t in _DTYPE and _DTYPE[t] not in ("int64", "int32", "bool"):
            return _DTYPE[t]
    return "fp32"


def _gemm(call: OpCall, dims: list[list[int]], dt: str, eb: int) -> Cost | None:
    if len(dims) < 2:
        return None
    added = call.op == "aten::addmm" and len(dims) >= 3
    a, b = (dims[1], dims[2]) if added else (dims[0], dims[1])
    if call.op in ("aten::mm", "aten::addmm") and (len(a) != 2 or len(b) != 2):
        return None  # not the matrices these ops take
    n = b[0] if call.op == "aten::linear" else b[-1]  # linear's weight is [N, K]
    m, k = math.prod(a[:-1]), a[-1]  # the rows of every leading dimension (one for a vector)
    bias = dims[0] if added else dims[2] if call.op == "aten::linear" and len(dims) >= 3 and dims[2] else None
    return _plus_bias(2.0 * m * n * k, (m * k + k * n + m * n) * eb, m * n, bias, dt, eb)


def _bmm(call: OpCall, dims: list[list[int]], dt: str, eb: int) -> Cost | None:
    if len(dims) < 2:
        return None
    added = call.op == "aten::baddbmm" and len(dims) >= 3
    a, b = (dims[1], dims[2]) if added else (dims[0], dims[1])
    bs, m, k, n = a[0], a[1], a[2], b[2]
    bias = dims[0] if added else None
    return _plus_bias(2.0 * bs * m * n * k, bs * (m * k + k * n + m * n) * eb, bs * m * n, bias, dt, eb)


def _plus_bias(flops: float, moved: int, outputs: int, bias: list[int] | None, dt: str, eb: int) -> Cost:
    """A product's cost; with a bias (addmm's and baddbmm's input, linear's bias), its add per output element
    and its own bytes read (``[N]`` broadcast is N elements, not M x N), as TraceLens's GEMM model counts them."""
    if bias is not None:
        flops, moved = flops + outputs, moved + _numel(bias) * eb
    return Cost(flops=flops, bytes=float(moved), dtype=dt, matrix=True)


def causal_pairs(sq: int, sk: int, *, bottom_right: bool) -> int:
    """Query-key pairs a causal mask keeps: query i sees keys j <= i (top-left, PyTorch's ``is_causal``)
    or j <= i + sk - sq (bottom-right, flash-attention's and xformers' choice when the lengths differ).

    Query i sees clamp(i + a, 0, sk) keys with a = 1 (+ sk - sq); summed in closed form per region.
    """
    a = 1 + (sk - sq if bottom_right else 0)
    i0 = max(0, min(sq, 1 - a))  # queries that see no key
    i1 = max(i0, min(sq, sk - a))  # from here on every key is visible
    return (i1 - i0) * a + (i0 + i1 - 1) * (i1 - i0) // 2 + (sq - i1) * sk


def _mask(call: OpCall, spec: _Attn) -> str:
    v = call.text(spec.causal_arg)
    if spec.layout == "bshd" and "efficient" in call.op:  # xformers custom_mask_type: 1 top-left, 2 bottom-right
        return {"1": "causal", "2": "causal-bottom-right"}.get(v, "none")
    if v == "True":
        return "causal-bottom-right" if "flash_attention" in call.op and spec.layout == "bshd" else "causal"
    return "none"


def _attention(call: OpCall, dims: list[list[int]], dt: str, eb: int) -> Cost | None:
    spec = _ATTENTION[call.op]
    shapes = [d for d in call.input_dims[spec.q : spec.q + 2] if isinstance(d, list)]
    if len(shapes) < 2 or len(shapes[0]) != 4 or len(shapes[1]) != 4:
        return None  # varlen (packed 3-D) attention: sequence lengths are in tensors the trace does not keep
    q, kv = shapes
    (b, h, sq, d), skv = (q, kv[2]) if spec.layout == "bhsd" else ((q[0], q[2], q[1], q[3]), kv[1])
    mask = _mask(call, spec)
    pairs = b * h * (sq * skv if mask == "none" else causal_pairs(sq, skv, bottom_right=mask != "causal"))
    # forward: Q·Kᵀ and P·V, 2·D flops each per kept pair; backward recomputes Q·Kᵀ and adds dP, dV, dQ, dK
    matmuls = 5 if spec.backward else 2
    tensors = 4 if spec.backward else 2  # q,o (+ do,dq) and k,v (+ dk,dv): read or written once
    byt = float(tensors * (_numel(q) + _numel(kv)) * eb)
    what = "backward" if spec.backward else "forward"
    count = "all Sq·Skv pairs" if mask == "none" else f"{mask} mask: unmasked pairs only"
    return Cost(flops=2.0 * matmuls * d * pairs, bytes=byt, dtype=dt, matrix=True, note=f"{what}, {count}")


def _conv(call: OpCall, dims: list[list[int]], dt: str, eb: int) -> Cost | None:
    if len(dims) < 2 or len(dims[0]) != 4 or len(dims[1]) != 4:
        return None
    x, w = dims[0], dims[1]
    stride, pad, dil = _conv_params(call)
    ho = (x[2] + 2 * pad[0] - dil[0] * (w[2] - 1) - 1) // stride[0] + 1
    wo = (x[3] + 2 * pad[1] - dil[1] * (w[3] - 1) - 1) // stride[1] + 1
    out = x[0] * w[0] * ho * wo
    return Cost(
        flops=2.0 * out * w[1] * w[2] * w[3], bytes=float((_numel(x) + _numel(w) + out) * eb), dtype=dt, matrix=True
    )


def _tensors(call: OpCall) -> list[tuple[int, int]]:
    """(elements, bytes per element) of each tensor argument, each at its own recorded dtype."""
    return [
        (_numel(d), _BYTES.get(_DTYPE.get(t, ""), 4))
        for d, t in zip(call.input_dims, call.input_types, strict=False)  # types may be missing in old traces
        if isinstance(d, list) and d
    ]


def _vector(call: OpCall, dims: list[list[int]], dt: str, eb: int) -> Cost | None:
    per = _VECTOR_FLOPS.get(call.op)
    tensors = _tensors(call)
    if per is None or not tensors:
        return None
    n = max(e for e, _ in tensors)
    if call.op in ("aten::copy_", "aten::fill_"):  # self is only written
        reads, writes = tensors[1:], [tensors[0]]
    elif call.op.endswith("_"):  # in place: self is read and written
        reads, writes = tensors, [tensors[0]]
    else:
        biggest = max(tensors)
        reads, writes = tensors, [(1 if call.op in ("aten::sum", "aten::mean") else n, biggest[1])]
    byt = sum(e * b for e, b in reads) + sum(e * b for e, b in writes)
    return Cost(
        flops=float(per * n), bytes=float(byt), dtype=dt, matrix=False, note=f"{per} flop/element by convention"
    )


_FAMILIES = {
    **dict.fromkeys(("aten::mm", "aten::addmm", "aten::matmul", "aten::linear"), _gemm),
    **dict.fromkeys(("aten::bmm", "aten::baddbmm"), _bmm),
    **dict.fromkeys(_ATTENTION, _attention),
    **dict.fromkeys(("aten::convolution", "aten::_convolution", "aten::cudnn_convolution"), _conv),
}


def op_cost(call: OpCall) -> Cost | None:
    """FLOPs and compulsory bytes of one op call from its recorded shapes; None when unknown: also when a
    recorded shape is not one (a dimension that is no non-negative integer) or has fewer dimensions than the
    op's model reads (a damaged or hand-made trace), rather than an exception or a cost from shifted shapes."""
    if not call.readable:
        return None
    dims, dt = _tensor_dims(call), op_dtype(call)
    try:
        return _FAMILIES.get(call.op, _vector)(call, dims, dt, _BYTES.get(dt, 4))
    except IndexError:
        return None


def _conv_params(call: OpCall) -> tuple[list[int], list[int], list[int]]:
    def ints(i: int, default: list[int]) -> list[int]:
        got = call.ints(i)
        return (got * 2)[:2] if got else default

    return ints(3, [1, 1]), ints(4, [0, 0]), ints(5, [1, 1])


_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.FloorDiv: operator.floordiv,
}


def evaluate(expr: str, variables: dict[str, float]) -> float:
    """A FLOP/byte expression over shape variables (``2*M*N*K``): numbers, names, + - * / // ** ( )."""

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name):
            if node.id not in variables:
                raise InputError(f"{expr!r}: {node.id} has no value (pass --var {node.id}=N)")
            return float(variables[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return float(_OPS[type(node.op)](walk(node.left), walk(node.right)))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        raise InputError(f"{expr!r}: only numbers, shape variables and + - * / // ** are allowed")

    try:
        return walk(ast.parse(expr, mode="eval"))
    except SyntaxError:
        raise InputError(f"{expr!r}: not an arithmetic expression") from None


def point(label: str, cost: Cost, time_ns: float, calls: int, peaks: Peaks) -> RooflinePoint:
    if time_ns <= 0:
        raise InputError(f"{label}: time must be positive")
    secs = time_ns / 1e9
    ai = cost.flops / cost.bytes if cost.bytes else math.inf
    key = cost.dtype if cost.matrix else "vector"
    peak = peaks.datasheet_tflops.get(key)
    bw = peaks.datasheet_gbs
    roof = min(peak, ai * bw / 1e3) if peak and bw else None
    ridge = peak * 1e3 / bw if peak and bw else None
    mpeak, mbw = peaks.measured_tflops.get(key), peaks.measured_gbs
    cap = mpeak or peak  # no measured compute roof for this dtype: the measured bandwidth under the datasheet peak
    mroof = min(cap, ai * mbw / 1e3) if cap and mbw else None
    notes = [cost.note] if cost.note else []
    if mroof is not None and not mpeak and cost.flops:
        notes.append(f"measured roof uses the datasheet {key} peak (not measured)")
    if bw and cost.bytes / secs / 1e9 > bw:
        notes.append("moves more than DRAM can: part of its data was served from cache")
    achieved = cost.flops / secs / 1e12
    if cost.flops == 0 and bw:  # pure data movement: judged against bandwidth alone
        gbs = cost.bytes / secs / 1e9
        roof = mroof = None
        pct, mpct = 100 * gbs / bw, (100 * gbs / mbw if mbw else None)
        return RooflinePoint(
            label=label,
            dtype=cost.dtype,
            matrix=False,
            calls=calls,
            flops=0.0,
            bytes=cost.bytes,
            time_us=time_ns / 1e3,
            intensity=0.0,
            achieved_tflops=0.0,
            achieved_gbs=gbs,
            peak_tflops=peak,
            ridge=ridge,
            bound="memory",
            roof_tflops=None,
            pct_of_roof=pct,
            pct_of_measured_roof=mpct,
            meets_target=(mpct or pct) >= 100 * TARGET,
            note="; ".join([*notes, "no arithmetic: % of bandwidth"]),
        )
    best = mroof or roof
    return RooflinePoint(
        label=label,
        dtype=cost.dtype,
        matrix=cost.matrix,
        calls=calls,
        flops=cost.flops,
        bytes=cost.bytes,
        time_us=time_ns / 1e3,
        intensity=ai,
        achieved_tflops=achieved,
        achieved_gbs=cost.bytes / secs / 1e9,
        peak_tflops=peak,
        ridge=ridge,
        bound=None if ridge is None else ("memory" if ai < ridge else "compute"),
        roof_tflops=roof,
        pct_of_roof=100 * achieved / roof if roof else None,
        measured_roof_tflops=mroof,
        pct_of_measured_roof=100 * achieved / mroof if mroof else None,
        meets_target=achieved >= TARGET * best if best else None,
        note="; ".join(notes),
    )


def point_label(call: OpCall) -> str:
    """The label of the roofline point a call is summed into: its op and input shapes."""
    return f"{call.op} {_tensor_dims(call)}"


def from_calls(calls: Iterable[OpCall], peaks: Peaks) -> RooflineResult:
    """One point per (op, shapes): FLOPs, bytes and kernel time summed over its calls."""
    groups: dict[str, list[tuple[Cost, OpCall]]] = defaultdict(list)
    unmodeled: dict[str, float] = defaultdict(float)
    for c in calls:
        cost = op_cost(c)
        if cost is None:
            unmodeled[c.op] += c.kernel_ns / 1e3
            continue
        groups[point_label(c)].append((cost, c))
    points = []
    for label, items in groups.items():
        total = Cost(
            flops=sum(c.flops for c, _ in items),
            bytes=sum(c.bytes for c, _ in items),
            dtype=items[0][0].dtype,
            matrix=items[0][0].matrix,
            note=items[0][0].note,
        )
        ns = sum(c.kernel_ns for _, c in items)
        if ns > 0:
            points.append(point(label, total, ns, len(items), peaks))
    points.sort(key=lambda p: -p.time_us)
    return RooflineResult(peaks=peaks, points=points, unmodeled=dict(sorted(unmodeled.items(), key=lambda kv: -kv[1])))


def _matrix_type(name: str, given: str | None, found: Mapping[str, tuple[str, str]]) -> tuple[str, str]:
    if given is not None:
        return given, "given"
    if name in found:
        dt, evidence = found[name]
        return dt, f"from its SASS/ISA: {evidence}"
    return "bf16", "assumed: no matrix instruction read for it; --dtype sets it"


def from_measured(
    kernels: Iterable[tuple[str, float | None, float | None, float | None, float]],
    peaks: Peaks,
    dtype: str | None,
    dtypes: Mapping[str, tuple[str, str]] | None = None,
) -> RooflineResult:
    """One point per profiled kernel from counted work: (name, FLOPs, matrix-unit FLOPs, DRAM bytes, ns).

    Bytes are what DRAM actually moved (not the compulsory traffic), so the intensity is the kernel's
    real one. A kernel that counted work on the matrix units is judged against the matrix peak of its
    operand type: ``dtype`` when given, else the type its own matrix instructions name (``dtypes``: kernel
    name -> (type, evidence), from ``codeobj.mix.matrix_dtype``), else bf16, said to be assumed.
    Kernels without FLOP or byte counters are listed as unmodeled.
    """
    points: list[RooflinePoint] = []
    unmodeled: dict[str, float] = {}
    for name, flops, tensor, dram, ns in kernels:
        if flops is None or dram is None or ns <= 0:
            unmodeled[name] = unmodeled.get(name, 0.0) + ns / 1e3
            continue
        matrix = bool(tensor)
        dt, why = _matrix_type(name, dtype, dtypes or {})
        note = "counted by the profiler: DRAM bytes measured" + (f", {dt} matrix peak ({why})" if matrix else "")
        cost = Cost(flops=flops, bytes=dram, dtype=dt if matrix else "fp32", matrix=matrix, note=note)
        points.append(point(name, cost, ns, 1, peaks))
    points.sort(key=lambda p: -p.time_us)
    return RooflineResult(peaks=peaks, points=points, unmodeled=unmodeled)
