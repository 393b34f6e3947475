"""One report over everything kscope knows about a workload or kernel: the gap table, the roofline,
code-object resources and occupancy, instruction-level traces (ATT, Nsight Compute) and the shape
ledger's coverage — plus a headline of findings, each naming the evidence it rests on.

Pure: the inputs are analysis results; reading files and rendering are the caller's.
"""

from __future__ import annotations

from kernelscope.analyses.variants import which_ran
from kernelscope.model.att import AttResult
from kernelscope.model.codeobj import CodeObject
from kernelscope.model.gap import GapResult
from kernelscope.model.ncu import NcuResult
from kernelscope.model.report import Finding, Report
from kernelscope.model.roofline import RooflineResult
from kernelscope.model.shapes import Coverage
from kernelscope.model.suggest import Experiment


def _time(gap: GapResult) -> list[Finding]:
    if not gap.kernels:
        return []
    top = gap.kernels[0]
    t = gap.totals
    text = f"{top.name} takes {top.pct:.1f}% of {t.kernel_time_us:,.0f} µs kernel time ({top.calls} calls)"
    if len(gap.kernels) > 3:
        text += f"; the top 3 of {len(gap.kernels)} kernels take {sum(k.pct for k in gap.kernels[:3]):.1f}%"
    if t.excluded_harness_launches:
        text += (
            f" (benchmarking set aside: {t.excluded_harness_launches:,} launches, "
            f"{t.excluded_harness_us:,.0f} µs in {len(gap.harness)} burst(s))"
        )
    return [Finding(topic="time", text=text, evidence="gap")]


def _host(gap: GapResult) -> list[Finding]:
    """First when the GPU mostly waited for the host: then no kernel work pays (ROCm's and CUDA's guides:
    check whether the GPU is the bottleneck before profiling kernels)."""
    t = gap.totals
    b = t.idle_breakdown
    if b is None or not t.wall_time_us or not t.idle_time_us or t.busy_time_us is None:
        return []
    devices = max(t.devices, 1)
    idle_pct = 100 * t.idle_time_us / devices / t.wall_time_us
    host_pct = 100 * b.host_wait_us / t.idle_time_us
    verdict = (
        "the host sets the pace: reduce host overhead before tuning kernels (host_overhead)"
        if b.host_wait_us > t.busy_time_us
        else "the GPU is the bottleneck: kernel work pays"
    )
    text = (
        f"the GPU idled {idle_pct:.0f}% of the {t.wall_time_us:,.0f} µs wall time, {host_pct:.0f}% of that "
        f"waiting for the host to launch the next kernel; {verdict}"
    )
    return [Finding(topic="host", text=text, evidence="gap: idle breakdown")]


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


def _occupancy(code: list[CodeObject], gap: GapResult | None) -> list[Finding]:
    """One line per code object, except where the trace says which variant of a kernel ran: then only the
    code object(s) that fit it."""
    ran = which_ran(code, gap.kernels if gap else [])
    out = []
    for o in code:
        for k in o.kernels:
            occ = k.occupancy
            if occ is None or (id(k) in ran and ran[id(k)] is None):  # another variant than the one that ran
                continue
            spill = (k.vgpr_spill or 0) + (k.sgpr_spill or 0) + (k.local_bytes or 0)
            text = f"{k.name} ({k.arch}): {occ.per_unit}, {occ.pct:.0f}% of the maximum, limited by {occ.limiter}"
            text += ", spills" if spill else ""
            if (v := ran.get(id(k))) is not None:
                text += f"; the variant that ran most ({v.label()})"
            out.append(Finding(topic="occupancy", text=text, evidence=o.path))
    return out


def _ncu(result: NcuResult) -> list[Finding]:
    out = []
    for k in result.kernels:
        if not k.stall_breakdown:
            continue
        split = ", ".join(f"{s.label} {s.pct:.0f}%" for s in k.stall_breakdown[:3])
        out.append(Finding(topic="stalls", text=f"{k.name}: {split} of warp stall samples", evidence=result.source))
        if k.hotspots:
            h = k.hotspots[0]
            where = f" ({h.source})" if h.source else ""
            text = f"{k.name}: `{h.instruction}` at {h.address:#x}{where} holds {h.pct:.0f}% of the stall samples"
            out.append(Finding(topic="hotspot", text=text, evidence=result.source))
    return out


def _att(results: list[AttResult]) -> list[Finding]:
    out = []
    for a in results:
        split = ", ".join(f"{k} {v:.0f}%" for k, v in list(a.stall_breakdown_pct.items())[:3])
        text = f"{a.stall_pct:.0f}% of {a.latency_cycles:,} latency cycles stalled ({split})"
        if a.state_pct is not None:
            text += "; wave states " + ", ".join(f"{k.upper()} {v:.0f}%" for k, v in a.state_pct.items())
        out.append(Finding(topic="stalls", text=text, evidence=a.path))
        if a.measured_waves_per_simd is not None:
            est = f", registers allow {a.vgpr_waves_per_simd}" if a.vgpr_waves_per_simd is not None else ""
            text = f"{a.measured_waves_per_simd} waves per SIMD resident at most (measured){est}"
            out.append(Finding(topic="occupancy", text=text, evidence=a.path))
        if a.hotspots:
            h = a.hotspots[0]
            where = f" ({h.source})" if h.source else ""
            text = f"`{h.instruction}` at {h.address:#x}{where}: {h.stall_share:.0f}% of stall cycles ({h.stall_class})"
            out.append(Finding(topic="hotspot", text=text, evidence=a.path))
    return out


def _candidates(experiments: list[Experiment]) -> list[Finding]:
    out = []
    for e in experiments:
        x = e.expected
        total = f" ({x.total_pct:.1f}% of GPU time)" if x.total_pct is not None else ""
        bound = (
            f"saves at most {x.kernel_pct:.0f}% of its time{total}"
            if x.kernel_pct is not None
            else "effect not bounded"
        )
        text = f"#{e.rank} {e.lever} on {e.kernel.function}: {bound}, risk {e.risk.level}"
        out.append(Finding(topic="candidate", text=text, evidence=f"suggest: {e.rule}"))
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
    ncu: NcuResult | None = None,
    att: list[AttResult] | None = None,
    candidates: list[Experiment] | None = None,
    notes: list[str] | None = None,
) -> Report:
    """The report and its headline, in the order an engineer reads it: time, bound, occupancy, then what to
    try (``candidates``, ranked by ``kscope suggest``)."""
    code = code or []
    headline = [
        *(_host(gap) if gap else []),
        *(_time(gap) if gap else []),
        *(_bound(roofline) if roofline else []),
        *_occupancy(code, gap),
        *(_ncu(ncu) if ncu else []),
        *_att(att or []),
        *_candidates(candidates or []),
    ]
    return Report(
        title=title,
        created=created,
        inputs=inputs,
        gap=gap,
        roofline=roofline,
        code=code,
        coverage=coverage,
        ncu=ncu,
        att=att or [],
        candidates=candidates or [],
        headline=headline,
        notes=notes or [],
    )
