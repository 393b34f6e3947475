"""A shape ledger's coverage (``analyses/coverage.py``): which kernel ran on which model, and how it fared.

Schema ``kernelscope.coverage.v1``.
"""

from __future__ import annotations

import msgspec

from kernelscope.model.shapes import ShapeRun


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
