"""Replay: choose one operator call of a Kineto trace and describe it well enough to run it alone.

Calls are grouped by signature (op, input shapes, dtypes, strides and scalar values): every call of a
signature launches the same work. ``--kernel REGEX`` ranks the innermost ops (those that launched the
kernels themselves) by the time of their matching kernels; ``--op NAME`` ranks the signatures of that
op, enclosing ones too (``aten::linear`` around ``aten::addmm``), by the time of all their kernels.

Only ATen operators are replayed: their schemas ship with every PyTorch build, so the script can call
``torch.ops.aten.<op>`` and let the schema say which recorded value goes to which argument. Custom
operators need their library, and Inductor's Triton launchers and ``record_function`` ranges are no
operators at all.
"""

from __future__ import annotations

import difflib
import re
import shlex
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import msgspec

from kernelscope.analyses.ncu import selector
from kernelscope.errors import InputError
from kernelscope.model.ops import NO_SHAPES, SCALAR, SCALAR_LIST, TENSOR_LIST, TORCH_DTYPES, OpCall, is_dims
from kernelscope.model.replay import (
    Arg,
    Candidate,
    ListArg,
    OtherArg,
    Replay,
    ReplayList,
    ScalarArg,
    TensorArg,
    TensorListArg,
)

METRIC = "time_us"  # what the script prints: KSCOPE_METRIC time_us=<median>
NEAREST = 3
_NOT_TENSORS = frozenset({"", SCALAR, SCALAR_LIST, TENSOR_LIST})
_WRAPPED_NUMBERS = frozenset({"int64", "float64"})  # dtypes of the 0-dim CPU tensors Python numbers become


@dataclass(frozen=True)
class _Signature:
    op: str
    calls: list[OpCall]
    time_ns: int  # what it is ranked by

    @property
    def first(self) -> OpCall:
        return self.calls[0]


class TaskFields(NamedTuple):
    """What a replay script says about the task that optimizes its op (``kscope task new --from-replay``)."""

    eval_command: str
    metric: str
    direction: str
    kernel: str
    shapes: str


def select(
    calls: Sequence[OpCall], *, kernel: str | None, op: str | None, rank: int, trace: str, device: str | None
) -> Replay:
    """The ``rank``-th hottest signature that matches ``kernel`` (a regex) or ``op``, as a ``Replay``."""
    if kernel is None and op is None:
        raise InputError("give --kernel REGEX or --op NAME (kscope replay TRACE --list lists the ops)")
    if rank < 1:
        raise InputError(f"--rank {rank}: the hottest match is 1")
    found = _matches(calls, kernel=kernel, op=op, trace=trace)
    if rank > len(found):
        raise InputError(f"--rank {rank}: only {len(found)} signature(s) match {_selection(kernel, op)} in {trace}")
    chosen = found[rank - 1]
    why = why_not(chosen.first)
    if why is not None:
        raise InputError(
            f"{chosen.op} ({describe(chosen.first)}) cannot be replayed: {why}; {_nearest(chosen, found, calls)}"
        )
    return _replay(chosen, rank=rank, matches=len(found), selection=_selection(kernel, op), trace=trace, device=device)


def candidates(
    calls: Sequence[OpCall], *, kernel: str | None, op: str | None, trace: str, device: str | None
) -> ReplayList:
    """Every signature that matches (all the trace's innermost ops with neither filter), hottest first."""
    found = _matches(calls, kernel=kernel, op=op, trace=trace)
    rows = []
    for i, s in enumerate(found, 1):
        why = why_not(s.first)
        rows.append(
            Candidate(
                rank=i,
                op=s.op,
                args=describe(s.first),
                calls=len(s.calls),
                total_ns=s.time_ns,
                kernel_ns=round(statistics.median(c.kernel_ns for c in s.calls)),
                kernels=_common_kernels(s.calls)[0],
                replayable=why is None,
                why_not=why,
            )
        )
    return ReplayList(trace=trace, device=device, selection=_selection(kernel, op), candidates=rows)


