"""JAX / XLA profiler XPlane (``*.xplane.pb``): what ``jax.profiler.trace`` writes, on CUDA and ROCm alike.

An ``XSpace`` protobuf (schema: ``tsl/profiler/protobuf/xplane.proto`` in XLA, package ``tensorflow.profiler``)
holds planes: ``/device:GPU:N`` per GPU, ``/host:CPU`` for host threads, ``/host:metadata``. A plane's lines
hold events; an event names its kind by ``metadata_id`` (the plane's ``event_metadata``) and its facts as stats
named by the plane's ``stat_metadata``. The schema is rebuilt here from its field numbers (no generated code):
``protobuf`` parses, its C core keeps a multi-hundred-MB space fast.

Vendor quirks, all here:
* GPU work is on lines named ``Stream #N`` (``Stream #17(Kernel)``, ``Stream #8(MemcpyOther)``, plain
  ``Stream #2``); other device lines (``XLA Ops``, ``Steps``, ``XLA Modules``) are derived from them and skipped.
* Times: a line's ``timestamp_ns`` plus each event's ``offset_ps``; durations in picoseconds. Host and device
  lines share the clock. Events that carry ``num_occurrences`` instead of an offset are counts, not times.
* A copy is an event with ``memcpy_details`` or ``memset_details`` (``kind:… size:N``); everything else on a
  stream line is a kernel. ROCm names kernels by their descriptor symbol (``foo.kd``, demangled
  ``ns::foo(int) [clone .kd]``): the suffix is dropped, as Kineto's ROCm traces print the same kernels.
* ``kernel_details`` is ``key:value`` text. Its ``grid`` counts blocks on both vendors (the same ROCm kernel reads
  ``grid:6240`` under XLA's old roctracer collector and its rocprofiler-sdk one). CUDA writes ``regs``,
  ``static_shared``, ``dynamic_shared``; the rocprofiler-sdk collector ``private_mem`` and ``group_mem``. XLA's
  old ROCm collector writes the CUDA keys with uninitialised values (``regs:2191500840``): on AMD only the
  grid and block are read from that form.
* The host call that queued a GPU op is the ``/host:CPU`` event with the same ``correlation_id`` (``cuLaunchKernel``,
  ``hipModuleLaunchKernel``, or the kernel's own name under the old ROCm collector). XLA on CUDA runs a module's
  kernels as a CUDA graph: each carries ``cuda_graph_id`` and the correlation id of one ``cuGraphLaunch``.
* ``jax.profiler.StepTraceAnnotation(name, step_num=N)`` is a host event with a ``step_num`` stat: read as the
  step annotation ``name#N`` (``Annotation.step``), which ``--window N`` selects by.
* Each run of a compiled module is a host event with a ``module_name`` stat (``GpuExecutable::ExecuteThunks``,
  ``jit_train_step``) enclosing the launch calls of its kernels: read as a host annotation named by the module,
  which ``--phase-by`` splits by. XLA's old ROCm collector writes none.
* The device plane's stats describe the GPU (vendor, ``core_count``, ``compute_cap_major/minor``, ``memory_size``,
  ``clock_rate`` in kHz); CUDA adds ``gpu_device_name``, ROCm names no product: ``hw.specs.identify`` matches the
  numbers to one.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kernelscope.errors import FormatError, MissingToolError
from kernelscope.hw import specs
from kernelscope.identity.cxx import strip_suffixes
from kernelscope.model import Annotation, DeviceInfo, Dim3, KernelLaunch, MemoryOp, Profile, Vendor, numbers, text
from kernelscope.model.records import MemoryKind
from kernelscope.readers._io import open_binary, unreadable

FORMAT = "xplane"
_EXPECTED = "a JAX/XLA profiler XPlane (.xplane.pb: an XSpace protobuf)"
_PACKAGE = "tensorflow.profiler"
_DEVICE = re.compile(r"/device:GPU:(\d+)$")
_STREAM = re.compile(r"Stream #(\d+)")
_DETAIL = re.compile(r"(\w+):([\d,]+)")
_MAX_REGISTERS = 255  # CUDA's per-thread limit: a larger count is not a register count
_PLANE_NAMES = (b"/host:", b"/device:", b"Task Environment")
_PROTOBUF = "4.25"  # the oldest protobuf seen to read real XPlanes (4.22-4.24 crash iterating their maps)

Stats = dict[str, Any]


def read(path: Path, *, rank: int | None = None) -> Profile:
    """The kernels and copies of every GPU plane, linked to the host calls that queued them."""
    space = _parse(path)
    planes = [(text.name(p.name), p) for p in space.planes]
    gpus = [(numbers.to_int(m.group(1)), p) for name, p in planes if (m := _DEVICE.fullmatch(name))]
    if not gpus:
        names = ", ".join(sorted({name for name, _ in planes})[:6]) or "no planes"
        raise FormatError(path, _EXPECTED + " with /device:GPU planes", f"none ({names})")
    calls, ranges = _host((p for name, p in planes if name == "/host:CPU"), rank)
    src = str(path)
    launches: list[KernelLaunch] = []
    memory: list[MemoryOp] = []
    devices: list[DeviceInfo] = []
    dropped = 0
    for index, plane in gpus:
        device = _device(index, plane, rank)
        if device is not None:
            devices.append(device)
        vendor: Vendor = device.vendor if device is not None else "unknown"
        dropped += _stream_events(plane, index, vendor, rank, calls, src, launches, memory)
    numbers.count_dropped("GPU events", dropped, src)
    launches.sort(key=lambda k: k.start_ns or 0)
    memory.sort(key=lambda m: m.start_ns or 0)
    return Profile(
        launches=launches,
        memory_ops=memory,
        annotations=ranges,
        devices=devices,
        sources=[src],
        formats=[FORMAT],
    )


def looks_like(head: bytes) -> bool:
    """``head`` opens an XSpace: field 1 (a plane, length-delimited) whose name (field 2) is a plane name.

    Exact enough to tell an XPlane from any text format (which never opens with byte 0x0a then a varint)."""
    pos = _key(head, 0, 0x0A)
    if pos is None:
        return False
    pos = _skip_varint(head, pos)  # the plane's length
    if pos is not None and pos < len(head) and head[pos] == 0x08:  # the plane's id comes first when not 0
        pos = _skip_varint(head, pos + 1)
    pos = _key(head, pos, 0x12) if pos is not None else None
    if pos is None:
        return False
    start = _skip_varint(head, pos)
    return start is not None and head[start:].startswith(_PLANE_NAMES)


def _older(version: str, than: str) -> bool:
    """``version`` sorts before ``than`` by its leading numbers (``4.24.4`` < ``4.25``)."""
    parts = [int(p) for p in re.findall(r"\d+", version)[:2]]
    return parts < [int(p) for p in than.split(".")]


def _key(head: bytes, pos: int, tag: int) -> int | None:
    return pos + 1 if pos < len(head) and head[pos] == tag else None


def _skip_varint(head: bytes, pos: int) -> int | None:
    for i in range(pos, min(pos + 10, len(head))):
        if head[i] < 0x80:
            return i + 1
    return None


def _parse(path: Path) -> Any:
    try:
        from google.protobuf import __version__ as version
        from google.protobuf.message import DecodeError
    except ImportError:
        version = None
    if version is None or _older(version, _PROTOBUF):
        found = f"protobuf {version} (its C core crashes on real XPlanes below {_PROTOBUF})" if version else "protobuf"
        raise MissingToolError(found, "reading an XPlane needs protobuf>=4.25: pip install 'kernelscope[xplane]'")
    try:
        with open_binary(path) as f:
            data = f.read()
    except (EOFError, zlib.error) as exc:
        raise FormatError(path, _EXPECTED, f"a damaged gzip stream ({exc})") from None
    except OSError as exc:
        raise unreadable(path, exc) from None
    space = message_class()()
    try:
        space.ParseFromString(data)
    except (DecodeError, RecursionError) as exc:
        raise FormatError(path, _EXPECTED, f"bytes protobuf cannot parse ({exc})") from None
    return space


# xplane.proto's messages as data: message -> (its oneof, its fields). A field is (name, number, type) where the
# type is a scalar or a message of this file; "*" marks it repeated, "|" a member of the oneof. Text fields are
# declared bytes (the same wire format): a name with invalid UTF-8 is decoded with U+FFFD (model.text) rather
# than failing the whole parse, as protobuf's string type would.
_SCHEMA: dict[str, tuple[str, list[tuple[str, int, str]]]] = {
    "XSpace": ("", [("planes", 1, "XPlane*"), ("hostnames", 4, "bytes*")]),
    "XPlane": ("", [
        ("id", 1, "int64"), ("name", 2, "bytes"), ("lines", 3, "XLine*"),
        ("event_metadata", 4, "XPlane.EventMetadataEntry*"), ("stat_metadata", 5, "XPlane.StatMetadataEntry*"),
        ("stats", 6, "XStat*"),
    ]),
    "XLine": ("", [("id", 1, "int64"), ("name", 2, "bytes"), ("timestamp_ns", 3, "int64"), ("events", 4, "XEvent*")]),
    "XEvent": ("data", [
        ("metadata_id", 1, "int64"), ("offset_ps", 2, "int64|"), ("duration_ps", 3, "int64"), ("stats", 4, "XStat*"),
        ("num_occurrences", 5, "int64|"),
    ]),
    "XStat": ("value", [
        ("metadata_id", 1, "int64"), ("double_value", 2, "double|"), ("uint64_value", 3, "uint64|"),
        ("int64_value", 4, "int64|"), ("str_value", 5, "bytes|"), ("bytes_value", 6, "bytes|"),
        ("ref_value", 7, "uint64|"),
    ]),
    "XEventMetadata": ("", [("id", 1, "int64"), ("name", 2, "bytes"), ("stats", 5, "XStat*")]),
    "XStatMetadata": ("", [("id", 1, "int64"), ("name", 2, "bytes")]),
}  # fmt: skip
_MAPS = {"EventMetadataEntry": "XEventMetadata", "StatMetadataEntry": "XStatMetadata"}  # XPlane's map<int64, …>


@cache
def message_class() -> Any:
    """The ``XSpace`` message class, built from ``_SCHEMA``."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    scalars = {"int64": F.TYPE_INT64, "uint64": F.TYPE_UINT64, "double": F.TYPE_DOUBLE, "bytes": F.TYPE_BYTES}
    fd = descriptor_pb2.FileDescriptorProto(name="kernelscope_xplane.proto", package=_PACKAGE, syntax="proto3")

    def add(into: Any, name: str, oneof: str, fields: list[tuple[str, int, str]]) -> Any:
        m = into.add(name=name)
        if oneof:
            m.oneof_decl.add(name=oneof)
        for field, number, kind in fields:
            base = kind.rstrip("*|")
            label = F.LABEL_REPEATED if kind.endswith("*") else F.LABEL_OPTIONAL
            f = m.field.add(name=field, number=number, label=label, type=scalars.get(base, F.TYPE_MESSAGE))
            if base not in scalars:
                f.type_name = f".{_PACKAGE}.{base}"
            if kind.endswith("|"):
                f.oneof_index = 0
        return m

    for name, (oneof, fields) in _SCHEMA.items():
        m = add(fd.message_type, name, oneof, fields)
        for entry, value in _MAPS.items() if name == "XPlane" else ():
            add(m.nested_type, entry, "", [("key", 1, "int64"), ("value", 2, value)]).options.map_entry = True
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.XSpace"))


