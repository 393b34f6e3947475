"""PyTorch profiler (Kineto) Chrome trace, ``.json`` or ``.json.gz``, CUDA and ROCm builds.

Streams: the ``traceEvents`` array is cut into blocks at event boundaries and each block is decoded by
msgspec into typed events, so memory stays bounded by the block size plus the records kept.
A cut is verified by the decode itself: a cut inside a string or a nested object leaves invalid JSON
(strings cannot hold a bare quote), so a block that decodes is a whole number of events.

Vendor quirks, all here: ``cat`` is ``kernel``/``gpu_memcpy``/``gpu_memset`` since 2022 and
``Kernel``/``Memcpy``/``Memset`` before; ``ts``/``dur`` are microseconds (floats with ns fractions);
``args.grid`` counts blocks; ROCm traces may lack grid/block, carry ``stream`` as a hex string on API
events, and put the device in ``pid``. ``ProfilerStep#N`` is a ``user_annotation`` (``cpu_op`` in old
versions) and is repeated as ``gpu_user_annotation`` on the GPU track.
"""

from __future__ import annotations

import gc
import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import msgspec

from kernelscope.errors import FormatError
from kernelscope.model import Annotation, DeviceInfo, Dim3, KernelLaunch, MemoryOp, Profile, Vendor
from kernelscope.model.records import items_from_blocks
from kernelscope.readers._io import open_binary

FORMAT = "kineto"
BLOCK_BYTES = 8 << 20

_KERNEL_CATS = frozenset({"kernel", "Kernel"})
_MEMORY_CATS = {"gpu_memcpy": "memcpy", "Memcpy": "memcpy", "gpu_memset": "memset", "Memset": "memset"}
_API_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "runtime"})
_ANNOTATION_CATS = {"user_annotation": "host", "gpu_user_annotation": "gpu", "gpu_user_Annotation": "gpu"}
_SEP = re.compile(rb"\}\s*,\s*\{")

Scalar = int | float | str | None


class _Args(msgspec.Struct, gc=False):
    device: Scalar = None
    stream: Scalar = None
    correlation: Scalar = None
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


_DECODER = msgspec.json.Decoder(list[_Event])


