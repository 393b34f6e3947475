"""rocprof v1/v2 Chrome-trace JSON (``rocprof --hip-trace``/``--sys-trace`` → ``results.json``).

Not a PyTorch (Kineto) trace, though both are Chrome traces: there is no ``cat``; what an event is comes from the
process it sits in, named by ``process_name`` metadata events: ``GPU<n>`` holds kernels, ``COPY`` the copies, ``CPU
HIP API``/``CPU HSA API`` the host calls. Every value is a string (``"ts": "773902406300"``); ``ts``/``dur`` are
whole microseconds, so times come from ``args.BeginNs``/``args.EndNs`` (nanoseconds). ``dev-id`` is the HSA agent,
``stream-id`` the HIP stream. The host calls are linked to the GPU work only by flow events: not read (the
launch links and the idle split need them; ``results.csv`` and the rocprofv3 formats give what there is).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from kernelscope.model import KernelLaunch, MemoryOp, Profile, numbers
from kernelscope.readers import _json_blocks as jb
from kernelscope.readers._io import open_binary

FORMAT = "rocprof-v1-json"
BLOCK_BYTES = 1 << 24
_GPU = re.compile(r"^GPU(\d+)$")
_COPY = "COPY"
# what tells this trace from a Kineto one in its first bytes: rocprof's process names and its ns arguments
MARKERS = (b'"CPU HIP API"', b'"CPU HSA API"', b'"BeginNs"')

Scalar = int | float | str | None


class _Args(msgspec.Struct, gc=False):
    name: Any = None  # a process_name event's process name
    begin: Scalar = msgspec.field(default=None, name="BeginNs")
    end: Scalar = msgspec.field(default=None, name="EndNs")
    stream: Scalar = msgspec.field(default=None, name="stream-id")
    device: Scalar = msgspec.field(default=None, name="dev-id")


class _Event(msgspec.Struct, gc=False):
    ph: Any = None
    name: Any = None
    pid: Scalar = None
    args: _Args | None = None


_DECODER = msgspec.json.Decoder(list[_Event], strict=False)


class _Batch:
    """Events to records; the process names (metadata, first in the file) say which pids are GPUs and copies."""

    def __init__(self, path: Path, rank: int | None) -> None:
        self.src, self.rank = str(path), rank
        self.process: dict[str, str] = {}
        self.dropped = 0

    def convert(self, events: list[_Event]) -> Profile:
        out = Profile(sources=[self.src], formats=[FORMAT])
        for e in events:
            pid = str(e.pid)
            if e.ph == "M" and e.name == "process_name" and e.args is not None and isinstance(e.args.name, str):
                self.process[pid] = e.args.name
            if e.ph != "X" or e.args is None or not isinstance(e.name, str):
                continue
            where = self.process.get(pid, "")
            gpu = _GPU.match(where)
            if gpu is None and where != _COPY:
                continue  # host API calls
            start, end = numbers.to_int(e.args.begin), numbers.to_int(e.args.end)
            duration = numbers.span(start, end)
            if start is None or duration is None or start < 0:
                self.dropped += 1
                continue
            stream, device = numbers.to_int(e.args.stream), numbers.to_int(e.args.device)
            if gpu is not None:
                kernel = KernelLaunch(
                    name=e.name,
                    start_ns=start,
                    duration_ns=duration,
                    vendor="amd",
                    device=device if device is not None else int(gpu.group(1)),
                    rank=self.rank,
                    stream=stream,
                    source=self.src,
                    source_format=FORMAT,
                )
                out.launches.append(kernel)
            else:
                copy = MemoryOp(
                    name=e.name,
                    kind="memcpy",
                    start_ns=start,
                    duration_ns=duration,
                    device=device,
                    rank=self.rank,
                    stream=stream,
                    source=self.src,
                    source_format=FORMAT,
                )
                out.memory_ops.append(copy)
        return out


def _batches(path: Path, rank: int | None) -> Iterator[Profile]:
    conv = _Batch(path, rank)
    with open_binary(path) as f:
        _, buf = jb.split_header(f, path, b'"traceEvents"', BLOCK_BYTES)
        for batch, _ in jb.blocks(f, buf, path, _DECODER, conv.convert, size=BLOCK_BYTES):
            yield batch
    numbers.count_dropped("kernels and copies", conv.dropped, path)


def stream(path: Path, *, rank: int | None = None) -> Iterator[Profile]:
    yield from _batches(path, rank)


def read(path: Path, *, rank: int | None = None) -> Profile:
    """Kernels and copies of a rocprof v1/v2 JSON trace."""
    prof = Profile.combine(list(_batches(path, rank)))
    prof.sources, prof.formats = [str(path)], [FORMAT]
    return prof
