"""Facts the rules share: bounds, stall quotes, hot lines and the effect a rule can claim."""

from __future__ import annotations

from collections.abc import Sequence

from kernelscope.analyses.occupancy import occupancy
from kernelscope.analyses.suggest.evidence import Bound, Facts, Match, Quote, att_name
from kernelscope.analyses.suggest.thresholds import LIBRARY_KINDS, MATMUL, VECTOR_BITS
from kernelscope.model.att import AttResult
from kernelscope.model.codeobj import KernelCode, Occupancy
from kernelscope.model.hotspots import top_reason
from kernelscope.model.ncu import STALL_REASONS, stall_label
from kernelscope.model.source import SourceLocation
from kernelscope.model.suggest import (
    Step,
)

# --- facts the rules share ------------------------------------------------------------------------------


def is_editable(f: Facts) -> bool:
    return f.identity.kind not in LIBRARY_KINDS


def is_matmul(f: Facts) -> bool:
    return f.identity.category in MATMUL


def roof_bound(f: Facts) -> Bound | None:
    """Memory- or compute-bound and the % of that roof: the roofline point, else ncu's speed of light."""
    p = f.roof
    if p is not None and p.bound is not None:
        measured = p.pct_of_measured_roof is not None
        pct = p.pct_of_measured_roof if measured else p.pct_of_roof
        if pct is not None:
            rate = f"{p.achieved_gbs:,.0f} GB/s" if p.bound == "memory" else f"{p.achieved_tflops:,.1f} TFLOPS"
            roof = "measured" if measured else "datasheet"
            text = (
                f"{f.roof_source}: {p.bound}-bound at {p.intensity:,.1f} flop/B, {rate} = {pct:.0f}% of the {roof} roof"
            )
            return Bound(p.bound, pct, f.roof_source, text)
    h = f.ncu.headline if f.ncu else None
    if h is None or h.dram_throughput_pct is None or h.sm_throughput_pct is None:
        return None
    memory = h.dram_throughput_pct >= h.sm_throughput_pct
    text = f"ncu: DRAM throughput {h.dram_throughput_pct:.1f}%, SM throughput {h.sm_throughput_pct:.1f}% of peak"
    pct = h.dram_throughput_pct if memory else h.sm_throughput_pct
    return Bound("memory" if memory else "compute", pct, "ncu speed of light", text)


def headroom_effect(b: Bound | None) -> tuple[float, str] | None:
    if b is None:
        return None
    return 1 - b.pct / 100, f"{100 - b.pct:.0f}% headroom to the {b.kind} roof, from the {b.source}"


def vgpr_limited(a: AttResult, allowed: int | None) -> bool:
    """Few waves resident on a SIMD, as many as the VGPRs allow: the registers are the cap."""
    m = a.measured_waves_per_simd
    return m is not None and allowed is not None and m <= 2 and m >= allowed


def stall_quote(f: Facts, reasons: Sequence[str], classes: Sequence[str]) -> Quote | None:
    """The share of stall samples (ncu) or stall cycles (ATT) in ``reasons``/``classes``; its time fraction
    is the share of warp samples (ncu samples are time) or of the waves' issue time (ATT)."""
    quotes = []
    if f.ncu is not None and f.ncu.stall_samples:
        hit = [s for s in f.ncu.stall_breakdown if s.reason in reasons]
        if hit:
            pct = sum(s.pct for s in hit)
            what = " + ".join(f"{s.label.lower()} {s.pct:.1f}%" for s in hit)
            meaning = "; ".join(STALL_REASONS[s.reason][1] for s in hit)
            text = f"ncu: {what} of {f.ncu.stall_samples:,} warp-stall samples ({meaning})"
            quotes.append(Quote(pct, text, pct / 100))
    a = f.att
    if a is not None and a.stall_cycles:
        cycles = sum(a.stall_breakdown.get(c, 0) for c in classes)
        busy = a.latency_cycles + a.idle_cycles
        if cycles and busy:
            pct, time = 100 * cycles / a.stall_cycles, cycles / busy
            text = (
                f"{att_name(a)}: {' + '.join(classes)} holds {pct:.1f}% of {a.stall_cycles:,} stall cycles "
                f"({100 * time:.1f}% of the traced waves' issue and idle cycles)"
            )
            quotes.append(Quote(pct, text, time))
    return max(quotes, key=lambda q: q.pct, default=None)


def time_effect(q: Quote | None, what: str) -> tuple[float, str] | None:
    """A stall quote as an effect bound: removing the waits cannot save more than the time spent in them."""
    if q is None or q.time is None:
        return None
    return q.time, f"the {100 * q.time:.0f}% of the kernel's warp/wave time spent {what}"


def stalled_effect(f: Facts) -> tuple[float, str] | None:
    """The fraction of the kernel's time its warps/waves did not issue: what latency hiding can win."""
    if f.ncu is not None and f.ncu.stall_samples:
        issued = sum(s.samples for s in f.ncu.stall_breakdown if s.reason == "selected")
        return 1 - issued / f.ncu.stall_samples, "ncu: the share of warp samples not issuing"
    a = f.att
    if a is not None and a.latency_cycles + a.idle_cycles:
        return a.stall_cycles / (a.latency_cycles + a.idle_cycles), f"{att_name(a)}: the share of cycles stalled"
    return None