def _int(v: Scalar) -> int | None:
    """An integer id from Kineto's mixed spellings (7, "7", "0x0"); None when absent or not a number."""
    if v is None or isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v)
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
        self.api_ns: dict[int, int] = {}  # correlation id -> host time of the launching API call

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
        for e in events:
            cat = e.cat
            if cat in _KERNEL_CATS:
                a = e.args or _Args()
                start = round(e.ts * 1000)
                corr = _int(a.correlation)
                grid, block = self._dim(a.grid), self._dim(a.block)
                launches.append(
                    KernelLaunch(
                        name=names.setdefault(e.name, e.name),
                        start_ns=start,
                        duration_ns=round(e.dur * 1000),
                        vendor=self.vendor,
                        device=_int(a.device) if a.device is not None else _int(e.pid),
                        rank=self.rank,
                        stream=_int(a.stream) if a.stream is not None else _int(e.tid),
                        correlation_id=corr,
                        launch_ns=api_ns.get(corr) if corr is not None else None,
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
                    api_ns[corr] = round(e.ts * 1000)
            elif cat in _MEMORY_CATS:
                a = e.args or _Args()
                mem.append(
                    MemoryOp(
                        name=e.name,
                        kind=_MEMORY_CATS[cat],  # type: ignore[arg-type]
                        start_ns=round(e.ts * 1000),
                        duration_ns=round(e.dur * 1000),
                        device=_int(a.device) if a.device is not None else _int(e.pid),
                        rank=self.rank,
                        stream=_int(a.stream) if a.stream is not None else _int(e.tid),
                        correlation_id=_int(a.correlation),
                        bytes=_int(a.bytes),
                        source=self.path,
                        source_format=FORMAT,
                    )
                )
            elif cat in _ANNOTATION_CATS or (e.ph == "X" and e.name.startswith("ProfilerStep#")):
                start = round(e.ts * 1000)
                notes.append(
                    Annotation(
                        name=e.name,
                        start_ns=start,
                        end_ns=start + round(e.dur * 1000),
                        domain=_ANNOTATION_CATS.get(cat, "host"),  # type: ignore[arg-type]
                        rank=self.rank,
                        thread=_int(e.tid),
                    )
                )
        return out


def _last_separator(buf: bytes) -> re.Match[bytes] | None:
    """The last ``}, {`` between events in the buffer's tail (events are far shorter than 64 KiB)."""
    last = None
    for last in _SEP.finditer(buf, max(0, len(buf) - (1 << 16))):  # noqa: B007 - we want the final match
        pass
    return last


def _read_block(f: IO[bytes], path: Path) -> bytes:
    try:
        return f.read(BLOCK_BYTES)
    except (OSError, EOFError, zlib.error) as exc:
        raise FormatError(path, "a readable (gzip) Kineto trace", f"a damaged file ({exc})") from None


def _decode_obj(data: bytes, path: Path, what: str) -> dict[str, Any]:
    try:
        obj = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise FormatError(path, f"valid JSON in the trace {what}", str(exc)) from None
    return obj if isinstance(obj, dict) else {}


def _decode_events(data: bytes, path: Path) -> list[_Event]:
    try:
        return _DECODER.decode(b"[" + data + b"]")
    except msgspec.ValidationError as exc:
        raise FormatError(path, "Kineto trace events", f"an event of unexpected shape ({exc})") from None


def _split_header(f: IO[bytes], path: Path) -> tuple[dict[str, Any], bytes]:
    """Read up to the opening ``[`` of ``traceEvents``; return the keys before it and the rest read."""
    buf = b""
    while True:
        blk = _read_block(f, path)
        buf += blk
        stripped = buf.lstrip()
        if stripped.startswith(b"["):  # the bare-array form of the Chrome trace format
            return {}, stripped[1:]
        key = buf.find(b'"traceEvents"')
        if key >= 0:
            bracket = buf.find(b"[", key)
            if bracket >= 0:
                head = buf[:key].rstrip().rstrip(b",") + b"}"
                return _decode_obj(head, path, "header"), buf[bracket + 1 :]
        if not blk:
            raise FormatError(path, 'a Kineto trace with a "traceEvents" array', "none")


_TAIL = re.compile(rb"\s*(?:(,)|\}\s*$|$)")  # what may follow the array's "]": more keys, or the end


def _finish(buf: bytes, path: Path) -> tuple[list[_Event], dict[str, Any]]:
    """Decode the last events and the keys after the array; the array's ``]`` is found by trial.

    Each trial costs only the few bytes after a candidate ``]`` (no copies of the buffer), and the
    events are decoded only once the tail is a JSON object: a truncated or damaged file with many
    ``]`` inside its events fails in linear time instead of decoding the buffer once per ``]``.
    """
    work = bytearray(buf)
    end = len(buf)
    while (end := buf.rfind(b"]", 0, end)) >= 0:
        m = _TAIL.match(buf, end + 1)
        if m is None:
            continue
        comma = m.start(1)
        try:
            meta: Any = {}
            if comma >= 0:  # the keys after the array, read as an object: "," becomes "{" for the trial
                work[comma] = ord("{")
                try:
                    meta = msgspec.json.decode(memoryview(work)[comma:])
                finally:
                    work[comma] = ord(",")
            events = _DECODER.decode(b"[" + buf[:end] + b"]")
        except msgspec.DecodeError:
            continue
        return events, meta if isinstance(meta, dict) else {}
    raise FormatError(path, "a complete Kineto trace", "a file that ends inside traceEvents (truncated?)")


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
    for p in header.get("deviceProperties") or []:
        if not isinstance(p, dict) or "id" not in p:
            continue
        arch = p.get("gcnArchName")
        if arch is None and vendor == "nvidia" and "computeMajor" in p:
            arch = f"sm_{p['computeMajor']}{p.get('computeMinor', 0)}"
        out.append(
            DeviceInfo(
                index=int(p["id"]),
                vendor=vendor,
                name=p.get("name"),
                arch=arch,
                compute_units=p.get("numSms"),
                rank=rank,
            )
        )
    return out


@contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cycle collector while a block is decoded and converted (never across a ``yield``).

    A block makes ~100k acyclic objects at once; with the collector on, CPython runs a full collection
    every few thousand of them and each one re-scans the whole block: 40% of the read time at 1.5M events.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _batches(path: Path, rank: int | None) -> Iterator[tuple[Profile, _Batch]]:
    with open_binary(path) as f:
        header, buf = _split_header(f, path)
        dist = header.get("distributedInfo")
        if rank is None and isinstance(dist, dict) and isinstance(dist.get("rank"), int):
            rank = dist["rank"]
        vendor = _vendor(header)
        conv = _Batch(path, rank, vendor)
        first = Profile(
            sources=[str(path)],
            formats=[FORMAT],
            devices=_devices(header, vendor, rank),
            metadata={k: v for k, v in header.items() if k != "deviceProperties"},
        )
        yield first, conv
        while True:
            blk = _read_block(f, path)
            if not blk:
                break
            buf += blk
            last = _last_separator(buf)
            if last is None:
                continue
            with _no_gc():
                try:
                    events = _decode_events(buf[: last.start() + 1], path)
                except msgspec.DecodeError:
                    continue  # the cut fell inside a string: take more data and cut again
                batch = conv.convert(events)
                del events
            buf = buf[last.end() - 1 :]
            yield batch, conv
        with _no_gc():
            events, trailer = _finish(buf, path)
            last_batch = conv.convert(events)
            del events
        last_batch.metadata.update(trailer)
        yield last_batch, conv


def stream(path: Path, *, rank: int | None = None) -> Iterator[Profile]:
    """Yield the trace in batches; the first batch carries devices and metadata."""
    for batch, _ in _batches(path, rank):
        yield batch


def read(path: Path, *, rank: int | None = None) -> Profile:
    """Read a whole trace; launches whose API call came later in the file get ``launch_ns`` here."""
    pairs = list(_batches(path, rank))
    prof = Profile.combine([batch for batch, _ in pairs])
    prof.sources, prof.formats = [str(path)], [FORMAT]
    api = pairs[-1][1].api_ns
    prof.launches = [
        msgspec.structs.replace(k, launch_ns=api[k.correlation_id])
        if k.launch_ns is None and k.correlation_id in api
        else k
        for k in prof.launches
    ]
    return prof
