"""The shape ledger: one record per (kernel, model, stage, shape) measurement.

A kernel engineer's coverage question — which models and shapes has this kernel been measured on, and
how fast against its baseline — is answered from these records, written as JSON lines by hand, by
``kscope shapes`` from a trace recorded with shapes, or by evaluation runs.
"""

from __future__ import annotations

import msgspec

Scalar = int | float | str | bool | None


class ShapeRun(msgspec.Struct, kw_only=True, omit_defaults=True):
    """``speedup`` is baseline / measured time (above 1: faster than the baseline)."""

    kernel: str
    model: str | None = None
    stage: str | None = None  # e.g. prefill, decode, train
    dtype: str | None = None
    shape: dict[str, Scalar | list[Scalar]] = msgspec.field(default_factory=dict)
    time_us: float | None = None
    baseline_us: float | None = None
    speedup: float | None = None
    op: str | None = None  # the framework operator that launched the kernel, when known
    calls: int | None = None


class ShapeRuns(msgspec.Struct, kw_only=True):
    """``kscope shapes --json``: the ledger records read from the traces."""

    schema: str = "kernelscope.shapes.v1"
    runs: list[ShapeRun]


# --- a ledger's coverage (analyses/coverage.py): kernelscope.coverage.v1 --------------------------------


class CoverageCell(msgspec.Struct, kw_only=True):
    shapes: int
    time_us: float  # summed over the measured shapes
    best_speedup: float | None = None
    worst_speedup: float | None = None


class Coverage(msgspec.Struct, kw_only=True):
    """``matrix[kernel][model]``: what was measured; ``runs``: the ledger rows, longest first."""

    models: list[str]
    matrix: dict[str, dict[str, CoverageCell]]
    runs: list[ShapeRun]
    schema: str = "kernelscope.coverage.v1"
