"""Record types: one kernel launch, one memory operation, one annotation range, one device, one stats row.

All are frozen ``msgspec.Struct`` records: cheap to create in the millions, typed, and encoded to JSON
and MessagePack without a hand-written serializer. Unknown values are ``None`` (never ``-1`` or 0).
Times are integer nanoseconds. See ``docs/data-model.md`` for the meaning of every field.

The per-launch records are ``gc=False``: they hold only scalars, strings, ``Dim3`` and float dicts, so
they cannot form reference cycles, and keeping millions of them out of the cycle collector's reach
halves ingest time on large traces.
"""

from __future__ import annotations

from typing import Literal

import msgspec

Vendor = Literal["amd", "nvidia", "unknown"]


class Dim3(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A 3-D size, encoded as ``[x, y, z]``."""

    x: int
    y: int
    z: int

    @property
    def total(self) -> int:
        return self.x * self.y * self.z


def _div_up(a: int, b: int) -> int:
    return -(-a // b)


def blocks_from_items(items: Dim3, block: Dim3) -> Dim3:
    """Workgroups per dimension from work-items per dimension (rocprof's ``Grid_Size`` counts work-items)."""
    return Dim3(_div_up(items.x, block.x or 1), _div_up(items.y, block.y or 1), _div_up(items.z, block.z or 1))


def items_from_blocks(blocks: Dim3, block: Dim3) -> Dim3:
    """Work-items per dimension from blocks per dimension (Kineto's and Nsight's ``grid`` count blocks)."""
    return Dim3(blocks.x * block.x, blocks.y * block.y, blocks.z * block.z)


class KernelLaunch(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """One kernel dispatch as a profiler recorded it.

    ``start_ns`` is ``None`` only for profilers that serialize kernels and keep no timeline
    (Nsight Compute); then ``duration_ns`` is the profiler's own duration metric.
    Grid and block sizes are stated both ways: ``grid_blocks`` counts blocks/workgroups per dimension,
    ``grid_items`` counts threads/work-items; readers fill both from whichever the format records.
    """

    name: str
    duration_ns: int
    start_ns: int | None = None
    vendor: Vendor = "unknown"
    mangled: str | None = None
    device: int | None = None
    rank: int | None = None
    stream: int | None = None
    queue: int | None = None
    correlation_id: int | None = None
    op_id: int | None = None  # the host op call that launched it (Kineto's External id), one per call
    launch_ns: int | None = None  # host time of the API call that launched it, when the trace links them
    launch_dur_ns: int | None = None  # that API call's duration
    graph: bool = False  # launched by a CUDA/HIP graph replay (cudaGraphLaunch), not one by one
    grid_blocks: Dim3 | None = None
    grid_items: Dim3 | None = None
    block: Dim3 | None = None
    registers: int | None = None  # NVIDIA: registers per thread
    vgpr: int | None = None  # AMD: architected VGPRs per work-item as the profiler reports them
    agpr: int | None = None  # AMD: accumulation VGPRs
    sgpr: int | None = None
    lds_bytes: int | None = None  # LDS / shared memory per block, static + dynamic
    scratch_bytes: int | None = None  # private / local memory per work-item
    source: str | None = None  # file it was read from
    source_format: str | None = None  # reader that read it
    metrics: dict[str, float] | None = None  # per-launch counters a profiler attached (Nsight Compute)

    @property
    def end_ns(self) -> int | None:
        return None if self.start_ns is None else self.start_ns + self.duration_ns


MemoryKind = Literal["memcpy", "memset"]


class MemoryOp(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """A runtime copy or fill on the GPU timeline. Kept apart from kernels: not kernel time."""

    name: str
    kind: MemoryKind
    duration_ns: int
    start_ns: int | None = None
    device: int | None = None
    rank: int | None = None
    stream: int | None = None
    correlation_id: int | None = None
    bytes: int | None = None
    source: str | None = None
    source_format: str | None = None

    @property
    def end_ns(self) -> int | None:
        return None if self.start_ns is None else self.start_ns + self.duration_ns


AnnotationDomain = Literal["host", "gpu"]


class Annotation(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """A named user range: ``ProfilerStep#N``, ``record_function`` scopes, NVTX / ROCTx ranges.

    ``domain`` says which clock the range is on: ``host`` ranges enclose API calls, ``gpu`` ranges
    (Kineto's ``gpu_user_annotation``) enclose kernels directly. ``step``: the step number where the profiler
    marks the range as a step by a field (JAX's ``StepTraceAnnotation``); PyTorch's steps say it in the name.
    """

    name: str
    start_ns: int
    end_ns: int
    domain: AnnotationDomain = "host"
    rank: int | None = None
    thread: int | None = None
    step: int | None = None


class DeviceInfo(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A GPU as the profile describes it."""

    index: int
    vendor: Vendor = "unknown"
    name: str | None = None
    arch: str | None = None  # "sm_90", "gfx950"
    compute_units: int | None = None  # SMs on NVIDIA, CUs on AMD
    rank: int | None = None
    compute_capability: str | None = None  # "9.0"; HIP's for AMD ("9.4": gfx940-942)
    memory_bytes: int | None = None
    clock_mhz: int | None = None  # peak engine clock as reported
    # the hardware database entry these properties fit where the trace names no product (``hw.specs.identify``)
    product: str | None = None

    @property
    def label(self) -> str | None:
        """The product name to look peaks up by: the trace's own, else the one its properties identify."""
        return self.name or self.product


class KernelStats(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Per-kernel statistics a profiler computed itself (rocprofv3 ``kernel_stats.csv``, ``nsys stats``)."""

    name: str
    calls: int
    total_ns: float
    avg_ns: float | None = None
    median_ns: float | None = None  # nsys gives it, rocprofv3 does not
    min_ns: float | None = None
    max_ns: float | None = None
    std_ns: float | None = None
    pct: float | None = None
    source: str | None = None