def _names(metadata: Any) -> dict[int, str]:
    """A metadata map as a dict: id -> name, read once per plane (a protobuf map lookup costs far more)."""
    return {k: text.name(v.name) for k, v in metadata.items()}


def _stats(names: dict[int, str], *groups: Iterable[Any]) -> Stats:
    """Stats by lower-case name (``names``: the plane's stat metadata); a ``ref_value`` is the name of another
    stat metadata (how XPlane interns strings)."""
    out: Stats = {}
    for group in groups:
        for st in group:
            which = st.WhichOneof("value")
            if which is None or st.metadata_id not in names:
                continue
            value = getattr(st, which)
            if which == "ref_value":
                value = names.get(value)
            elif which == "str_value":
                value = text.name(value)
            out[names[st.metadata_id].lower()] = value  # CUDA writes Memset_details, memcpy_details
    return out


def _host(planes: Iterable[Any], rank: int | None) -> tuple[dict[int, tuple[int, int, bool]], list[Annotation]]:
    """correlation id -> (start ns, duration ns, a graph launch?) of the host call that queued each GPU op; and
    the ranges: the steps the program marked (``jax.profiler.StepTraceAnnotation``: an event with a ``step_num``
    stat) and each run of a compiled module (an event with a ``module_name`` stat)."""
    calls: dict[int, tuple[int, int, bool]] = {}
    ranges: list[Annotation] = []
    for plane in planes:
        stat_names = _names(plane.stat_metadata)
        wanted = {k: name for k, name in stat_names.items() if name in ("correlation_id", "step_num", "module_name")}
        names = _names(plane.event_metadata)
        for line in plane.lines:
            for ev in line.events:
                if not ev.stats or ev.WhichOneof("data") != "offset_ps":
                    continue
                found = {wanted[st.metadata_id]: st for st in ev.stats if st.metadata_id in wanted}
                times = _times(line, ev) if found else None
                if times is None:
                    continue
                name = names.get(ev.metadata_id, "")
                key = _stat_int(found.get("correlation_id"))
                if key is not None:
                    calls.setdefault(key, (*times, "GraphLaunch" in name))
                start, end = times[0], times[0] + times[1]
                number = _stat_int(found.get("step_num"))
                if number is not None and number >= 0:
                    ranges.append(
                        Annotation(name=f"{name}#{number}", start_ns=start, end_ns=end, rank=rank, step=number)
                    )
                module = _stats(stat_names, [found["module_name"]]).get("module_name") if "module_name" in found else ""
                if module and isinstance(module, str):
                    ranges.append(Annotation(name=module, start_ns=start, end_ns=end, rank=rank))
    return calls, ranges


