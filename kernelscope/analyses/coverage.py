"""Coverage of a shape ledger: which kernel ran on which model and shapes, and how it fared.

Also turns a trace recorded with shapes into ledger records (kernel, operator, input shapes, dtype,
measured time), so coverage starts from what a profile already holds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import msgspec

from kernelscope.analyses.roofline import op_dtype
from kernelscope.model.ops import OpCall
from kernelscope.model.shapes import Coverage, CoverageCell, Scalar, ShapeRun


def coverage(runs: Iterable[ShapeRun]) -> Coverage:
    rows = sorted(runs, key=lambda r: -(r.time_us or 0.0))
    cells: dict[str, dict[str, list[ShapeRun]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        cells[r.kernel][r.model or "?"].append(r)
    matrix: dict[str, dict[str, CoverageCell]] = {}
    for kernel, per_model in cells.items():
        matrix[kernel] = {}
        for model, rs in per_model.items():
            sp = [r.speedup for r in rs if r.speedup is not None]
            matrix[kernel][model] = CoverageCell(
                shapes=len({msgspec.json.encode(r.shape) + (r.stage or "").encode() for r in rs}),
                time_us=sum(r.time_us or 0.0 for r in rs),
                best_speedup=max(sp) if sp else None,
                worst_speedup=min(sp) if sp else None,
            )
    models = sorted({m for per in matrix.values() for m in per})
    return Coverage(models=models, matrix=matrix, runs=rows)


def runs_from_calls(calls: Iterable[OpCall], *, model: str | None, stage: str | None) -> list[ShapeRun]:
    """One record per (kernel, operator, input shapes): kernel time summed over its launches. An op
    that launched several kernels gives each one the op's shapes (they served that call)."""
    acc: dict[tuple[str, str, str], ShapeRun] = {}
    for c in calls:
        dims = [d for d in c.input_dims if isinstance(d, list) and d]
        for k, ns in zip(c.kernels, c.kernel_each_ns, strict=True):
            key = (k, c.op, str(dims))
            r = acc.get(key)
            if r is None:
                shape: dict[str, Scalar | list[Scalar]] = {f"in{i}": list(d) for i, d in enumerate(dims)}
                r = acc[key] = ShapeRun(
                    kernel=k, model=model, stage=stage, dtype=op_dtype(c), shape=shape, op=c.op, time_us=0.0, calls=0
                )
            r.time_us = (r.time_us or 0.0) + ns / 1e3
            r.calls = (r.calls or 0) + 1
    for r in acc.values():
        r.time_us = round(r.time_us or 0.0, 3)
    return sorted(acc.values(), key=lambda r: -(r.time_us or 0.0))
