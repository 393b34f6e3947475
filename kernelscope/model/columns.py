"""Columnar batches: the launches of one batch as numpy columns, for aggregations over millions.

A ``KernelLaunch`` record costs a Python object per launch; the gap analysis needs only names,
times and devices. Readers of formats that can be huge produce ``LaunchColumns`` directly
(``stream_columns``); every other reader's records are turned into columns by ``from_profile``, so the
analysis has one input and one code path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from kernelscope.model import numbers
from kernelscope.model.gap import Variant
from kernelscope.model.profile import Profile
from kernelscope.model.records import Annotation, KernelLaunch, MemoryOp, Vendor

NO_DEVICE = -1  # column value for "device unknown"; never leaves the columns
NO_CORRELATION = -1  # column value for "launching API call unknown"
NO_VARIANT = -1  # column value for "launch configuration not recorded"
# a host annotation around benchmarking (kscope's profiling hook writes it; its copy there is HARNESS_MARK)
HARNESS_MARK = "kscope::harness::"


def _possible(k: KernelLaunch | MemoryOp) -> bool:
    return (
        numbers.is_duration(k.duration_ns)
        and (k.start_ns is None or numbers.is_duration(k.start_ns))
        and (k.device is None or numbers.is_int64(k.device))
    )


@dataclass(frozen=True)
class OpColumns:
    """One kind of GPU operation as columns; ``names[name_idx[i]]`` is the i-th operation's name.

    ``start_ns`` is ``None`` when the profiler keeps no timeline (Nsight Compute).
    """

    names: list[str]
    name_idx: np.ndarray  # int64
    duration_ns: np.ndarray  # int64
    start_ns: np.ndarray | None  # int64
    device: np.ndarray  # int64, NO_DEVICE where unknown
    correlation: np.ndarray | None = None  # int64, the launching API call's id; NO_CORRELATION where unknown
    # kernels: ``variants[variant_idx[i]]`` is the i-th launch's configuration; NO_VARIANT where not recorded
    variants: list[Variant] = field(default_factory=list)
    variant_idx: np.ndarray | None = None  # int32
    # kernels: the host op call that launched each (Kineto's External id); NO_CORRELATION where unknown
    op: np.ndarray | None = None
    stream: np.ndarray | None = None  # kernels: the stream each ran on; NO_CORRELATION where unknown

    def __len__(self) -> int:
        return int(self.duration_ns.size)

    @classmethod
    def empty(cls) -> OpColumns:
        z = np.zeros(0, np.int64)
        return cls([], z, z, z, z)

    @classmethod
    def from_records(cls, items: Sequence[KernelLaunch] | Sequence[MemoryOp]) -> OpColumns:
        """Columns of records that share a timing kind (all with a start, or all without); records with an
        impossible time (negative, non-finite, not an int64) are dropped and counted (``numbers``)."""
        recs: Sequence[KernelLaunch | MemoryOp] = items
        if not all(_possible(k) for k in items):
            recs = [k for k in items if _possible(k)]
            numbers.count_dropped("records", len(items) - len(recs), items[0].source or "input")
        ids: dict[str, int] = {}
        idx = [ids.setdefault(k.name, len(ids)) for k in recs]
        starts = [k.start_ns for k in recs]
        variants: dict[Variant, int] = {}
        launches = [k for k in recs if isinstance(k, KernelLaunch)]
        vidx = [variants.setdefault(Variant.of(k), len(variants)) for k in launches]
        return cls(
            names=list(ids),
            name_idx=np.array(idx, np.int64),
            duration_ns=np.array([k.duration_ns for k in recs], np.int64),
            start_ns=None if not recs or starts[0] is None else np.array(starts, np.int64),
            device=np.array([NO_DEVICE if k.device is None else k.device for k in recs], np.int64),
            correlation=np.array([column_id(k.correlation_id) for k in recs], np.int64),
            variants=list(variants),
            variant_idx=variant_ids(list(variants), np.array(vidx, np.int32)) if len(launches) == len(recs) else None,
            op=np.array([column_id(k.op_id) for k in launches], np.int64) if len(launches) == len(recs) else None,
            stream=np.array([column_id(k.stream) for k in launches], np.int64) if len(launches) == len(recs) else None,
        )


def variant_ids(variants: list[Variant], idx: np.ndarray) -> np.ndarray:
    """``idx`` into ``variants`` with the unrecorded variant (every field None) as NO_VARIANT."""
    lookup = np.array([i if v.recorded() else NO_VARIANT for i, v in enumerate(variants)] or [0], np.int32)
    return lookup[idx] if idx.size else idx


@dataclass(frozen=True)
class LaunchColumns:
    """Kernels and memory operations of one batch, all of one rank and vendor."""

    kernels: OpColumns
    memory: OpColumns
    rank: int | None = None
    vendor: Vendor = "unknown"
    source: str | None = None
    # the host start (ns) of launching API calls by their correlation id, for the kernels' launch times
    api_corr: np.ndarray | None = None
    api_ns: np.ndarray | None = None
    api_dur_ns: np.ndarray | None = None  # each launching call's duration
    api_graph: np.ndarray | None = None  # 1 where the call is a graph launch (its kernels are a replay)
    # host ranges (start, end ns; shape (n, 2)) annotated HARNESS_MARK...: kernels launched inside are harness;
    # ``harness_labels[i]``: what the i-th range marks (the annotation's name after HARNESS_MARK)
    harness_marks: np.ndarray | None = None
    harness_labels: list[str] = field(default_factory=list)
    # host work (ops, ranges, Python frames, runtime calls) with its thread id in ``device``: what the host
    # was doing while the GPU waited for it (Kineto's columns; the records path gives its annotations)
    host: OpColumns | None = None

    @classmethod
    def from_profile(cls, profile: Profile) -> list[LaunchColumns]:
        """The profile's launches and memory ops as columns, one batch per (rank, vendor, timed)."""
        groups: dict[tuple[int | None, Vendor, bool], tuple[list[KernelLaunch], list[MemoryOp]]] = {}
        for k in profile.launches:
            groups.setdefault((k.rank, k.vendor, k.start_ns is not None), ([], []))[0].append(k)
        for m in profile.memory_ops:
            groups.setdefault((m.rank, "unknown", m.start_ns is not None), ([], []))[1].append(m)
        source = profile.sources[0] if profile.sources else None
        marks: dict[int | None, list[Annotation]] = {}
        hosts: dict[int | None, list[Annotation]] = {}
        for a in profile.annotations:
            if a.domain == "host":
                hosts.setdefault(a.rank, []).append(a)
                if a.name.startswith(HARNESS_MARK) and _timed(a):
                    marks.setdefault(a.rank, []).append(a)
        out = []
        for (rank, vendor, _), (ks, ms) in groups.items():
            linked = [
                (k.correlation_id, k.launch_ns, k.launch_dur_ns if numbers.is_duration(k.launch_dur_ns) else 0, k.graph)
                for k in ks
                if k.correlation_id is not None
                and numbers.is_int64(k.correlation_id)
                and k.launch_ns is not None  # a call at the trace's time 0 is linked too
                and numbers.is_duration(k.launch_ns)
            ]
            corr, ns, took, graph = (
                (np.array(c, np.int64) for c in zip(*linked, strict=True)) if linked else (None,) * 4
            )
            kern, mem = OpColumns.from_records(ks), OpColumns.from_records(ms)
            cols = cls(kern, mem, rank, vendor, source, corr, ns, took, graph)
            out.append(cols)
        for rank in marks.keys() | hosts.keys():  # on the first batch of their rank, or on their own
            at = next((i for i, c in enumerate(out) if c.rank == rank), None)
            ranges = marks.get(rank, [])
            extra = {
                "harness_marks": np.array([(a.start_ns, a.end_ns) for a in ranges], np.int64).reshape(-1, 2),
                "harness_labels": [a.name.removeprefix(HARNESS_MARK) for a in ranges],
                "host": _annotation_columns(hosts.get(rank, [])),
            }
            if at is None:
                out.append(cls(OpColumns.empty(), OpColumns.empty(), rank, source=source, **extra))  # type: ignore[arg-type]
            else:
                out[at] = replace(out[at], **extra)  # type: ignore[arg-type]
        return out


def column_id(c: int | None, missing: int = NO_CORRELATION) -> int:
    """An id (correlation, op call, stream, thread) as a column value: ``missing`` when absent or beyond int64."""
    return c if c is not None and numbers.is_int64(c) else missing


def _timed(a: Annotation) -> bool:
    """An annotation whose start and duration are possible times (a damaged file's are dropped)."""
    return numbers.is_duration(a.start_ns) and numbers.is_duration(a.end_ns - a.start_ns)


def _annotation_columns(notes: Sequence[Annotation]) -> OpColumns:
    """Host annotations as host-work columns (thread id in ``device``)."""
    ok = [a for a in notes if _timed(a)]
    ids: dict[str, int] = {}
    idx = [ids.setdefault(a.name, len(ids)) for a in ok]
    return OpColumns(
        names=list(ids),
        name_idx=np.array(idx, np.int64),
        duration_ns=np.array([a.end_ns - a.start_ns for a in ok], np.int64),
        start_ns=np.array([a.start_ns for a in ok], np.int64),
        device=np.array([column_id(a.thread, NO_DEVICE) for a in ok], np.int64),
    )