def _stat_int(st: Any) -> int | None:
    """A stat's value as an int64 (None: no stat, or a value of another kind)."""
    return None if st is None else numbers.to_int(getattr(st, st.WhichOneof("value") or "int64_value"))


def _times(line: Any, ev: Any) -> tuple[int, int] | None:
    """(start ns, duration ns), or None where they are impossible (negative, beyond int64)."""
    start = numbers.to_int(line.timestamp_ns * 1000 + ev.offset_ps)
    duration = numbers.to_duration(round(ev.duration_ps / 1000))
    if start is None or start < 0 or duration is None:
        return None
    return start // 1000, duration


def _device(index: int | None, plane: Any, rank: int | None) -> DeviceInfo | None:
    st = _stats(_names(plane.stat_metadata), plane.stats)
    if index is None or (not st and not plane.lines):
        return None  # a GPU the run did not use (XLA writes an empty plane for it), or one past int64
    vendor = _vendor(str(st.get("device_vendor", "")), _names(plane.event_metadata).values())
    major, minor = numbers.to_int(st.get("compute_cap_major")), numbers.to_int(st.get("compute_cap_minor"))
    capability = None if major is None or minor is None else f"{major}.{minor}"
    clock_khz = numbers.to_int(st.get("clock_rate"))
    name = st.get("gpu_device_name")
    device = DeviceInfo(
        index=index,
        vendor=vendor,
        name=name if isinstance(name, str) and name else None,
        arch=f"sm_{major}{minor}" if vendor == "nvidia" and capability else None,
        compute_units=numbers.to_duration(st.get("core_count")),
        rank=rank,
        compute_capability=capability,
        memory_bytes=numbers.to_duration(st.get("memory_size")),
        clock_mhz=clock_khz // 1000 if clock_khz is not None and clock_khz > 0 else None,
    )
    return specs.with_product(device)


