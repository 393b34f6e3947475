"""What a task learns from a gap row: the kernel, what it is, the shapes it ran on, and when to stop.

``kscope task new --from-gap TRACE`` picks one kernel of the gap table (by rank, or the hottest matching
``--kernel REGEX``); its identity comes from the name, its shapes from the op calls that launched it (a
Kineto trace recorded with shapes), and the stop condition from the roofline: a kernel at ``p`` % of its
roof has done its job at ``TARGET`` of it, i.e. after a speedup of ``100 * TARGET / p``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import msgspec

from kernelscope.analyses.ncu import selector
from kernelscope.analyses.replay import describe
from kernelscope.analyses.roofline import point_label
from kernelscope.errors import InputError
from kernelscope.identity import classify
from kernelscope.model.gap import GapResult, KernelRow
from kernelscope.model.ops import OpCall
from kernelscope.model.roofline import TARGET, RooflineResult


class GapSeed(msgspec.Struct, frozen=True, kw_only=True):
    kernel: str
    identity: str
    shapes: str | None
    target_speedup: float | None
    evidence: list[str]  # each line says where it comes from (gap, trace, roofline)


def pick(gap: GapResult, *, rank: int = 1, kernel: str | None = None) -> KernelRow:
    """The ``rank``-th row of the gap table, or the hottest whose name matches ``kernel`` (a regex)."""
    rows = gap.kernels
    if kernel is not None:
        wanted = selector(kernel)
        rows = [r for r in rows if wanted(r.name, None)]
        if not rows:
            raise InputError(f"--kernel {kernel!r} matches no kernel of the gap table")
        return rows[0]
    if not 1 <= rank <= len(rows):
        raise InputError(f"--gap-rank {rank}: the gap table has {len(rows)} kernel(s)")
    return rows[rank - 1]


def seed(
    gap: GapResult,
    calls: Sequence[OpCall],
    roofline: RooflineResult | None,
    *,
    rank: int = 1,
    kernel: str | None = None,
    no_roof: str | None = None,
) -> GapSeed:
    """The task fields of one gap row (``calls`` and ``roofline`` may be empty/None: no shapes, no stop;
    ``no_roof`` says why there is no roofline, for the evidence)."""
    row = pick(gap, rank=rank, kernel=kernel)
    [ident] = classify([row.name])
    median = f", median {row.median_us:.1f} µs" if row.median_us is not None else ""
    evidence = [
        f"gap: {row.pct:.1f} % of kernel time, {row.calls} calls, {row.total_us:.1f} µs in all{median} "
        f"({', '.join(gap.sources)})"
    ]
    # the op signatures that launched this kernel, by the kernel time they spent in it
    launched: dict[str, int] = defaultdict(int)
    by_label: dict[str, int] = defaultdict(int)
    for c in calls:
        ns = sum(t for k, t in zip(c.kernels, c.kernel_each_ns, strict=False) if k == row.name)
        if ns:
            launched[f"{c.op}({describe(c)})"] += ns
            by_label[point_label(c)] += ns
    shapes = max(launched, key=lambda k: launched[k]) if launched else None
    if shapes is not None:
        share = 100 * launched[shapes] / sum(launched.values())
        evidence.append(f"trace: launched by {shapes} ({share:.0f} % of this kernel's time)")
    target = None
    if no_roof is not None:
        evidence.append(f"roofline: none, so no stop condition ({no_roof})")
    points = {p.label: p for p in roofline.points} if roofline is not None else {}
    hits = [points[label] for label in sorted(by_label, key=lambda k: -by_label[k]) if label in points]
    if hits and hits[0].pct_of_roof:
        p = hits[0]
        pct = p.pct_of_measured_roof or p.pct_of_roof or 0.0
        roof = "measured" if p.pct_of_measured_roof else "datasheet"
        where = f"roofline: {p.label} is {p.bound}-bound at {pct:.0f} % of its {roof} roof"
        if pct < 100 * TARGET:
            target = round(100 * TARGET / pct, 2)
            evidence.append(f"{where}; stop at {100 * TARGET:.0f} % of it: speedup {target}")
        else:
            evidence.append(f"{where}: at the roof, only less work (fusion, fewer bytes) makes it faster")
    return GapSeed(kernel=row.name, identity=ident.summary(), shapes=shapes, target_speedup=target, evidence=evidence)
