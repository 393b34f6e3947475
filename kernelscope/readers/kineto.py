"""PyTorch profiler (Kineto) Chrome trace, ``.json`` or ``.json.gz``, CUDA and ROCm builds.

Streams: the ``traceEvents`` array is decoded block by block (``_json_blocks``), so memory stays
bounded by the block size plus what is kept. Each view decodes only its declared fields (``VIEWS``;
msgspec skips the other keys without building objects for them): ``columns`` (``stream_columns``:
names, times, devices, decoded in parallel byte ranges on large plain files) for aggregations such as
the gap table; ``records`` (``read``/``stream``: every record field, launches linked to their API
calls); ``shapes`` (``read_ops``): the columns plus each CPU op's recorded input shapes, strides,
dtypes and values, joined to the kernels it launched by ``External id`` (``Profile.ops``), so one decode
gives both the gap table and the roofline's ops.

Vendor quirks, all here: ``cat`` is ``kernel``/``gpu_memcpy``/``gpu_memset`` since 2022 and
``Kernel``/``Memcpy``/``Memset`` before; ``ts``/``dur`` are microseconds (floats with ns fractions);
``args.grid`` counts blocks; ROCm traces may lack grid/block, carry ``stream`` as a hex string on API
events, and put the device in ``pid``. ``ProfilerStep#N`` is a ``user_annotation`` (``cpu_op`` in old
versions) and is repeated as ``gpu_user_annotation`` on the GPU track. With ``with_stack=True`` the
Python tracer adds ``python_function`` events named ``<file>.py(<line>): <function>``: the modules the
workload ran (``python_module``; ``Profile.modules``). Kineto writes its header keys (``deviceProperties``,
``distributedInfo``) before ``traceEvents``; a trace re-saved by a Python tool may have them after (``_Facts``).
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import partial
from itertools import accumulate, pairwise
from multiprocessing import get_context
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal

import msgspec
import numpy as np

from kernelscope.errors import InputError, KernelscopeError
from kernelscope.hw import specs
from kernelscope.model import Annotation, DeviceInfo, Dim3, KernelLaunch, MemoryOp, Profile, Vendor, numbers
from kernelscope.model.columns import (
    HARNESS_MARK,
    NO_CORRELATION,
    NO_DEVICE,
    LaunchColumns,
    OpColumns,
    column_id,
    variant_ids,
)
from kernelscope.model.gap import Variant
from kernelscope.model.ops import CapturedLaunch, OpCall
from kernelscope.model.records import items_from_blocks
from kernelscope.readers import _json_blocks as jb
from kernelscope.readers._io import is_gzip, open_binary, open_raw

FORMAT = "kineto"
BLOCK_BYTES = 8 << 20
PARALLEL_MIN_BYTES = 64 << 20  # below this, starting workers costs more than it saves

_KERNEL_CATS = frozenset({"kernel", "Kernel"})
_MEMORY_CATS = {"gpu_memcpy": "memcpy", "Memcpy": "memcpy", "gpu_memset": "memset", "Memset": "memset"}
_API_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "runtime"})
_GRAPH_LAUNCH = "GraphLaunch"  # cudaGraphLaunch, cuGraphLaunch, hipGraphLaunch: the kernels are a replay
# host work that can keep the GPU waiting: ops, the workload's ranges, Python frames, runtime calls (syncs)
_HOST_CATS = frozenset({"cpu_op", "Operator", "user_annotation", "python_function"}) | _API_CATS
_ANNOTATION_CATS = {"user_annotation": "host", "gpu_user_annotation": "gpu", "gpu_user_Annotation": "gpu"}
_OP_CATS = frozenset({"cpu_op", "Operator"})  # "Operator": PyTorch 1.8's spelling

Scalar = int | float | str | None
# a Python frame: ``/venv/lib/python3.12/site-packages/sglang/srt/x.py(123): forward``
_FRAME = re.compile(r"^(.+)\.py\([0-9]+\): ")
_INSTALLED = re.compile(r"^.*/(?:site|dist)-packages/")


def python_module(name: str) -> str | None:
    """The dotted module of a Python frame's file: as imported where installed (``sglang.srt.x``), else its
    whole path's components (a checkout run in place); None for other events and frozen/built-in code."""
    m = _FRAME.match(name)
    if m is None or m.group(1).startswith("<"):
        return None
    path = _INSTALLED.sub("", m.group(1).replace("\\", "/")).strip("/")
    return path.replace("/", ".") or None