def task_fields(replay: Replay, script: str) -> TaskFields:
    """The eval command (``python3 SCRIPT``, absolute), metric, direction, kernel and shapes of a task."""
    hottest = max(zip(replay.kernel_each_ns, replay.kernels, strict=True))[1] if replay.kernels else replay.op
    return TaskFields(
        eval_command=f"python3 {shlex.quote(script)}",
        metric=METRIC,
        direction="lower",
        kernel=hottest,
        shapes=f"{replay.op}({describe_args(replay.args)})",
    )


def why_not(call: OpCall) -> str | None:
    """Why a call cannot be replayed (None: it can)."""
    return _not_aten(call.op) or _unbuildable(call)


def _not_aten(op: str) -> str | None:
    named = re.fullmatch(r"(\w+)::\w+", op)
    if named and named[1] == "aten":
        return None
    if named:
        return f"a custom operator ({named[1]}::), whose library replay cannot load; it calls ATen ops only"
    if op.startswith("triton_"):
        return (
            "an Inductor-generated Triton kernel launcher, not an ATen operator (Inductor writes a runnable "
            "benchmark per kernel when run with TORCHINDUCTOR_BENCHMARK_KERNEL=1)"
        )
    return "a record_function range, autograd node or compiled region, not an operator"


def _unbuildable(call: OpCall) -> str | None:
    if not call.input_types:
        return "no input shapes or dtypes were recorded (profile with record_shapes=True)"
    if not call.readable:
        return "its recorded input shapes or strides are not shapes (a damaged trace)"
    for i, (typ, dims) in enumerate(zip(call.input_types, call.input_dims, strict=False)):
        if typ not in _NOT_TENSORS and typ not in TORCH_DTYPES:
            return f"input {i} is a {typ} tensor, a dtype replay cannot build"
        if typ == TENSOR_LIST and not (isinstance(dims, list) and dims and all(isinstance(d, list) for d in dims)):
            return f"the shapes of input {i}'s tensor list were not recorded"
    return None


def describe(call: OpCall) -> str:
    """The call's arguments in one line, as the trace recorded them."""
    return describe_args(arguments(call))


def describe_args(args: Sequence[Arg]) -> str:
    return ", ".join(_short(a) for a in args)


def arguments(call: OpCall) -> list[Arg]:
    """Each recorded argument, typed; a tensor list's dtype (unrecorded) is that of the call's first tensor."""
    n = len(call.input_types)
    dims, strides = (_padded(x, n) for x in (call.input_dims, call.input_strides))
    first = next((TORCH_DTYPES[t] for t in call.input_types if t in TORCH_DTYPES), "float32")
    out: list[Arg] = []
    for i, (typ, d, s) in enumerate(zip(call.input_types, dims, strides, strict=True)):
        if typ in TORCH_DTYPES:
            out.append(_tensor(d, s, TORCH_DTYPES[typ]))
        elif typ == TENSOR_LIST:
            shapes = d if isinstance(d, list) else []
            out.append(
                TensorListArg(
                    tensors=[_tensor(x, y, first) for x, y in zip(shapes, _padded(s, len(shapes)), strict=True)]
                )
            )
        elif typ == SCALAR:
            out.append(ScalarArg(value=call.number(i)))
        elif typ == SCALAR_LIST:
            out.append(ListArg(values=call.numbers(i)))
        else:
            out.append(OtherArg())
    return out


def _matches(calls: Sequence[OpCall], *, kernel: str | None, op: str | None, trace: str) -> list[_Signature]:
    """The signatures that match, hottest first, each with the calls it groups."""
    groups: dict[bytes, list[tuple[OpCall, int]]] = {}
    for c, t in _timed(calls, kernel=kernel, op=op, trace=trace):
        key = msgspec.json.encode([c.op, c.input_dims, c.input_types, c.input_strides, c.concrete])
        groups.setdefault(key, []).append((c, t))
    found = [_Signature(op=g[0][0].op, calls=[c for c, _ in g], time_ns=sum(t for _, t in g)) for g in groups.values()]
    # ties (an op and the op around it): the innermost first, it launched the kernels itself
    return sorted(found, key=lambda s: (-s.time_ns, not s.first.inner, -len(s.calls), s.op))