def _vendor(stated: str, kernels: Iterable[str]) -> Vendor:
    """The plane's ``device_vendor``; without one (XLA's old ROCm collector wrote none), ROCm's ``.kd`` names."""
    low = stated.lower()
    if "nvidia" in low:
        return "nvidia"
    if "amd" in low or "advanced micro" in low:
        return "amd"
    if any(strip_suffixes(name) != name for name in kernels):
        return "amd"
    return "unknown"


def _stream_events(
    plane: Any,
    device: int | None,
    vendor: Vendor,
    rank: int | None,
    calls: dict[int, tuple[int, int, bool]],
    src: str,
    launches: list[KernelLaunch],
    memory: list[MemoryOp],
) -> int:
    """Append the plane's kernels and copies; return how many were dropped for impossible times."""
    dropped = 0
    names = {k: strip_suffixes(v) for k, v in _names(plane.event_metadata).items()}
    stat_names = _names(plane.stat_metadata)
    for line in plane.lines:
        m = _STREAM.match(text.name(line.name))
        if m is None:
            continue
        stream = numbers.to_int(m.group(1))  # None past int64: the work is kept, its stream unknown
        for ev in line.events:
            if ev.WhichOneof("data") == "num_occurrences":
                continue
            times = _times(line, ev)
            if times is None:
                dropped += 1
                continue
            st = _stats(stat_names, ev.stats)
            name = names.get(ev.metadata_id) or "unnamed"
            corr = numbers.to_int(st.get("correlation_id"))
            copy = st.get("memcpy_details") or st.get("memset_details")
            where: dict[str, Any] = {  # what a copy and a kernel both record
                "name": name,
                "start_ns": times[0],
                "duration_ns": times[1],
                "device": device,
                "rank": rank,
                "stream": stream,
                "correlation_id": corr,
                "source": src,
                "source_format": FORMAT,
            }
            if copy is not None:
                kind: MemoryKind = "memset" if "memset_details" in st else "memcpy"
                memory.append(MemoryOp(kind=kind, bytes=_size(str(copy)), **where))
                continue
            call = calls.get(corr) if corr is not None else None
            launches.append(
                KernelLaunch(
                    vendor=vendor,
                    launch_ns=call[0] if call else None,
                    launch_dur_ns=call[1] if call else None,
                    graph="cuda_graph_id" in st or (call is not None and call[2]),
                    **where,
                    **_details(str(st.get("kernel_details", "")), vendor),
                )
            )
    return dropped


