"""rocprofv3 ``--output-format json`` (``<pid>_results.json``, also read gzipped).

The document is ``{"rocprofiler-sdk-tool": [one object per process]}``. It is decoded in one pass by
msgspec into typed structs that name only the fields kept, so the large parts (``strings``, agents'
caches and links, API records) are skipped by the parser rather than built as Python objects.

Vendor quirks, all here:
* ``dispatch_info.grid_size`` counts work-items (HSA AQL semantics), not workgroups; ``grid_blocks``
  is derived with ``blocks_from_items``. ``group_segment_size`` (LDS, static + dynamic, per workgroup)
  and ``private_segment_size`` (scratch, per work-item) are the runtime values of the dispatch.
* ``kernel_symbols`` is a list indexed by ``kernel_id`` with a blank entry 0; symbols are looked up by
  their own ``kernel_id`` field, not list position. ``formatted_kernel_name`` is the name rocprofv3's
  CSV and stats use (truncated under ``--truncate-kernels``, the mangled symbol when demangling fails);
  ``kernel_name`` is the mangled ELF symbol (``...kd``).
* ``dispatch_info.agent_id.handle`` matches ``agents[].id.handle``, an opaque handle. ``device`` is the
  agent's ``logical_node_type_id``: the GPU's index among GPUs ("GPU n" of ``--agent-index
  type-relative``), stable across processes and ``HIP_VISIBLE_DEVICES``, and the same index the rocpd
  reader uses (``agent_type_index``). The CSV's default ``"Agent N"`` is ``logical_node_id``, which also
  counts CPU agents. Agents of ``type`` 2 are GPUs (1 is CPU).
* ``correlation_id.internal`` is the id that links to HIP/HSA API records; ``external`` is the
  roctx/user id. ``stream_id`` and ``correlation_id.ancestor`` exist only in recent versions.
* Timestamps are nanoseconds on ``CLOCK_BOOTTIME``, not epoch times.
* Memory copies are named by ``strings.buffer_records[kind].operations[operation]``
  (``MEMORY_COPY_HOST_TO_DEVICE`` ...); their ``device`` is the GPU end of the copy (destination first).
"""

from __future__ import annotations

import gzip
import mmap
import zlib
from pathlib import Path
from typing import Any

import msgspec

from kernelscope.errors import FormatError
from kernelscope.model import DeviceInfo, Dim3, KernelLaunch, MemoryOp, Profile, text
from kernelscope.model.records import blocks_from_items
from kernelscope.readers._io import open_raw

FORMAT = "rocprof-json"
_GPU = 2  # rocprofiler_agent_type_t: 1 = CPU, 2 = GPU


class _Handle(msgspec.Struct, gc=False):
    handle: int = 0


class _XYZ(msgspec.Struct, gc=False):
    x: int = 1
    y: int = 1
    z: int = 1


class _Corr(msgspec.Struct, gc=False):
    internal: int | None = None
    external: int | None = None


class _DispatchInfo(msgspec.Struct, gc=False):
    agent_id: _Handle
    kernel_id: int
    queue_id: _Handle | None = None
    dispatch_id: int | None = None
    private_segment_size: int | None = None
    group_segment_size: int | None = None
    workgroup_size: _XYZ | None = None
    grid_size: _XYZ | None = None


class _Dispatch(msgspec.Struct, gc=False):
    start_timestamp: int
    end_timestamp: int
    dispatch_info: _DispatchInfo
    correlation_id: _Corr | None = None
    thread_id: int | None = None
    stream_id: _Handle | None = None


class _Copy(msgspec.Struct, gc=False):
    start_timestamp: int
    end_timestamp: int
    kind: int = 0
    operation: int = 0
    dst_agent_id: _Handle | None = None
    src_agent_id: _Handle | None = None
    bytes: int | None = None
    correlation_id: _Corr | None = None
    stream_id: _Handle | None = None


class _Buffers(msgspec.Struct, gc=False):
    kernel_dispatch: list[_Dispatch] = []
    memory_copy: list[_Copy] = []


class _Symbol(msgspec.Struct, gc=False):
    kernel_id: int
    kernel_name: str = ""
    formatted_kernel_name: str = ""
    sgpr_count: int | None = None
    arch_vgpr_count: int | None = None
    accum_vgpr_count: int | None = None


class _Agent(msgspec.Struct, gc=False):
    id: _Handle
    type: int
    name: str | None = None  # the gfx target, e.g. "gfx950"
    product_name: str | None = None
    cu_count: int | None = None
    logical_node_type_id: int | None = None


class _KindNames(msgspec.Struct, gc=False):
    kind: str = ""
    operations: list[str] = []


class _Strings(msgspec.Struct, gc=False):
    buffer_records: list[_KindNames] = []


class _Process(msgspec.Struct, gc=False):
    metadata: dict[str, Any] = {}
    agents: list[_Agent] = []
    kernel_symbols: list[_Symbol] = []
    strings: _Strings | None = None
    buffer_records: _Buffers | None = None


class _Document(msgspec.Struct, gc=False):
    tool: list[_Process] = msgspec.field(name="rocprofiler-sdk-tool")