def _timed(calls: Sequence[OpCall], *, kernel: str | None, op: str | None, trace: str) -> list[tuple[OpCall, int]]:
    """The calls that match, each with the GPU time it is ranked by."""
    if not calls:
        raise InputError(f"{trace}: {NO_SHAPES}")
    if kernel is not None and op is not None:
        raise InputError("choose one of --kernel REGEX and --op NAME")
    if op is not None:
        name = _op_name(op, calls)
        named = [(c, c.kernel_ns) for c in calls if c.op == name]
        if not named:
            by_base = {c.op.rpartition("::")[2]: c.op for c in calls}  # "aten::" would make every op look alike
            close = difflib.get_close_matches(name.rpartition("::")[2], sorted(by_base), n=NEAREST, cutoff=0.6)
            hint = f"; did you mean {', '.join(by_base[b] for b in close)}?" if close else " (--list lists the ops)"
            raise InputError(f"no {name} call in {trace} launched a kernel{hint}")
        return named
    if kernel is None:
        return [(c, c.kernel_ns) for c in calls if c.inner]
    wanted = selector(kernel)
    hits = [(c, t) for c in calls if c.inner and (t := _matched_ns(c, wanted)) is not None]
    if not hits:
        raise InputError(f"no op in {trace} launched a kernel matching {kernel!r} (kscope gap lists its kernels)")
    return hits


def _matched_ns(call: OpCall, wanted: Callable[[str, str | None], bool]) -> int | None:
    """The summed durations of the call's kernels that match (None: none does)."""
    hits = [ns for name, ns in zip(call.kernels, call.kernel_each_ns, strict=False) if wanted(name, None)]
    return sum(hits) if hits else None


def _op_name(op: str, calls: Sequence[OpCall]) -> str:
    """``op`` as the trace spells it: ``mm`` and ``aten.mm`` are ``aten::mm`` unless the trace has them."""
    known = {c.op for c in calls}
    if op in known or "::" in op:
        return op
    ns, dot, name = op.partition(".")
    return f"{ns}::{name}" if dot else f"aten::{op}"


def _selection(kernel: str | None, op: str | None) -> str:
    return f"--kernel {kernel}" if kernel is not None else f"--op {op}" if op is not None else "all ops"


def _replay(s: _Signature, *, rank: int, matches: int, selection: str, trace: str, device: str | None) -> Replay:
    kernels, same = _common_kernels(s.calls)
    args = arguments(s.first)
    return Replay(
        op=s.op,
        args=args,
        kernels=kernels,
        kernel_ns=round(statistics.median(c.kernel_ns for c in s.calls)),
        kernel_each_ns=[round(statistics.median(each)) for each in zip(*(c.kernel_each_ns for c in same), strict=True)],
        calls=len(s.calls),
        total_ns=sum(c.kernel_ns for c in s.calls),
        rank=rank,
        matches=matches,
        selection=selection,
        trace=trace,
        device=device,
        notes=_notes(s, args, same),
    )


def _common_kernels(calls: Sequence[OpCall]) -> tuple[list[str], list[OpCall]]:
    """The kernel sequence most calls launched, and those calls (first calls may add setup kernels)."""
    seq = Counter(tuple(c.kernels) for c in calls).most_common(1)[0][0]
    return list(seq), [c for c in calls if tuple(c.kernels) == seq]


