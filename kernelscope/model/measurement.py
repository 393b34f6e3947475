"""A timing measurement: the raw samples, where and how they were taken, and their statistics.

Raw samples are kept (not only a mean) so two measurements can be compared with a test later, and the
method fields say what the numbers mean: a cold-cache median from device events is not comparable
with a hot-cache mean from wall clocks.
"""

from __future__ import annotations

import msgspec

from kernelscope.model.stats import Interval, Summary


class Measurement(msgspec.Struct, kw_only=True):
    """Per-call times in microseconds. ``mode`` is ``cold`` (L2 flushed before every call) or ``hot``;
    ``graph``: calls replayed from a captured CUDA/HIP graph, ``calls_per_sample`` per event pair."""

    label: str
    device: str
    mode: str
    graph: bool
    samples_us: list[float]
    summary: Summary
    median_ci: Interval
    warmup_calls: int
    calls_per_sample: int = 1
    flush_bytes: int = 0
    timer: str = "device events"
    warnings: list[str] = msgspec.field(default_factory=list)
    schema: str = "kernelscope.measurement.v1"