@lru_cache(maxsize=4096)  # a capture repeats a few launch shapes thousands of times
def _details(text: str, vendor: Vendor) -> Mapping[str, Any]:
    """KernelLaunch fields from ``kernel_details`` (``grid:1280,1,1 block:256,1,1 group_mem:2112 …``)."""
    d = {k: [numbers.to_duration(x) for x in v.split(",") if x] for k, v in _DETAIL.findall(text)}
    out: dict[str, Any] = {"grid_blocks": _dim3(d.get("grid")), "block": _dim3(d.get("block"))}
    if "group_mem" in d or "private_mem" in d:  # XLA's rocprofiler-sdk collector
        out["lds_bytes"] = _one(d.get("group_mem"))
        out["scratch_bytes"] = _one(d.get("private_mem"))
    elif vendor == "nvidia":
        regs, static, dynamic = _one(d.get("regs")), _one(d.get("static_shared")), _one(d.get("dynamic_shared"))
        out["registers"] = regs if regs is not None and regs <= _MAX_REGISTERS else None
        out["lds_bytes"] = static + dynamic if static is not None and dynamic is not None else None
    return MappingProxyType(out)  # shared by every launch of the shape: read-only


def _one(values: list[int | None] | None) -> int | None:
    return values[0] if values and len(values) == 1 else None


def _dim3(values: list[int | None] | None) -> Dim3 | None:
    if values is None or len(values) != 3 or any(v is None or v < 1 for v in values):
        return None
    x, y, z = (int(v or 0) for v in values)
    return Dim3(x, y, z)


def _size(details: str) -> int | None:
    m = re.search(r"size:(\d+)", details)
    return numbers.to_duration(m.group(1)) if m else None