def _notes(s: _Signature, args: Sequence[Arg], same: Sequence[OpCall]) -> list[str]:
    notes = []
    if len(same) < len(s.calls):
        other = next(c for c in s.calls if c not in same)
        notes.append(
            f"{len(s.calls) - len(same)} of {len(s.calls)} calls launched other kernels ({', '.join(other.kernels)}); "
            "the most common sequence is expected"
        )
    tensors = [a for a in args if isinstance(a, TensorArg)] + [
        t for a in args if isinstance(a, TensorListArg) for t in a.tensors
    ]
    if any(t.strides is None for t in tensors):
        notes.append("strides not recorded (older PyTorch): those inputs are contiguous")
    lists = [a.tensors[0].dtype for a in args if isinstance(a, TensorListArg) and a.tensors]
    if lists:
        notes.append(f"tensor-list dtypes are not recorded: {lists[0]} assumed (edit REPLAY if --check disagrees)")
    if any(t.device == "cpu" for t in tensors):
        notes.append("0-dim int64/float64 tensors are taken for Python numbers, which PyTorch wraps on the CPU")
    unknown = [str(i) for i, a in enumerate(args) if isinstance(a, OtherArg)]
    if unknown:
        notes.append(
            f"argument(s) {', '.join(unknown)} not recorded (None, a string, a device or a generator): "
            "the script passes None or the schema default"
        )
    unset = [str(i) for i, a in enumerate(args) if isinstance(a, ScalarArg | ListArg) and _unset(a)]
    if unset:
        notes.append(f"value(s) of argument(s) {', '.join(unset)} not recorded: the script passes the schema default")
    return notes


def _unset(a: ScalarArg | ListArg) -> bool:
    return a.value is None if isinstance(a, ScalarArg) else a.values is None


def _nearest(chosen: _Signature, found: Sequence[_Signature], calls: Sequence[OpCall]) -> str:
    """The replayable signatures to offer instead: other matches first, else the trace's ops most alike."""
    same = [f"--rank {i} {s.op}" for i, s in enumerate(found, 1) if why_not(s.first) is None][:NEAREST]
    if same:
        return "replayable matches: " + ", ".join(same)
    ops = {c.op for c in calls if c.inner and why_not(c) is None}
    if not ops:
        return "no op of this trace can be replayed"
    name = chosen.op.rpartition("::")[2]

    def alike(o: str) -> tuple[bool, float]:  # Inductor names its kernels after the ops they fuse
        base = o.rpartition("::")[2].strip("_")
        return base not in name, -difflib.SequenceMatcher(None, name, base).ratio()

    alike_first = sorted(ops, key=alike)
    return "nearest replayable ops: " + ", ".join(f"--op {o}" for o in alike_first[:NEAREST])


def _padded(values: list[Any], n: int) -> list[Any]:
    """A recorded per-argument list, cut or filled with "" to ``n`` (older traces omit some lists)."""
    return [*values[:n], *[""] * (n - len(values))]


def _tensor(dims: Any, strides: Any, dtype: str) -> TensorArg:
    """A tensor argument; damaged dims or strides (``OpCall.readable`` is False, so never replayed) read as none."""
    shape = list(dims) if is_dims(dims) else []
    st = list(strides) if is_dims(strides) and len(strides) == len(shape) else None
    wrapped = not shape and dtype in _WRAPPED_NUMBERS
    return TensorArg(shape=shape, strides=st, dtype=dtype, device="cpu" if wrapped else "cuda")


def _short(a: Arg) -> str:
    if isinstance(a, TensorArg):
        text = f"{a.dtype}[{','.join(map(str, a.shape))}]"
        if a.strides is not None and a.strides != _contiguous(a.shape):
            text += f"@[{','.join(map(str, a.strides))}]"
        return text if a.device == "cuda" else f"{text}({a.device})"
    if isinstance(a, TensorListArg):
        return "[" + ", ".join(_short(t) for t in a.tensors) + "]"
    if isinstance(a, ScalarArg):
        return "?" if a.value is None else str(a.value)
    if isinstance(a, ListArg):
        return "?" if a.values is None else "[" + ",".join(map(str, a.values)) + "]"
    return "-"


def _contiguous(shape: Sequence[int]) -> list[int]:
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= max(d, 1)
    return out[::-1]