def _hot(f: Facts, reasons: Sequence[str], classes: Sequence[str]) -> tuple[str, SourceLocation | None] | None:
    """The hottest source line (and instruction) whose top stall is one of ``reasons``/``classes``."""
    k = f.ncu
    if k is not None:
        line = next((s for s in k.lines if top_reason(s)[0] in reasons), None)
        inst = next((h for h in k.hotspots if top_reason(h)[0] in reasons), None)
        parts = []
        if line is not None:
            r, n = top_reason(line)
            text = f" `{line.text}`" if line.text else ""
            parts.append(
                f"{line.pct:.1f}% of warp-stall samples at {line.source}{text} ({stall_label(r).lower()} {n:,})"
            )
        if inst is not None:
            top, n = top_reason(inst)
            parts.append(
                f"top instruction {inst.address:#x} `{inst.instruction}`: {inst.stall_samples:,} samples "
                f"({inst.pct:.1f}%), {stall_label(top).lower()} {n:,}"
            )
        if parts:
            return "ncu: " + "; ".join(parts), line.location if line is not None else None
    a = f.att
    if a is not None:
        src = next((s for s in a.source_lines if s.top_class in classes and s.source), None)
        hot = next((h for h in a.hotspots if h.stall_class in classes), None)
        parts = [f"{src.stall_share:.1f}% of stall cycles at {src.source} ({src.top_class})"] if src else []
        if hot is not None:
            parts.append(
                f"top instruction {hot.address:#x} `{hot.instruction}`: {hot.stall_cycles:,} stall cycles "
                f"({hot.stall_share:.1f}%)"
            )
        if parts:
            return f"{att_name(a)}: " + "; ".join(parts), src.location if src is not None else None
    return None


def narrow_loads(f: Facts) -> Quote | None:
    """Global loads narrower than a 128-bit vector: executed (ncu) or in the code (code object)."""
    s = f.sass
    if s is not None and s.loads:
        pct = 100 * s.narrow / s.loads
        split = ", ".join(f"{bits}-bit {n:,}" for bits, n in s.widths.items())
        return Quote(pct, f"ncu: {pct:.0f}% of {s.loads:,} executed global loads are narrower than {VECTOR_BITS} bits "
                          f"per thread ({split})")  # fmt: skip
    k = f.code
    if k is None:
        return None
    cls = "vmem_load.b" if k.vendor == "amd" else "ldg.b"
    widths = {int(c[len(cls) :]): n for c, n in k.mix.items() if c.startswith(cls) and c[len(cls) :].isdigit()}
    total = sum(widths.values())
    if not total:
        return None
    pct = 100 * sum(n for bits, n in widths.items() if bits < VECTOR_BITS) / total
    counts = ", ".join(f"{bits}-bit {n}" for bits, n in sorted(widths.items()))
    return Quote(pct, f"isa {k.arch}: {pct:.0f}% of the {total} global load instructions in the code are narrower "
                      f"than {VECTOR_BITS} bits ({counts})")  # fmt: skip


def ncu_occupancy(f: Facts) -> Occupancy | None:
    """The theoretical occupancy of the ncu launch (its block, registers, shared memory) and its limiter."""
    launch, device = f.launch, f.device
    if launch is None or launch.block is None or device is None or device.arch is None:
        return None
    regs = launch.registers or (f.ncu.headline.registers if f.ncu else None)
    k = KernelCode(name=f.name, arch=device.arch, vendor="nvidia", registers=regs, shared_bytes=launch.lds_bytes)
    return occupancy(k, block_size=launch.block.total, dynamic_shared=0)


def ncu_achieved(f: Facts) -> str:
    h = f.ncu.headline if f.ncu else None
    if h is None or h.theoretical_occupancy_pct is None or h.achieved_occupancy_pct is None:
        return ""
    return f"; ncu: theoretical {h.theoretical_occupancy_pct:.1f}%, achieved {h.achieved_occupancy_pct:.1f}%"


def _effect(*bounds: tuple[float, str] | None) -> tuple[float | None, str]:
    """The tightest of several upper bounds on the fraction of the kernel's time saved."""
    known = [b for b in bounds if b is not None]
    if not known:
        return None, "not bounded by the evidence"
    frac, why = min(known)
    return max(0.0, min(1.0, frac)), why


def make_match(steps: list[Step], *bounds: tuple[float, str] | None, where: SourceLocation | None = None) -> Match:
    effect, basis = _effect(*bounds)
    return Match(steps=steps, effect=effect, basis=basis, hotspots=[where] if where else [])


def hot_step(
    f: Facts, reasons: Sequence[str], classes: Sequence[str], action: str
) -> tuple[list[Step], SourceLocation | None]:
    hot = _hot(f, reasons, classes)
    if hot is None:
        return [], None
    text, where = hot
    return [Step(evidence=text, inference="the waiting concentrates here", action=action)], where