_DECODER = msgspec.json.Decoder(_Document)
_EXPECTED = 'a rocprofv3 JSON results file ({"rocprofiler-sdk-tool": [...]})'


def _decode(path: Path) -> _Document:
    """The typed document; plain files are decoded from a memory map, without a copy."""
    try:
        with open_raw(path) as f:
            if f.read(2) == b"\x1f\x8b":
                f.seek(0)
                with gzip.open(f) as g:
                    return text.json(g.read(), decoder=_DECODER)
            f.seek(0)
            if path.stat().st_size == 0:
                raise FormatError(path, _EXPECTED, "an empty file")
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                return text.json(m, decoder=_DECODER)
    except msgspec.ValidationError as exc:
        raise FormatError(path, _EXPECTED, f"JSON of another shape ({exc})") from None
    except msgspec.DecodeError as exc:
        raise FormatError(path, _EXPECTED, f"invalid or truncated JSON ({exc})") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise FormatError(path, _EXPECTED, f"a damaged file ({exc})") from None


def _op_name(strings: _Strings | None, kind: int, op: int) -> str:
    kinds = strings.buffer_records if strings is not None else []
    if 0 <= kind < len(kinds) and 0 <= op < len(kinds[kind].operations):
        return kinds[kind].operations[op]
    return f"MEMORY_COPY operation {op}"


def _process(proc: _Process, path: str, rank: int | None) -> Profile:
    out = Profile(sources=[path], formats=[FORMAT])
    gpu_index = {a.id.handle: a.logical_node_type_id for a in proc.agents if a.type == _GPU}
    out.devices = [
        DeviceInfo(
            index=a.logical_node_type_id if a.logical_node_type_id is not None else i,
            vendor="amd",
            name=a.product_name,
            arch=a.name,
            compute_units=a.cu_count,
            rank=rank,
        )
        for i, a in enumerate(a for a in proc.agents if a.type == _GPU)
    ]
    symbols = {s.kernel_id: s for s in proc.kernel_symbols}
    dims: dict[tuple[int, int, int], Dim3] = {}  # one Dim3 object per distinct size

    def dim(v: _XYZ | None) -> Dim3 | None:
        if v is None:
            return None
        key = (v.x, v.y, v.z)
        d = dims.get(key)
        if d is None:
            d = dims[key] = Dim3(*key)
        return d

    bufs = proc.buffer_records or _Buffers()
    for r in bufs.kernel_dispatch:
        info = r.dispatch_info
        sym = symbols.get(info.kernel_id)
        items, block = dim(info.grid_size), dim(info.workgroup_size)
        out.launches.append(
            KernelLaunch(
                name=(sym.formatted_kernel_name or sym.kernel_name) if sym else f"kernel_id {info.kernel_id}",
                mangled=(sym.kernel_name or None) if sym else None,
                start_ns=r.start_timestamp,
                duration_ns=r.end_timestamp - r.start_timestamp,
                vendor="amd",
                device=gpu_index.get(info.agent_id.handle),
                rank=rank,
                stream=r.stream_id.handle if r.stream_id is not None else None,
                queue=info.queue_id.handle if info.queue_id is not None else None,
                correlation_id=r.correlation_id.internal if r.correlation_id is not None else None,
                grid_items=items,
                grid_blocks=blocks_from_items(items, block) if items and block else None,
                block=block,
                vgpr=sym.arch_vgpr_count if sym else None,
                agpr=sym.accum_vgpr_count if sym else None,
                sgpr=sym.sgpr_count if sym else None,
                lds_bytes=info.group_segment_size,
                scratch_bytes=info.private_segment_size,
                source=path,
                source_format=FORMAT,
            )
        )
    for c in bufs.memory_copy:
        dst = gpu_index.get(c.dst_agent_id.handle) if c.dst_agent_id is not None else None
        src = gpu_index.get(c.src_agent_id.handle) if c.src_agent_id is not None else None
        out.memory_ops.append(
            MemoryOp(
                name=_op_name(proc.strings, c.kind, c.operation),
                kind="memcpy",
                start_ns=c.start_timestamp,
                duration_ns=c.end_timestamp - c.start_timestamp,
                device=dst if dst is not None else src,
                rank=rank,
                stream=c.stream_id.handle if c.stream_id is not None else None,
                correlation_id=c.correlation_id.internal if c.correlation_id is not None else None,
                bytes=c.bytes,
                source=path,
                source_format=FORMAT,
            )
        )
    meta = proc.metadata
    node = meta.get("node")
    host = node.get("hostname") if isinstance(node, dict) else None
    out.metadata = {"processes": [{"pid": meta.get("pid"), "command": meta.get("command"), "hostname": host}]}
    return out


def read(path: Path, *, rank: int | None = None) -> Profile:
    """Read every process of a rocprofv3 JSON results file: dispatches, memory copies and GPU agents."""
    doc = _decode(path)
    parts = [_process(p, str(path), rank) for p in doc.tool]
    prof = Profile.combine(parts) if parts else Profile()
    prof.sources, prof.formats = [str(path)], [FORMAT]
    prof.metadata = {"processes": [proc for p in parts for proc in p.metadata["processes"]]}
    return prof
