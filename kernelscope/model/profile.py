"""``Profile``: everything read from one or more profiler outputs, in the canonical records.

A profile round-trips itself (``to_json``/``from_json``/``save``/``load``) and merges with others
(``combine``). New fields get defaults so files written by older versions still load.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import msgspec

from kernelscope.errors import FormatError
from kernelscope.model import numbers, text
from kernelscope.model.files import read_bytes
from kernelscope.model.ops import OpCall
from kernelscope.model.records import Annotation, DeviceInfo, KernelLaunch, KernelStats, MemoryOp

TimingKind = Literal["timeline", "serialized", "none"]
"""How launch times relate: ``timeline`` (real start/end on a clock: Kineto, rocprof, nsys),
``serialized`` (durations only, kernels replayed one at a time: Nsight Compute), ``none`` (stats only)."""


class Profile(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Kernel launches, memory operations, annotations, op calls and devices from profiler output.

    ``stats`` holds per-kernel statistics a profiler computed itself when the input has no launches
    (rocprofv3 ``kernel_stats.csv``). ``sources`` names the files read, ``formats`` their readers.
    """

    launches: list[KernelLaunch] = msgspec.field(default_factory=list)
    memory_ops: list[MemoryOp] = msgspec.field(default_factory=list)
    annotations: list[Annotation] = msgspec.field(default_factory=list)
    devices: list[DeviceInfo] = msgspec.field(default_factory=list)
    stats: list[KernelStats] = msgspec.field(default_factory=list)
    ops: list[OpCall] = msgspec.field(default_factory=list)  # Kineto ops with shapes (``read(view="shapes")``)
    # Python modules whose code ran (a Kineto trace's Python frames): which copy of a kernel the workload used
    modules: list[str] = msgspec.field(default_factory=list)
    sources: list[str] = msgspec.field(default_factory=list)
    formats: list[str] = msgspec.field(default_factory=list)
    timing: TimingKind = "timeline"
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    schema: str = "kernelscope.profile.v1"

    def to_json(self) -> bytes:
        return msgspec.json.encode(self)

    @classmethod
    def from_json(cls, data: bytes | str) -> Profile:
        try:
            return text.json(data, type=cls)
        except msgspec.DecodeError as exc:
            raise FormatError("<profile json>", f"a {cls().schema} document", str(exc)) from None

    def drop_impossible(self) -> Profile:
        """Drop (in place) the records whose times are impossible (negative, beyond int64, ending before they
        start) or whose name is not text (a damaged SQLite file keeps any type in any column), and the
        statistics with negative or non-finite numbers; one ``DroppedRecordsWarning`` counts them. Every
        reader's output passes here (``readers.read``/``stream``)."""
        lists: list[list[Any]] = [self.launches, self.memory_ops, self.annotations]
        dropped = 0
        for items in lists:
            if not all(isinstance(r.name, str) and numbers.possible_times(r) for r in items):
                kept = [r for r in items if isinstance(r.name, str) and numbers.possible_times(r)]
                dropped += len(items) - len(kept)
                items[:] = kept
        if not all(isinstance(s.name, str) and numbers.stats_possible(s) for s in self.stats):
            kept_stats = [s for s in self.stats if isinstance(s.name, str) and numbers.stats_possible(s)]
            dropped += len(self.stats) - len(kept_stats)
            self.stats[:] = kept_stats
        numbers.count_dropped("records", dropped, ", ".join(self.sources) or "input")
        return self

    def save(self, path: str | Path) -> None:
        Path(path).write_bytes(self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> Profile:
        try:
            return cls.from_json(read_bytes(Path(path))).drop_impossible()
        except FormatError as exc:
            raise FormatError(path, exc.expected, exc.found) from None

    @classmethod
    def combine(cls, profiles: list[Profile]) -> Profile:
        """Merge profiles (ranks, repeated captures) into one. Timing degrades to the weakest kind."""
        order: list[TimingKind] = ["timeline", "serialized", "none"]
        out = cls(timing=max((p.timing for p in profiles), key=order.index, default="timeline"))
        for p in profiles:
            out.launches.extend(p.launches)
            out.memory_ops.extend(p.memory_ops)
            out.annotations.extend(p.annotations)
            out.devices.extend(d for d in p.devices if d not in out.devices)
            out.stats.extend(p.stats)
            out.ops.extend(p.ops)
            out.sources.extend(p.sources)
            out.formats.extend(p.formats)
            out.metadata.update(p.metadata)
        out.modules = sorted({m for p in profiles for m in p.modules})
        return out

    @property
    def ranks(self) -> list[int | None]:
        return sorted({launch.rank for launch in self.launches}, key=lambda r: -1 if r is None else r)