class _Args(msgspec.Struct, gc=False):
    device: Scalar = None
    stream: Scalar = None
    correlation: Scalar = None
    external_id: Any = msgspec.field(default=None, name="External id")  # Any: a hostile value reads as no op
    grid: list[int] | None = None
    block: list[int] | None = None
    registers: Scalar = msgspec.field(default=None, name="registers per thread")
    shared: Scalar = msgspec.field(default=None, name="shared memory")
    bytes: Scalar = None


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: Scalar = None
    tid: Scalar = None
    ts: float = 0.0
    dur: float = 0.0
    args: _Args | None = None


class _Dim3(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """Kineto's ``[x, y, z]``: hashable and untracked by the cycle collector, one per launch; a shorter array
    or one of other scalars still decodes (and is no dimension), as the records view reads it."""

    x: Scalar = None
    y: Scalar = None
    z: Scalar = None


class _LeanArgs(msgspec.Struct, gc=False):
    device: Scalar = None
    correlation: Scalar = None  # joins a kernel to the API call that launched it (its launch time)
    external_id: Any = msgspec.field(default=None, name="External id")  # a kernel's op call; the op's own id
    stream: Any = None
    # a kernel's variant (launch configuration), hashable as decoded
    grid: _Dim3 | None = None
    block: _Dim3 | None = None
    registers: Scalar = msgspec.field(default=None, name="registers per thread")
    shared: Scalar = msgspec.field(default=None, name="shared memory")


class _LeanEvent(msgspec.Struct, gc=False):
    """Only what the columns need: msgspec skips the other keys without building objects for them."""

    cat: str = ""
    name: str = ""
    pid: Scalar = None
    tid: Scalar = None
    ts: float = 0.0
    dur: float = 0.0
    args: _LeanArgs | None = None


class _OpArgs(_LeanArgs, gc=False):
    """What the ops add to the columns; ``Any``: the profiler's lists nest and mix types."""

    dims: Any = msgspec.field(default=None, name="Input Dims")
    types: Any = msgspec.field(default=None, name="Input type")
    strides: Any = msgspec.field(default=None, name="Input Strides")
    concrete: Any = msgspec.field(default=None, name="Concrete Inputs")


class _OpEvent(_LeanEvent, gc=False):
    ph: str = ""
    tid: Scalar = None
    args: _OpArgs | None = None  # the columns' event, with the ops' fields


class _CaptureArgs(_OpArgs, gc=False):
    kernel: Any = None  # a launch call's kernel: all a graph capture records of it (the graph runs it later)


class _CaptureEvent(_OpEvent, gc=False):
    args: _CaptureArgs | None = None


_CAPTURE = msgspec.json.Decoder(list[_CaptureEvent], strict=False)
_BEGIN_CAPTURE, _END_CAPTURE = "StreamBeginCapture", "StreamEndCapture"  # cuda.../hip... runtime calls
# a kernel launch call (cudaLaunchKernel, cuLaunchKernelEx, hipModuleLaunchKernel, ...): on CUDA the only trace of a
# captured kernel, whose name the call does not record
_LAUNCH_CALL = re.compile(r"Launch\w*Kernel")

View = Literal["columns", "records", "shapes"]
# The fields each view decodes: ``shapes`` is ``columns`` plus what the ops need. Not strict: a number written
# as a string ("ts": "773902396463", as rocprof's and some converters' Chrome traces write them) is read as one.
VIEWS: dict[View, msgspec.json.Decoder[Any]] = {
    "columns": msgspec.json.Decoder(list[_LeanEvent], strict=False),
    "records": msgspec.json.Decoder(list[_Event], strict=False),
    "shapes": msgspec.json.Decoder(list[_OpEvent], strict=False),
}


def _int(v: Scalar) -> int | None:
    """An integer id from Kineto's mixed spellings (7, "7", "0x0"); None when absent or not a number."""
    if v is None:
        return None
    if isinstance(v, int | float):
        return numbers.to_int(v)
    try:
        return int(v, 0)
    except ValueError:
        return None


class _Batch:
    """Converts decoded events into records; keeps state (names, correlations) across blocks."""

    def __init__(self, path: Path, rank: int | None, vendor: Vendor) -> None:
        self.path, self.rank, self.vendor = str(path), rank, vendor
        self.names: dict[str, str] = {}  # interned: one string object per distinct kernel name
        self.dims: dict[tuple[int, ...], Dim3] = {}
        self.api_ns: dict[int, tuple[int, int]] = {}  # correlation id -> the launching API call's (start, dur)
        self.graph_calls: set[int] = set()  # correlation ids of graph launches (their kernels are replays)

    def _dim(self, v: list[int] | None) -> Dim3 | None:
        if v is None or len(v) != 3:
            return None
        key = tuple(v)
        d = self.dims.get(key)
        if d is None:
            d = self.dims[key] = Dim3(*v)
        return d

    def convert(self, events: list[_Event]) -> Profile:
        out = Profile(sources=[self.path], formats=[FORMAT])
        launches, mem, notes = out.launches, out.memory_ops, out.annotations
        names, api_ns = self.names, self.api_ns
        dropped = 0
        modules: set[str] = set()
        for e in events:
            cat = e.cat
            start, dur = numbers.ns_from_us(e.ts), numbers.ns_from_us(e.dur)
            if start is None or dur is None or start < 0 or dur < 0:
                if cat in _KERNEL_CATS or cat in _MEMORY_CATS:
                    dropped += 1
                continue
            if cat in _KERNEL_CATS:
                a = e.args or _Args()
                corr = _int(a.correlation)
                grid, block = self._dim(a.grid), self._dim(a.block)
                launches.append(
                    KernelLaunch(
                        name=names.setdefault(e.name, e.name),
                        start_ns=start,
                        duration_ns=dur,
                        vendor=self.vendor,
                        device=_int(a.device) if a.device is not None else _int(e.pid),
                        rank=self.rank,
                        stream=_int(a.stream) if a.stream is not None else _int(e.tid),
                        correlation_id=corr,
                        op_id=_int_or_none(a.external_id),
                        launch_ns=(call := api_ns.get(corr) if corr is not None else None) and call[0],
                        launch_dur_ns=call[1] if call else None,
                        graph=corr in self.graph_calls,
                        grid_blocks=grid,
                        grid_items=items_from_blocks(grid, block) if grid and block else None,
                        block=block,
                        registers=_int(a.registers),
                        lds_bytes=_int(a.shared),
                        source=self.path,
                        source_format=FORMAT,
                    )
                )
            elif cat in _API_CATS:
                if e.args is not None and (corr := _int(e.args.correlation)) is not None:
                    api_ns[corr] = (start, dur)
                    if _GRAPH_LAUNCH in e.name:
                        self.graph_calls.add(corr)
            elif cat in _MEMORY_CATS:
                a = e.args or _Args()
                mem.append(
                    MemoryOp(
                        name=e.name,
                        kind=_MEMORY_CATS[cat],  # type: ignore[arg-type]
                        start_ns=start,
                        duration_ns=dur,
                        device=_int(a.device) if a.device is not None else _int(e.pid),
                        rank=self.rank,
                        stream=_int(a.stream) if a.stream is not None else _int(e.tid),
                        correlation_id=_int(a.correlation),
                        bytes=_int(a.bytes),
                        source=self.path,
                        source_format=FORMAT,
                    )
                )
            elif cat == "python_function":
                if (module := python_module(e.name)) is not None:
                    modules.add(module)
            elif cat in _ANNOTATION_CATS or (e.ph == "X" and e.name.startswith("ProfilerStep#")):
                notes.append(
                    Annotation(
                        name=e.name,
                        start_ns=start,
                        end_ns=start + dur,
                        domain=_ANNOTATION_CATS.get(cat, "host"),  # type: ignore[arg-type]
                        rank=self.rank,
                        thread=_int(e.tid),
                    )
                )
        numbers.count_dropped("kernels and memory operations", dropped, self.path)
        out.modules = sorted(modules)
        return out


def _vendor(header: dict[str, Any]) -> Vendor:
    props = header.get("deviceProperties") or []
    name = str(props[0].get("name", "")) if props and isinstance(props[0], dict) else ""
    if "NVIDIA" in name or "cupti_version" in header:
        return "nvidia"
    if any(k in name for k in ("AMD", "Radeon", "Instinct")) or (props and props[0].get("warpSize") == 64):
        return "amd"
    return "unknown"


def _devices(header: dict[str, Any], vendor: Vendor, rank: int | None) -> list[DeviceInfo]:
    out = []
    props = header.get("deviceProperties")
    for p in props if isinstance(props, list) else []:  # untyped header JSON: every field checked
        index = _int(p.get("id")) if isinstance(p, dict) and isinstance(p.get("id"), int | float | str) else None
        if index is None or not isinstance(p, dict):
            continue
        arch = _text(p.get("gcnArchName"))
        major, minor = _int_or_none(p.get("computeMajor")), _int_or_none(p.get("computeMinor", 0))
        if arch is None and vendor == "nvidia" and major is not None:
            arch = f"sm_{major}{minor or 0}"
        elif arch is None and vendor == "amd":  # ROCm torch before gcnArchName: 9.4 is gfx940, 941 or 942
            arch = _amd_arch(_text(p.get("name")))
        device = DeviceInfo(
            index=index,
            vendor=vendor,
            name=_text(p.get("name")) or None,
            arch=arch,
            compute_units=_int_or_none(p.get("numSms")),
            rank=rank,
            compute_capability=None if major is None else f"{major}.{minor or 0}",
            memory_bytes=_int_or_none(p.get("totalGlobalMem")),
        )
        out.append(specs.with_product(device))
    return out


def _amd_arch(name: str | None) -> str | None:
    """The ISA of an AMD device named by its product name (``AMD Instinct MI300X`` → ``gfx942``), from the
    hardware database; None where the name is not there."""
    try:
        return specs.lookup(name).arch or None if name else None
    except InputError:
        return None


def _text(v: object) -> str | None:
    return v if isinstance(v, str) else None


def _int_or_none(v: object) -> int | None:
    return _int(v) if isinstance(v, int | float | str) else None


def _rank_of(header: dict[str, Any], rank: int | None) -> int | None:
    dist = header.get("distributedInfo")
    if rank is None and isinstance(dist, dict) and isinstance(dist.get("rank"), int):
        return int(dist["rank"])
    return rank


@dataclass(frozen=True)
class _Facts:
    """Where the trace ran, from its top-level keys. Kineto writes them before ``traceEvents``; a trace
    re-saved by a Python tool (a trace splitter, a filter) may put them after it, where they are known only
    once the array is read (``late``): then what the records carry is settled at the end (``settled``)."""

    rank: int | None
    vendor: Vendor
    devices: list[DeviceInfo]
    metadata: dict[str, Any]
    late: bool
    header: dict[str, Any]
    asked: int | None  # the rank the caller gave

    @classmethod
    def of(cls, header: dict[str, Any], asked: int | None, trailer: dict[str, Any] | None = None) -> _Facts:
        keys = {**(trailer or {}), **header}
        rank, vendor = _rank_of(keys, asked), _vendor(keys)
        meta = {k: v for k, v in keys.items() if k != "deviceProperties"}
        late = "deviceProperties" not in header
        return cls(rank, vendor, _devices(keys, vendor, rank), meta, late, header, asked)

    def settled(self, trailer: dict[str, Any]) -> _Facts:
        """The facts once the keys after the array are known."""
        return _Facts.of(self.header, self.asked, trailer) if self.late and trailer else self


def _batches(path: Path, rank: int | None) -> Iterator[tuple[Profile, _Batch, _Facts]]:
    """The header's profile (devices, metadata), then each block's records; the last comes with the facts
    settled by the keys after the array."""
    with open_binary(path) as f:
        header, buf = jb.split_header(f, path, b'"traceEvents"', BLOCK_BYTES)
        facts = _Facts.of(header, rank)
        conv = _Batch(path, facts.rank, facts.vendor)
        first = Profile(sources=[str(path)], formats=[FORMAT], devices=facts.devices, metadata=facts.metadata)
        yield first, conv, facts
        for batch, trailer in jb.blocks(f, buf, path, VIEWS["records"], conv.convert, size=BLOCK_BYTES):
            if trailer and facts.late:
                facts = facts.settled(trailer)
                batch.devices = facts.devices
            batch.metadata.update({k: v for k, v in trailer.items() if k != "deviceProperties"})
            yield batch, conv, facts


def stream(path: Path, *, rank: int | None = None) -> Iterator[Profile]:
    """Yield the trace in batches; the first batch carries the devices and metadata the keys before the
    array name, the last those named after it (a rank named there is settled only by ``read``)."""
    for batch, _, _ in _batches(path, rank):
        yield batch


def read(path: Path, *, rank: int | None = None) -> Profile:
    """Read a whole trace; launches whose API call came later in the file get ``launch_ns`` (and whether it
    was a graph launch) here, and every record the rank and vendor the keys after the array may name."""
    triples = list(_batches(path, rank))
    prof = Profile.combine([batch for batch, _, _ in triples])
    prof.sources, prof.formats = [str(path)], [FORMAT]
    _, conv, facts = triples[-1]
    api, graph = conv.api_ns, conv.graph_calls
    prof.launches = [
        msgspec.structs.replace(
            k,
            launch_ns=api[k.correlation_id][0],
            launch_dur_ns=api[k.correlation_id][1],
            graph=k.correlation_id in graph,
        )
        if k.launch_ns is None and k.correlation_id in api
        else k
        for k in prof.launches
    ]
    if (facts.rank, facts.vendor) != (conv.rank, conv.vendor):
        prof.launches = [msgspec.structs.replace(k, rank=facts.rank, vendor=facts.vendor) for k in prof.launches]
        prof.memory_ops = [msgspec.structs.replace(m, rank=facts.rank) for m in prof.memory_ops]
        prof.annotations = [msgspec.structs.replace(a, rank=facts.rank) for a in prof.annotations]
    return prof


class _Ops:
    """The shapes view's ops and kernels by External id (a later op with an id is an inner one, in
    Kineto's order), and every complete op, for the ops around them (``enclosing``)."""

    def __init__(self) -> None:
        self.ops: dict[int, _OpEvent] = {}
        self.launched: dict[int, list[_OpEvent]] = defaultdict(list)
        self.complete: list[_OpEvent] = []

    def keep(self, events: list[_OpEvent]) -> None:
        for e in events:
            ext = e.args.external_id if e.args is not None else None
            if e.cat in _OP_CATS:
                if isinstance(ext, int):
                    self.ops[ext] = e
                if e.ph == "X":
                    self.complete.append(e)
            elif e.cat in _KERNEL_CATS and isinstance(ext, int) and numbers.possible_span_us(e.ts, e.dur):
                # an impossible time (negative, non-finite) is dropped here as the columns drop and count it
                self.launched[ext].append(e)

    def extend(self, later: _Ops) -> None:
        """Add the ops of the next byte range: the same tables as one sequential pass."""
        self.ops.update(later.ops)
        for ext, ks in later.launched.items():
            self.launched[ext].extend(ks)
        self.complete.extend(later.complete)

    def calls(self, *, enclosing: bool) -> list[OpCall]:
        launchers = [(self.ops[ext], ks) for ext, ks in self.launched.items() if ext in self.ops]
        if not enclosing:
            return [_call(op, ks, inner=True) for op, ks in launchers]
        inner = {id(op) for op, _ in launchers}
        return [_call(op, ks, inner=id(op) in inner) for op, ks in _subtrees(self.complete, launchers)]


def _subtrees(
    ops: list[_OpEvent], launchers: list[tuple[_OpEvent, list[_OpEvent]]]
) -> list[tuple[_OpEvent, list[_OpEvent]]]:
    """Each op with the kernels launched by it or by any op nested in it (by time, on its thread)."""
    own = {id(op): ks for op, ks in launchers}
    threads: dict[tuple[Any, Any], list[_OpEvent]] = defaultdict(list)
    for e in ops:
        threads[(e.pid, e.tid)].append(e)
    found: dict[int, tuple[_OpEvent, list[_OpEvent]]] = {}
    for thread in threads.values():
        thread.sort(key=lambda e: (e.ts, -e.dur))  # a parent before the children that start with it
        stack: list[_OpEvent] = []
        for op in thread:
            while stack and op.ts >= stack[-1].ts + stack[-1].dur:
                stack.pop()
            stack.append(op)
            for up in stack if id(op) in own else ():
                found.setdefault(id(up), (up, []))[1].extend(own[id(op)])
    return [(op, sorted(ks, key=lambda k: k.ts)) for op, ks in found.values()]


def _call(op: _OpEvent, ks: list[_OpEvent], *, inner: bool) -> OpCall:
    a = op.args or _OpArgs()
    return OpCall(
        op=op.name,
        input_dims=list(a.dims or []),
        input_types=[str(t) for t in a.types or []],
        input_strides=list(a.strides or []),
        concrete=list(a.concrete or []),
        kernels=[k.name for k in ks],
        kernel_ns=round(sum(k.dur for k in ks) * 1000),
        kernel_each_ns=[round(k.dur * 1000) for k in ks],
        kernel_starts_ns=[round(k.ts * 1000) for k in ks],
        external_id=a.external_id,
        inner=inner,
    )


def _op_columns(events: list[_LeanEvent] | list[_OpEvent], *, linked: bool = True, threads: bool = False) -> OpColumns:
    """``linked``: keep each event's correlation id (kernels, joined to their launch calls); ``threads``:
    host events, whose ``device`` column is their thread id."""
    n = len(events)
    ids: dict[str, int] = {}
    idx = np.fromiter((ids.setdefault(e.name, len(ids)) for e in events), np.int64, n)
    ts = np.fromiter((e.ts for e in events), np.float64, n)
    dur = np.fromiter((e.dur for e in events), np.float64, n)
    raw = [e.tid if threads else e.args.device if e.args is not None else None for e in events]
    try:
        device = np.array(raw, np.int64)
    except (TypeError, ValueError, OverflowError):  # absent (ROCm: the device is the pid), text, or huge
        devs = [_int(d) if d is not None or threads else _int(e.pid) for d, e in zip(raw, events, strict=True)]
        device = np.array([NO_DEVICE if d is None else d for d in devs], np.int64)
    corr, op, stream = (_ids(events), _ids(events, "external_id"), _ids(events, "stream")) if linked else (None,) * 3
    variants, vidx = _variants(events) if linked else ([], None)
    names = list(ids)
    keep = numbers.possible_us(ts, dur)
    if not keep.all():
        what = "host events" if threads else "kernels and memory operations"
        numbers.count_dropped(what, int(n - keep.sum()), "trace")
        ts, dur, device = ts[keep], dur[keep], device[keep]
        corr = corr[keep] if corr is not None else None
        op = op[keep] if op is not None else None
        stream = stream[keep] if stream is not None else None
        vidx = vidx[keep] if vidx is not None else None
        remap: dict[int, int] = {}  # names of the kept events only, in order of first appearance
        idx = np.array([remap.setdefault(i, len(remap)) for i in idx[keep].tolist()], np.int64)
        names = [names[i] for i in remap]
    # np.rint rounds half to even, as Python's round() in the records path: both give the same ns
    return OpColumns(
        names,
        idx,
        np.rint(dur * 1000).astype(np.int64),
        np.rint(ts * 1000).astype(np.int64),
        device,
        corr,
        variants,
        None if vidx is None else variant_ids(variants, vidx),
        op,
        stream,
    )


_NO_ARGS = _LeanArgs()
_ARGS = attrgetter("args")
_VARIANT = attrgetter("grid", "block", "registers", "shared")


def _variants(events: list[_LeanEvent] | list[_OpEvent]) -> tuple[list[Variant], np.ndarray]:
    """Each kernel's variant id and the distinct variants, each parsed once. Per launch only attribute
    gets in C (``attrgetter``) and one dict lookup: this runs for every kernel of the trace."""
    args = list(map(_ARGS, events))
    if None in args:
        args = [a or _NO_ARGS for a in args]
    ids: dict[tuple[Any, ...], int] = {}
    idx = [ids.setdefault(k, len(ids)) for k in map(_VARIANT, args)]
    return [_variant(*k) for k in ids], np.array(idx, np.int32)


def _variant(grid: _Dim3 | None, block: _Dim3 | None, registers: Scalar, shared: Scalar) -> Variant:
    def dims(v: _Dim3 | None) -> tuple[int, int, int] | None:
        d = None if v is None else (_int(v.x), _int(v.y), _int(v.z))
        return d if d is not None and None not in d else None  # type: ignore[return-value]

    return Variant(grid=dims(grid), block=dims(block), registers=_int(registers), shared_bytes=_int(shared))


def _ids(events: list[_LeanEvent] | list[_OpEvent], field: str = "correlation") -> np.ndarray:
    """Each event's correlation (or other id) ``field``, NO_CORRELATION where absent or not an int64."""
    raw = [getattr(e.args, field) if e.args is not None else None for e in events]
    try:
        return np.array(raw, np.int64)  # every id an int: one C loop
    except (TypeError, ValueError, OverflowError):
        if raw.count(None) == len(raw):  # a trace without the field: no Python work per event
            return np.full(len(raw), NO_CORRELATION, np.int64)
        return np.array([_id(v) for v in raw], np.int64)


def _id(v: Any) -> int:
    return column_id(_int_or_none(v))


def _corr(e: _LeanEvent | _OpEvent) -> int:
    return _id(e.args.correlation) if e.args is not None else NO_CORRELATION


def _columns(
    events: list[_LeanEvent] | list[_OpEvent], *, rank: int | None, vendor: Vendor, source: str, ops: _Ops | None
) -> LaunchColumns:
    if ops is not None:
        ops.keep(events)  # type: ignore[arg-type]  # the shapes view decodes _OpEvent
    kernels = [e for e in events if e.cat in _KERNEL_CATS]
    memory = [e for e in events if e.cat in _MEMORY_CATS]
    api = [(c, e.ts, e.dur, e.name) for e in events if e.cat in _API_CATS and (c := _corr(e)) != NO_CORRELATION]
    corr = np.array([a[0] for a in api], np.int64)
    ts, took = (np.array([a[i] for a in api], np.float64) for i in (1, 2))
    keep = numbers.possible_us(ts, took)  # an impossible call time links nothing
    corr = corr[keep]
    ns, took_ns = (np.rint(v[keep] * 1000).astype(np.int64) for v in (ts, took))
    graph = np.array([_GRAPH_LAUNCH in a[3] for a in api], np.int64)[keep]
    marks = [(e.ts, e.dur, e.name) for e in events if e.cat == "user_annotation" and e.name.startswith(HARNESS_MARK)]
    # only kernels are joined to their launch calls (the records path links kernels alone, too)
    mem = _op_columns(memory, linked=False)
    host = _op_columns([e for e in events if e.cat in _HOST_CATS and e.dur > 0], linked=False, threads=True)
    cols = LaunchColumns(_op_columns(kernels), mem, rank, vendor, source, corr, ns, took_ns, graph, host=host)
    if not marks:
        return cols
    ts, dur = (np.array([m[i] for m in marks], np.float64) for i in (0, 1))
    with np.errstate(invalid="ignore", over="ignore"):
        ok = numbers.possible_us(ts, dur) & ((ts + dur) * 1000 < numbers.INT64_MAX)
    ranges = np.rint(np.stack([ts[ok], ts[ok] + dur[ok]], axis=1) * 1000).astype(np.int64)
    labels = [m[2].removeprefix(HARNESS_MARK) for m, good in zip(marks, ok.tolist(), strict=True) if good]
    return replace(cols, harness_marks=ranges, harness_labels=labels)


Part = tuple[list[tuple[LaunchColumns, dict[str, Any]]], _Ops | None]  # a worker's range: its columns (with
# the keys after the array, for the last range) and its ops (shapes view)


def _range_columns(
    path: Path, lo: int | None, hi: int | None, rank: int | None, vendor: Vendor, view: View
) -> Part | None:
    """A worker: the columns (and ops) of the items in [lo, hi); None if the range does not decode (bad cut)."""
    ops = _Ops() if view == "shapes" else None
    conv = partial(_columns, rank=rank, vendor=vendor, source=str(path), ops=ops)
    try:
        with open_raw(path) as f:
            f.seek(lo or 0)
            return list(jb.blocks(f, b"", path, VIEWS[view], conv, size=BLOCK_BYTES, stop=hi)), ops
    except (KernelscopeError, msgspec.DecodeError):
        return None


def _parallel(path: Path, start: int, workers: int, rank: int | None, vendor: Vendor, view: View) -> list[Part] | None:
    """Decode the array in ``workers`` byte ranges at once; None when a range cut cannot be trusted."""
    size = path.stat().st_size
    found = [jb.boundary(path, start + (size - start) * j // workers) for j in range(1, workers)]
    cuts = [c for c in found if c is not None]
    if len(cuts) != len(found) or cuts != sorted(set(cuts)) or cuts[:1] == [start]:
        return None
    bounds: list[int | None] = [start, *cuts, None]
    with get_context("fork").Pool(workers) as pool:
        parts = pool.starmap(_range_columns, [(path, lo, hi, rank, vendor, view) for lo, hi in pairwise(bounds)])
    return None if any(p is None for p in parts) else [p for p in parts if p is not None]


def stream_columns(path: Path, *, rank: int | None = None, workers: int | None = None) -> Iterator[LaunchColumns]:
    """Kernel and memory-op columns of the trace, for aggregations (no annotations, no API links).

    A plain (not gzip) file over ``PARALLEL_MIN_BYTES`` is decoded by one process per CPU (``workers``),
    each on a byte range cut at an event boundary; if a cut falls where the ranges do not decode, the
    file is read sequentially instead, which also reports any real damage.
    """
    return _scan(path, rank, workers, None, None)


def read_ops(
    path: Path, *, rank: int | None = None, enclosing: bool = False, workers: int | None = None
) -> tuple[Profile, list[LaunchColumns]]:
    """The op calls that launched kernels, in ``Profile.ops`` (with the trace's devices and metadata), and
    from the same decode the columns ``stream_columns`` gives, for the gap table.

    ``ops`` holds the innermost op per External id; ``enclosing`` adds every op that encloses such calls
    on its thread (``aten::linear`` around ``aten::addmm``), each with the kernels of all the ops below
    it, in launch order.
    """
    ops, head = _Ops(), Profile(sources=[str(path)], formats=[FORMAT])
    columns = list(_scan(path, rank, workers, ops, head))
    head.ops = ops.calls(enclosing=enclosing)
    return head, columns


def read_captured(path: Path) -> list[CapturedLaunch]:
    """The kernel launches a trace recorded while CUDA/HIP graphs were captured, in launch order, each with the
    op call (and its shapes) that made it and the capture it belongs to (``…StreamBeginCapture`` to
    ``…StreamEndCapture``): what a trace of the graphs' replays, whose kernels have no op, is attributed from.
    ROCm's launch calls name their kernel (``args.kernel``); CUDA's do not (``kernel`` is then "")."""
    ops: dict[int, _CaptureEvent] = {}
    launches: list[_CaptureEvent] = []
    bounds: list[tuple[float, bool]] = []  # (time, begins)

    def keep(events: list[_CaptureEvent]) -> None:
        for e in events:
            ext = e.args.external_id if e.args is not None else None
            if e.cat in _OP_CATS and isinstance(ext, int):
                ops[ext] = e  # a later op with the id is an inner one, in Kineto's order
            elif e.cat in _API_CATS and (_launched(e) or _LAUNCH_CALL.search(e.name)):
                launches.append(e)
            elif e.cat in _API_CATS and (_BEGIN_CAPTURE in e.name or _END_CAPTURE in e.name):
                bounds.append((e.ts, _BEGIN_CAPTURE in e.name))

    with open_binary(path) as f:
        _, buf = jb.split_header(f, path, b'"traceEvents"', BLOCK_BYTES)
        for _ in jb.blocks(f, buf, path, _CAPTURE, keep, size=BLOCK_BYTES):
            pass
    bounds.sort()
    times = [when for when, _ in bounds]
    begun = list(accumulate(begins for _, begins in bounds))  # captures begun up to each bound
    calls: dict[int, OpCall] = {}
    out = []
    for e in sorted(launches, key=attrgetter("ts")):
        ext = e.args.external_id if e.args is not None else None
        if isinstance(ext, int) and ext in ops and ext not in calls:
            calls[ext] = _call(ops[ext], [], inner=True)
        call = calls.get(ext) if isinstance(ext, int) else None
        kernel = _launched(e)
        last = bisect_right(times, e.ts) - 1  # the last begin or end at or before the launch
        graph = begun[last] - 1 if last >= 0 and bounds[last][1] else None  # inside the capture that began there
        out.append(CapturedLaunch(kernel=kernel, call=call, graph=graph))
    return out


def _launched(e: _CaptureEvent) -> str:
    """The kernel a launch call names (ROCm's ``args.kernel``); "" where it names none (CUDA's)."""
    kernel = e.args.kernel if e.args is not None else None
    return kernel if isinstance(kernel, str) else ""


def _scan(
    path: Path, rank: int | None, workers: int | None, ops: _Ops | None, head: Profile | None
) -> Iterator[LaunchColumns]:
    """The columns view, or with ``ops`` the shapes view (ops kept there, the trace's devices and metadata
    put in ``head``), in parallel byte ranges where the file allows it. Where the facts may come after the
    array (``_Facts.late``) the columns are held until it ends and then carry the rank and vendor named there."""
    first: _Facts | None = None
    held: list[LaunchColumns] = []
    tail: dict[str, Any] = {}
    for cols, facts, trailer in _pairs(path, rank, workers, ops):
        first, tail = first or facts, trailer or tail
        if facts.late:
            held.append(cols)
        else:
            yield cols
    if first is None:
        return
    facts = first.settled(tail)
    if head is not None:
        head.devices, head.metadata = facts.devices, facts.metadata
    for cols in held:
        yield (
            cols
            if (cols.rank, cols.vendor) == (facts.rank, facts.vendor)
            else replace(cols, rank=facts.rank, vendor=facts.vendor)
        )


def _pairs(
    path: Path, rank: int | None, workers: int | None, ops: _Ops | None
) -> Iterator[tuple[LaunchColumns, _Facts, dict[str, Any]]]:
    """Each batch of columns, with the header's facts and (for the last) the keys after the array."""
    view: View = "columns" if ops is None else "shapes"
    with open_binary(path) as f:
        header, buf = jb.split_header(f, path, b'"traceEvents"', BLOCK_BYTES)
        facts = _Facts.of(header, rank)
        n = workers if workers is not None else (os.cpu_count() or 1)
        lead = len(buf) - len(buf.lstrip())
        if n > 1 and buf[lead : lead + 1] == b"{" and not is_gzip(path) and path.stat().st_size >= PARALLEL_MIN_BYTES:
            parts = _parallel(path, f.tell() - len(buf) + lead, n, facts.rank, facts.vendor, view)
            if parts is not None:
                for part, part_ops in parts:
                    if ops is not None and part_ops is not None:
                        ops.extend(part_ops)
                    yield from ((cols, facts, trailer) for cols, trailer in part)
                return
        conv = partial(_columns, rank=facts.rank, vendor=facts.vendor, source=str(path), ops=ops)
        for cols, trailer in jb.blocks(f, buf, path, VIEWS[view], conv, size=BLOCK_BYTES):
            yield cols, facts, trailer
