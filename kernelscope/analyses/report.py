"""One report over everything kscope knows about a workload or kernel: the gap table, the roofline,
code-object resources and occupancy, instruction-level traces (ATT, Nsight Compute) and the shape
ledger's coverage — plus a headline of findings, each naming the evidence it rests on.

Pure: the inputs are analysis results; reading files and rendering are the caller's.
"""

from __future__ import annotations

import msgspec

from kernelscope.analyses.coverage import Coverage
from kernelscope.analyses.gap import GapResult
from kernelscope.analyses.roofline import RooflineResult
from kernelscope.model.codeobj import CodeObject

REPORT_SCHEMA = "kernelscope.report.v1"


class Finding(msgspec.Struct, kw_only=True):
    """One headline line: what (``topic``), the statement, and where it comes from."""

    topic: str  # time | bound | occupancy | resources | stalls | hotspot | coverage
    text: str
    evidence: str


class Report(msgspec.Struct, kw_only=True):
    title: str
    created: str
    inputs: list[str]
    gap: GapResult | None = None
    roofline: RooflineResult | None = None
    code: list[CodeObject] = msgspec.field(default_factory=list)
    coverage: Coverage | None = None
    headline: list[Finding] = msgspec.field(default_factory=list)
    schema: str = REPORT_SCHEMA


def _time(gap: GapResult) -> list[Finding]:
    if not gap.kernels:
        return []
    top = gap.kernels[0]
    t = gap.totals
    share3 = sum(k.pct for k in gap.kernels[:3])
    return [
        Finding(
            topic="time",
            text=f"{top.name} takes {top.pct:.1f}% of {t.kernel_time_us:,.0f} µs kernel time "
            f"({top.calls} calls); the top 3 kernels take {share3:.1f}%",
            evidence="gap",
        )
    ]


def _bound(roof: RooflineResult) -> list[Finding]:
    out = []
    for p in roof.points[:3]:
        pct = p.pct_of_measured_roof if p.pct_of_measured_roof is not None else p.pct_of_roof
        which = "measured" if p.pct_of_measured_roof is not None else "datasheet"
        where = f"{pct:.0f}% of the {which} roof" if pct is not None else "no roof (spec UNKNOWN)"
        out.append(
            Finding(
                topic="bound",
                text=f"{p.label}: {p.bound or 'unknown'}-bound at {p.intensity:,.1f} flop/B, {where}",
                evidence="roofline",
            )
        )
    return out


def _occupancy(code: list[CodeObject]) -> list[Finding]:
    out = []
    for o in code:
        for k in o.kernels:
            occ = k.occupancy
            if occ is None:
                continue
            unit = (
                f"{occ.waves_per_simd} waves/SIMD" if occ.waves_per_simd is not None else f"{occ.warps_per_sm} warps/SM"
            )
            spill = (k.vgpr_spill or 0) + (k.sgpr_spill or 0) + (k.local_bytes or 0)
            text = f"{k.name} ({k.arch}): {unit}, {occ.pct:.0f}% of the maximum, limited by {occ.limiter}"
            out.append(Finding(topic="occupancy", text=text + (", spills" if spill else ""), evidence=o.path))
    return out


def build(
    *,
    title: str,
    created: str,
    inputs: list[str],
    gap: GapResult | None = None,
    roofline: RooflineResult | None = None,
    code: list[CodeObject] | None = None,
    coverage: Coverage | None = None,
) -> Report:
    """The report and its headline, in the order an engineer reads it: time, bound, occupancy."""
    code = code or []
    headline = [
        *(_time(gap) if gap else []),
        *(_bound(roofline) if roofline else []),
        *_occupancy(code),
    ]
    return Report(
        title=title,
        created=created,
        inputs=inputs,
        gap=gap,
        roofline=roofline,
        code=code,
        coverage=coverage,
        headline=headline,
    )
