"""``kscope suggest``: ranked experiments from the evidence kscope holds.

Pure over analysis results (``Evidence``): the kernels of every input are joined by name (``kernels``),
each rule of ``RULES`` reads one kernel's facts and either proposes its lever, with the steps that argue
for it (evidence -> inference -> action), or stays silent. Experiments are ranked by

    score = share x confidence x effect x (one demotion factor per failed attempt in the ledger)

``share`` is the kernel's fraction of GPU time (1 when no input timed it), ``confidence`` the rule's own,
``effect`` the rule's upper bound on the fraction of the kernel's time the lever can save, read from the
evidence (``UNBOUNDED`` where the evidence bounds nothing). Thresholds, rules and factors: ``docs/suggest.md``.
"""

from __future__ import annotations

import math
import re
import shlex
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from kernelscope.analyses.gap import GapResult, GapTotals, KernelRow
from kernelscope.analyses.ncu import DRAM_BYTES, KernelSummary, selector, summarize_kernel
from kernelscope.analyses.occupancy import occupancy
from kernelscope.analyses.roofline import Peaks, RooflinePoint, RooflineResult, from_calls
from kernelscope.codeobj.mix import nvidia_mix
from kernelscope.errors import InputError
from kernelscope.identity import Identities
from kernelscope.model import DeviceInfo, KernelLaunch
from kernelscope.model.att import AttResult
from kernelscope.model.att import KernelSummary as AttKernel
from kernelscope.model.codeobj import CodeObject, KernelCode, Occupancy
from kernelscope.model.identity import KernelIdentity
from kernelscope.model.levers import LEVERS, Lever
from kernelscope.model.ncu import STALL_REASONS, NcuKernelSource, NcuSource, stall_label
from kernelscope.model.source import SourceMatch
from kernelscope.model.suggest import (
    Contract,
    Demotion,
    Effect,
    Experiment,
    KernelRef,
    Risk,
    Step,
    SuggestResult,
)
from kernelscope.model.task import TASK_NAME, LedgerRecord, Status
from kernelscope.readers.kineto_ops import OpCall

# --- thresholds (docs/suggest.md says why each) ------------------------------------------------------------
MEMORY_WAIT_PCT = 30.0  # of stall samples/cycles waiting on global memory: memory latency is the wait
NARROW_PCT = 50.0  # of global loads narrower than VECTOR_BITS per thread
VECTOR_BITS = 128  # the widest per-thread global load (LDG.E.128, global_load_dwordx4)
NEAR_ROOF_PCT = 80.0  # at this % of its roof a kernel only gets faster by doing less
REREAD = 1.5  # bytes requested by global loads / bytes read from DRAM: each byte loaded this often
BARRIER_PCT = 10.0  # of stall samples/cycles at barriers
SHARED_WAIT_PCT = 20.0  # of stall samples/cycles waiting on LDS/shared memory (or SMEM, MUFU)
LOW_OCCUPANCY_PCT = 50.0  # resident warps/waves of the maximum
TINY_US = 5.0  # average kernel time that launch and ramp-up costs dominate ...
TINY_CALLS = 10  # ... when launched at least this often
IDLE_PCT = 20.0  # GPU idle share of the wall time worth quoting with fusion
UNBOUNDED = 0.5  # the effect a rule scores with when the evidence bounds nothing
TOP_LINES = 10  # source lines and hotspots read per ncu kernel

MATMUL = frozenset({"gemm", "moe_gemm", "attention", "conv"})
FUSABLE = frozenset({"elementwise", "norm", "copy", "reduce", "softmax", "quant", "position"})
# prebuilt library code: what runs can change (library_choice), its inputs (precision), what surrounds it
# (fusion), not its source
LIBRARY_KINDS = frozenset({"cublas", "cudnn", "tensile", "aten", "cub", "memory", "comm"})
REGISTER_LIMITERS = frozenset({"vgpr", "sgpr", "registers", "lds", "shared"})
BLOCK_LIMITERS = frozenset({"blocks", "workgroups"})
WIDE_DTYPES = {"fp32": 4, "fp64": 8}

NCU_MEMORY = ("long_scoreboard", "lg_throttle")
NCU_BARRIER = ("barrier", "membar")
NCU_SHARED = ("short_scoreboard", "mio_throttle")
ATT_MEMORY = ("vmem_wait",)
ATT_BARRIER = ("barrier",)
ATT_SHARED = ("lds_smem_wait",)

# A ledger record of the same lever on the same kernel multiplies the score by this. improved (it worked),
# unstable (noise decided), needs_baseline (the baseline broke) and violation (nothing ran) say nothing
# against the lever; a crash or a hang may be the attempt's fault rather than the lever's, hence weaker.
DEMOTION: dict[Status, float] = {"regressed": 0.4, "neutral": 0.6, "failed": 0.7, "timeout": 0.8}

_OPCODE = re.compile(r"^\s*(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)")


@dataclass(frozen=True)
class Evidence:
    """Everything the inputs said, read once (``api.suggest`` and ``api.report`` fill it)."""

    inputs: Mapping[str, Sequence[str]] = field(default_factory=dict)  # kind -> paths
    gap: GapResult | None = None
    calls: Sequence[OpCall] = ()  # Kineto ops with shapes: the roofline per kernel
    peaks: Peaks | None = None
    ncu: NcuSource | None = None
    ncu_launches: Sequence[KernelLaunch] = ()  # the same report's launches: grid, block, counters
    ncu_roofline: RooflineResult | None = None  # from those counters
    devices: Sequence[DeviceInfo] = ()
    att: Sequence[AttResult] = ()
    code: Sequence[CodeObject] = ()
    ledger: Sequence[LedgerRecord] = ()
    sources: Mapping[str, SourceMatch] = field(default_factory=dict)  # kernel name -> kscope find's answer
    workspace: str | None = None
    repo: str | None = None
    baseline: str | None = None  # the repository's HEAD commit, for the task's baseline
    notes: Sequence[str] = ()


@dataclass(frozen=True)
class SassProfile:
    """What the ncu source page counted over one kernel's SASS (warp-level executions)."""

    executed: int
    matrix: int  # tensor-core MMAs executed
    loads: int  # global loads executed
    narrow: int  # of them narrower than VECTOR_BITS per thread
    widths: dict[int, int]  # bits per thread -> loads executed
    requested_bytes: float  # thread-level load executions x bytes each
    sites: list[str]  # source lines with executed global loads, in address order


@dataclass
class Facts:
    """One kernel as every input saw it."""

    name: str
    identity: KernelIdentity
    share: float | None = None  # fraction of the GPU time of the timing input
    share_source: str = "no input timed this kernel"
    row: KernelRow | None = None
    totals: GapTotals | None = None
    roof: RooflinePoint | None = None
    roof_source: str = ""
    data_dtype: tuple[str, str] | None = None  # (dtype, where it was read)
    ncu: KernelSummary | None = None
    sass: SassProfile | None = None
    launch: KernelLaunch | None = None
    device: DeviceInfo | None = None
    att: AttResult | None = None
    code: KernelCode | None = None


@dataclass(frozen=True)
class Quote:
    """A fact quoted from the evidence: ``pct`` is what a rule compares with its threshold; ``time``, where
    the input measures time, the fraction of the kernel's time it stands for (a bound on what removing it saves)."""

    pct: float
    text: str
    time: float | None = None


@dataclass(frozen=True)
class Bound:
    kind: str  # memory | compute
    pct: float  # of the roof
    source: str  # which input said so
    text: str


@dataclass(frozen=True)
class Match:
    """A rule's verdict on one kernel: the steps, the effect bound and what bounds it, the source lines."""

    steps: list[Step]
    effect: float | None
    basis: str
    hotspots: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Rule:
    id: str
    lever: Lever
    confidence: float
    risk: Risk
    when: str  # the condition, as docs/suggest.md states it
    test: Callable[[Facts], Match | None]


# --- reading the evidence ------------------------------------------------------------------------------


def sass_profile(k: NcuKernelSource) -> SassProfile:
    """Executed instructions, tensor-core MMAs and global loads (by width, bytes, source line) of a kernel."""
    widths: Counter[int] = Counter()
    executed = matrix = 0
    requested = 0.0
    sites: dict[str, None] = {}
    for inst in k.instructions:
        m = _OPCODE.match(inst.sass)
        n = inst.executed or 0
        executed += n
        mix = nvidia_mix([m[1]] if m else [])
        matrix += n if mix["matrix"] else 0
        width = next((int(c[5:]) for c in mix if c.startswith("ldg.b")), None)
        if width is None or not n:
            continue
        widths[width] += n
        requested += (inst.thread_executed or 0) * width / 8
        if inst.source is not None:
            sites[str(inst.source)] = None
    return SassProfile(
        executed=executed,
        matrix=matrix,
        loads=sum(widths.values()),
        narrow=sum(n for bits, n in widths.items() if bits < VECTOR_BITS),
        widths=dict(sorted(widths.items())),
        requested_bytes=requested,
        sites=list(sites),
    )


class _Table:
    """Kernels by name; a name another input spells differently joins by its demangled form, else by a
    function name that only one kernel has."""

    def __init__(self, names: Sequence[str]) -> None:
        self.ids = Identities()
        self.ids.add(names)
        self.facts: list[Facts] = []

    def find(self, name: str) -> Facts | None:
        ident = self.ids[name]
        hit = next((f for f in self.facts if f.name == name), None) or next(
            (f for f in self.facts if f.identity.demangled == ident.demangled), None
        )
        if hit is not None:
            return hit
        by_function = [f for f in self.facts if f.identity.function == ident.function]
        return by_function[0] if len(by_function) == 1 else None

    def get(self, name: str) -> Facts:
        found = self.find(name)
        if found is None:
            found = Facts(name=name, identity=self.ids[name])
            self.facts.append(found)
        return found


def kernels(ev: Evidence) -> tuple[list[Facts], list[str]]:
    """Each kernel of the evidence with what every input says about it, and notes on what did not join.

    The timing input (the trace's gap table, else the ncu report's durations) decides which kernels there
    are; code objects and ATT captures only add to them. Without a timing input every kernel counts.
    """
    ncu = ev.ncu.kernels if ev.ncu else []
    names = [r.name for r in ev.gap.kernels] if ev.gap else []
    mains = [(a, _att_kernel(a)) for a in ev.att]
    code = [k for o in ev.code for k in o.kernels]
    names += [k.name for k in ncu] + [m.name for _, m in mains if m] + [k.name for k in code]
    table = _Table(names)
    notes: list[str] = []
    timed = ev.gap is not None or any(k.duration_ns for k in ncu)
    if ev.gap is not None:
        t = ev.gap.totals
        for r in ev.gap.kernels:
            f = table.get(r.name)
            f.row, f.totals, f.share = r, t, r.pct / 100
            f.share_source = f"gap: {r.pct:.1f}% of {t.kernel_time_us:,.0f} µs kernel time, {r.calls} calls"
    _add_ncu(ev, table, ncu, timed_by_gap=ev.gap is not None, notes=notes)
    _add_rooflines(ev, table)
    left: Counter[str] = Counter()  # inputs that match no timed kernel
    repeated = 0
    for a, main in mains:  # several captures of a kernel: the one with the most executed instructions
        at = None if main is None else table.find(main.name) if timed else table.get(main.name)
        if at is None:
            left["ATT capture"] += 1
        elif at.att is None or a.hits > at.att.hits:
            at.att = a
    for k in code:  # several code objects of a kernel (archs, specializations): the first
        of = table.find(k.name) if timed else table.get(k.name)
        if of is None:
            left["code-object kernel"] += 1
        elif of.code is None:
            of.code = k
        else:
            repeated += 1
    notes += [f"{n} {what}(s) match no timed kernel: left out" for what, n in left.items()]
    if repeated:
        notes.append(f"{repeated} code-object kernel(s) repeat one read before (another arch or specialization): "
                     "the first is used")  # fmt: skip
    if not timed and table.facts:
        notes.append(
            "no input timed the kernels (give a trace, or an ncu report with durations): each is scored as if "
            "it took all of the GPU time, so scores compare levers, not kernels"
        )
    return table.facts, notes


def _add_ncu(
    ev: Evidence, table: _Table, ncu: Sequence[NcuKernelSource], *, timed_by_gap: bool, notes: list[str]
) -> None:
    """Per kernel the ncu launch with the longest duration; its share from the durations when no trace."""
    if ev.ncu is None:
        return
    total = sum(k.duration_ns or 0 for k in ncu)
    per_name: Counter[str] = Counter()
    for k in ncu:
        per_name[k.name] += k.duration_ns or 0
    missing = 0
    for k in ncu:
        f = table.find(k.name) if timed_by_gap else table.get(k.name)
        if f is None:
            missing += 1
            continue
        if f.ncu is not None and (k.duration_ns or 0) <= (f.ncu.duration_ns or 0):
            continue
        f.ncu = summarize_kernel(k, ev.ncu.format, top=TOP_LINES, context=0)
        f.sass = sass_profile(k) if k.has_counters else None
        f.launch = _launch(ev.ncu_launches, k)
        f.device = ev.devices[0] if ev.devices else None
        if not timed_by_gap and total:
            f.share = per_name[k.name] / total
            f.share_source = f"ncu: {100 * f.share:.1f}% of the duration of the {len(ncu)} profiled launch(es)"
    if missing:
        notes.append(f"{missing} ncu kernel(s) are not in the trace: left out")


def _launch(launches: Sequence[KernelLaunch], k: NcuKernelSource) -> KernelLaunch | None:
    if k.index < len(launches) and launches[k.index].name == k.name:
        return launches[k.index]
    return next((x for x in launches if x.name == k.name), None)


def _add_rooflines(ev: Evidence, table: _Table) -> None:
    """The ncu counters' point where there is one (measured bytes), else the Kineto op that launched the
    kernel (the one it spent most time in; shapes give the compulsory bytes)."""
    if ev.ncu_roofline is not None:
        for p in sorted(ev.ncu_roofline.points, key=lambda p: -p.time_us):
            f = table.find(p.label)
            if f is not None and f.roof is None:
                f.roof, f.roof_source = p, "roofline (ncu counters)"
    if ev.peaks is None or not ev.calls:
        return
    by_kernel: dict[str, list[OpCall]] = {}
    for c in ev.calls:
        for name in dict.fromkeys(c.kernels):
            by_kernel.setdefault(name, []).append(c)
    for f in table.facts:
        calls = by_kernel.get(f.name)
        points = from_calls(calls, ev.peaks).points if calls else []
        if not points:
            continue
        p = points[0]  # most time first
        f.data_dtype = (p.dtype, f"roofline (Kineto shapes): {p.label}")
        if f.roof is None:
            shared = any(len(c.kernels) > 1 for c in calls or [])
            f.roof_source = f"roofline (Kineto shapes, {p.label}{' with the other kernels it launched' * shared})"
            f.roof = p
    for f in table.facts:
        if f.data_dtype is None and f.identity.dtype:
            f.data_dtype = (f.identity.dtype, "the kernel's name")


# --- facts the rules share ------------------------------------------------------------------------------


def _editable(f: Facts) -> bool:
    return f.identity.kind not in LIBRARY_KINDS


def _matmul(f: Facts) -> bool:
    return f.identity.category in MATMUL


def _bound(f: Facts) -> Bound | None:
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


def _headroom(b: Bound | None) -> tuple[float, str] | None:
    if b is None:
        return None
    return 1 - b.pct / 100, f"{100 - b.pct:.0f}% headroom to the {b.kind} roof, from the {b.source}"


def _att_name(a: AttResult) -> str:
    return f"att {Path(a.path).name}"


def _att_kernel(a: AttResult) -> AttKernel | None:
    """The capture's kernel with the most executed instructions (the one a capture is taken for)."""
    return max(a.kernels, key=lambda k: k.hits, default=None)


def _vgpr_limited(a: AttResult, allowed: int | None) -> bool:
    """Few waves resident on a SIMD, as many as the VGPRs allow: the registers are the cap."""
    m = a.measured_waves_per_simd
    return m is not None and allowed is not None and m <= 2 and m >= allowed


def _stalls(f: Facts, reasons: Sequence[str], classes: Sequence[str]) -> Quote | None:
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
                f"{_att_name(a)}: {' + '.join(classes)} holds {pct:.1f}% of {a.stall_cycles:,} stall cycles "
                f"({100 * time:.1f}% of the traced waves' issue and idle cycles)"
            )
            quotes.append(Quote(pct, text, time))
    return max(quotes, key=lambda q: q.pct, default=None)


def _time(q: Quote | None, what: str) -> tuple[float, str] | None:
    """A stall quote as an effect bound: removing the waits cannot save more than the time spent in them."""
    if q is None or q.time is None:
        return None
    return q.time, f"the {100 * q.time:.0f}% of the kernel's warp/wave time spent {what}"


def _stalled(f: Facts) -> tuple[float, str] | None:
    """The fraction of the kernel's time its warps/waves did not issue: what latency hiding can win."""
    if f.ncu is not None and f.ncu.stall_samples:
        issued = sum(s.samples for s in f.ncu.stall_breakdown if s.reason == "selected")
        return 1 - issued / f.ncu.stall_samples, "ncu: the share of warp samples not issuing"
    a = f.att
    if a is not None and a.latency_cycles + a.idle_cycles:
        return a.stall_cycles / (a.latency_cycles + a.idle_cycles), f"{_att_name(a)}: the share of cycles stalled"
    return None


def _hot(f: Facts, reasons: Sequence[str], classes: Sequence[str]) -> tuple[str, str | None] | None:
    """The hottest source line (and instruction) whose top stall is one of ``reasons``/``classes``."""
    k = f.ncu
    if k is not None:
        line = next((s for s in k.lines if next(iter(s.reasons), None) in reasons), None)
        inst = next((h for h in k.hotspots if next(iter(h.reasons), None) in reasons), None)
        parts = []
        if line is not None:
            r = next(iter(line.reasons))
            text = f" `{line.text}`" if line.text else ""
            parts.append(
                f"{line.pct:.1f}% of warp-stall samples at {line.source}{text} "
                f"({stall_label(r).lower()} {line.reasons[r]:,})"
            )
        if inst is not None:
            top, n = next(iter(inst.reasons.items()))
            parts.append(
                f"top instruction {inst.address:#x} `{inst.instruction}`: {inst.stall_samples:,} samples "
                f"({inst.pct:.1f}%), {stall_label(top).lower()} {n:,}"
            )
        if parts:
            return "ncu: " + "; ".join(parts), line.source if line is not None else None
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
            return f"{_att_name(a)}: " + "; ".join(parts), src.source if src is not None else None
    return None


def _narrow(f: Facts) -> Quote | None:
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


def _ncu_occupancy(f: Facts) -> Occupancy | None:
    """The theoretical occupancy of the ncu launch (its block, registers, shared memory) and its limiter."""
    launch, device = f.launch, f.device
    if launch is None or launch.block is None or device is None or device.arch is None:
        return None
    regs = launch.registers or (f.ncu.headline.registers if f.ncu else None)
    k = KernelCode(name=f.name, arch=device.arch, vendor="nvidia", registers=regs, shared_bytes=launch.lds_bytes)
    return occupancy(k, block_size=launch.block.total, dynamic_shared=0)


def _ncu_achieved(f: Facts) -> str:
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


def _match(steps: list[Step], *bounds: tuple[float, str] | None, where: str | None = None) -> Match:
    effect, basis = _effect(*bounds)
    return Match(steps=steps, effect=effect, basis=basis, hotspots=[where] if where else [])


def _hot_step(f: Facts, reasons: Sequence[str], classes: Sequence[str], action: str) -> tuple[list[Step], str | None]:
    hot = _hot(f, reasons, classes)
    if hot is None:
        return [], None
    text, where = hot
    return [Step(evidence=text, inference="the waiting concentrates here", action=action)], where


# --- the rules ------------------------------------------------------------------------------------------


def _memory_access(f: Facts) -> Match | None:
    narrow = _narrow(f)
    narrow = narrow if narrow is not None and narrow.pct >= NARROW_PCT else None
    if not _editable(f) or (_matmul(f) and narrow is None):  # a GEMM waiting on memory: pipelining
        return None
    bound = _bound(f)
    if bound is not None and (bound.kind != "memory" or bound.pct >= NEAR_ROOF_PCT):
        return None
    waits = _stalls(f, NCU_MEMORY, ATT_MEMORY)
    waits = waits if waits is not None and waits.pct >= MEMORY_WAIT_PCT else None
    if waits is None and narrow is None:
        return None
    steps = []
    if bound is not None:
        steps.append(Step(
            evidence=bound.text,
            inference=f"DRAM is {100 - bound.pct:.0f}% idle: too few bytes in flight, not bandwidth, limit the kernel",
            action="raise the bytes in flight per warp: wider loads, more independent loads before the first use",
        ))  # fmt: skip
    if waits is not None:
        steps.append(Step(
            evidence=waits.text,
            inference="warps spend their time waiting for global-memory results",
            action="issue loads earlier and several at once (unroll, prefetch the next chunk): overlap their latency",
        ))  # fmt: skip
    hot, where = _hot_step(f, NCU_MEMORY, ATT_MEMORY, "rework the loads feeding this line first")
    steps += hot
    if narrow is not None:
        steps.append(Step(
            evidence=narrow.text,
            inference=f"each load moves less than {VECTOR_BITS // 8} B per thread: more instructions per byte moved",
            action=f"load {VECTOR_BITS} bits per thread: contiguous elements per thread and provably aligned, "
            "contiguous pointers (Triton tl.multiple_of / tl.max_contiguous, CUDA vector types)",
        ))  # fmt: skip
    return _match(steps, _headroom(bound), _time(waits, "waiting on memory"), where=where)


def _lines_of(sites: list[str]) -> str:
    """``a.py:44, 48, 52; b.py:3``: source lines grouped by file."""
    by_file: dict[str, list[str]] = {}
    for site in sites:
        file, _, line = site.rpartition(":")
        by_file.setdefault(file, []).append(line)
    return "; ".join(f"{file}:{', '.join(lines)}" for file, lines in by_file.items())


def _algorithm(f: Facts) -> Match | None:
    s, launch = f.sass, f.launch
    if not _editable(f) or _matmul(f) or s is None or launch is None or len(s.sites) < 2:
        return None
    dram_read = (launch.metrics or {}).get(DRAM_BYTES[0])
    if not dram_read or s.requested_bytes / dram_read < REREAD:
        return None
    ratio = s.requested_bytes / dram_read
    sites = _lines_of(s.sites)
    steps = [Step(
        evidence=f"ncu: global loads at {len(s.sites)} source lines ({sites}) request "
        f"{s.requested_bytes / 1e6:,.1f} MB; DRAM delivered {dram_read / 1e6:,.1f} MB of reads ({DRAM_BYTES[0]})",
        inference=f"each byte read from DRAM is loaded {ratio:.2f} times: the kernel passes over the same data "
        "several times, the later passes served by cache",
        action="restructure into one pass that keeps the data in registers or shared memory between the phases "
        "(e.g. online softmax: running max and sum in one sweep)",
    )]  # fmt: skip
    waits = _stalls(f, NCU_MEMORY, ATT_MEMORY)
    hot, where = _hot_step(f, NCU_MEMORY, ATT_MEMORY, "this load is one of the repeated passes: fold it into the first")
    steps += hot if waits is not None and waits.pct >= MEMORY_WAIT_PCT else []
    return _match(steps, (1 - 1 / ratio, f"1 - 1/{ratio:.2f}: the repeated loads, if time scales with load traffic"),
                  where=where)  # fmt: skip


def _pipelining(f: Facts) -> Match | None:
    if not _editable(f) or not _matmul(f):
        return None
    bound = _bound(f)
    waits = _stalls(f, NCU_MEMORY, ATT_MEMORY)
    if waits is None or waits.pct < MEMORY_WAIT_PCT or (bound is not None and bound.pct >= NEAR_ROOF_PCT):
        return None
    steps = [Step(
        evidence=waits.text,
        inference="a matrix kernel's waves wait for tiles from memory instead of overlapping the loads with math",
        action="prefetch the next tile while computing this one: more pipeline stages (num_stages), async copies "
        "(cp.async/TMA on NVIDIA, buffer loads straight to LDS on AMD), double-buffered LDS",
    )]  # fmt: skip
    hot, where = _hot_step(f, NCU_MEMORY, ATT_MEMORY, "move the loads this wait covers one iteration earlier")
    steps += hot
    steps += [Step(evidence=bound.text, inference="below the roof: the pipeline leaves it idle",
                   action="check the stage count against the LDS/shared memory it costs")] if bound else []  # fmt: skip
    return _match(steps, _headroom(bound), _time(waits, "waiting on memory"), where=where)


def _synchronization(f: Facts) -> Match | None:
    waits = _stalls(f, NCU_BARRIER, ATT_BARRIER)
    if not _editable(f) or waits is None or waits.pct < BARRIER_PCT:
        return None
    if _matmul(f):  # a tiled kernel's barriers hand shared-memory tiles from one stage to the next
        inference = "warps wait at the barriers that hand shared-memory tiles between pipeline stages"
        action = ("cheaper hand-offs: more stages with async copies and per-stage barriers (cp.async/TMA + mbarrier, "
                  "direct-to-LDS loads), or producer/consumer warp specialization")  # fmt: skip
    else:
        inference = "warps wait at block-wide barriers for the slowest warp of their block (cross-warp reductions)"
        action = ("fewer barriers: reduce within a warp first (shuffles), fewer warps per reduction, combine "
                  "reductions that share a barrier (max and sum together)")  # fmt: skip
    steps = [Step(evidence=waits.text, inference=inference, action=action)]
    hot, where = _hot_step(f, NCU_BARRIER, ATT_BARRIER, "this barrier (or the exchange behind it) is the first to cut")
    return _match(steps + hot, _time(waits, "waiting at barriers"), where=where)


def _data_reuse(f: Facts) -> Match | None:
    waits = _stalls(f, NCU_SHARED, ATT_SHARED)
    if not _editable(f) or waits is None or waits.pct < SHARED_WAIT_PCT:
        return None
    what = "LDS or scalar-memory (lgkmcnt)" if f.att is not None else "shared-memory or special-function (MUFU)"
    steps = [Step(
        evidence=waits.text,
        inference=f"waves wait on {what} results: round trips through on-chip memory, or bank conflicts",
        action="keep reused values in registers, widen LDS/shared accesses (128-bit), pad or swizzle the layout "
        "against bank conflicts, hoist scalar loads out of the loop",
    )]  # fmt: skip
    hot, where = _hot_step(f, NCU_SHARED, ATT_SHARED, "start with the accesses this wait covers")
    return _match(steps + hot, _time(waits, "waiting on on-chip memory"), where=where)


def _spills(k: KernelCode) -> str | None:
    """Registers spilled to memory, as the code object states them (AMD metadata; NVIDIA local/stack
    bytes and the LDL/STL instructions in the mix)."""
    if k.vendor == "amd":
        n = (k.vgpr_spill or 0) + (k.sgpr_spill or 0)
        return f"{n} registers spilled to {k.scratch_bytes or 0} B of scratch per work-item" if n else None
    ldl, stl = k.mix.get("ldl_spill", 0), k.mix.get("stl_spill", 0)
    if not (k.local_bytes or k.stack_bytes or ldl or stl):
        return None
    return f"{k.local_bytes or 0} B local, {k.stack_bytes or 0} B stack per thread, {ldl} LDL / {stl} STL instructions"


def _occupancy(f: Facts) -> Match | None:
    bound = _bound(f)
    if not _editable(f) or (bound is not None and bound.pct >= NEAR_ROOF_PCT):
        return None
    steps = []
    k = f.code
    o = k.occupancy if k is not None else None
    if k is not None and o is not None and o.limiter in REGISTER_LIMITERS and o.pct < LOW_OCCUPANCY_PCT:
        steps.append(Step(
            evidence=f"isa {k.arch}: {o.per_unit} ({o.pct:.0f}% of {o.max_per_unit}) at {o.block_size} threads per "
            f"block, limited by {o.limiter}",
            inference="few resident warps/waves: little to switch to while one waits",
            action=f"cut {o.limiter} per thread or block: fewer live values, smaller tiles, a launch bound "
            "(__launch_bounds__ / maxnreg, amdgpu waves-per-eu)",
        ))  # fmt: skip
    spill = _spills(k) if k is not None else None
    if k is not None and spill is not None:
        steps.append(Step(
            evidence=f"isa {k.arch}: {spill}",
            inference="values live in memory instead of registers: extra traffic, often in the inner loop",
            action="cut register pressure until the spills are gone (smaller tiles, fewer live values)",
        ))  # fmt: skip
    occ = _ncu_occupancy(f)
    h = f.ncu.headline if f.ncu else None
    achieved = h.achieved_occupancy_pct if h else None
    if occ is not None and occ.limiter in REGISTER_LIMITERS and achieved is not None and achieved < LOW_OCCUPANCY_PCT:
        steps.append(Step(
            evidence=f"ncu: {occ.per_unit} at most with {f.launch.registers if f.launch else '?'} registers/thread "
            f"and {occ.block_size}-thread blocks, limited by {occ.limiter}{_ncu_achieved(f)}",
            inference="the register or shared-memory budget per block caps the resident warps",
            action=f"cut {occ.limiter} per block so more blocks fit on an SM",
        ))  # fmt: skip
    a = f.att
    main = _att_kernel(a) if a is not None else None
    regs = main.registers if main is not None else None
    if a is not None and regs is not None and _vgpr_limited(a, regs.waves_per_simd):
        steps.append(Step(
            evidence=f"{_att_name(a)}: at most {a.measured_waves_per_simd} wave(s) per SIMD resident; its "
            f"{regs.vgpr_alloc} VGPRs allow {regs.waves_per_simd} of {regs.max_waves_per_simd}",
            inference="the VGPR allocation caps the waves per SIMD",
            action="fewer VGPRs per wave: smaller tiles, fewer live values, a waves-per-eu bound",
        ))  # fmt: skip
    if not steps:
        return None
    return _match(steps, _headroom(bound), _stalled(f))


def _launch_config(f: Facts) -> Match | None:
    if not _editable(f):
        return None
    steps = []
    k = f.code
    o = k.occupancy if k is not None else None
    if k is not None and o is not None and o.limiter in BLOCK_LIMITERS and o.pct < 100:
        steps.append(Step(
            evidence=f"isa {k.arch}: {o.block_size}-thread blocks reach the limit of {o.blocks_per_cu} {o.limiter} "
            f"per unit first: {o.per_unit} ({o.pct:.0f}% of {o.max_per_unit})",
            inference=f"blocks this small leave {100 - o.pct:.0f}% of the warp slots empty",
            action="more threads per block (num_warps, blockDim) sharing the block's work, or more work per block",
        ))  # fmt: skip
    occ = _ncu_occupancy(f)
    if occ is not None and occ.limiter in BLOCK_LIMITERS and occ.pct < 100:
        steps.append(Step(
            evidence=f"ncu: {occ.block_size}-thread blocks; {f.device.arch if f.device else ''} holds at most "
            f"{occ.blocks_per_cu} blocks per SM: {occ.per_unit} of {occ.max_per_unit} ({occ.pct:.0f}%)"
            + _ncu_achieved(f),
            inference=f"blocks this small hit the per-SM block limit first and leave {100 - occ.pct:.0f}% of the warp "
            "slots empty",
            action="more warps per block (num_warps / blockDim) splitting the same work, or several rows per block",
        ))  # fmt: skip
    if not steps:
        return None
    return _match(steps, _headroom(_bound(f)), _stalled(f))


def _tile_shape(f: Facts) -> Match | None:
    launch, device = f.launch, f.device
    if not _editable(f) or launch is None or launch.grid_blocks is None or device is None:
        return None
    blocks, units = launch.grid_blocks.total, device.compute_units
    if not units or blocks >= units:
        return None
    steps = [Step(
        evidence=f"ncu: a grid of {blocks:,} blocks on {units} SMs",
        inference=f"{units - blocks} SMs get no block at all",
        action="smaller tiles (more blocks), split the reduction dimension (split-K), or a persistent schedule",
    )]  # fmt: skip
    return _match(steps, (1 - blocks / units, f"{units - blocks} of {units} SMs idle"))


def _instruction_selection(f: Facts) -> Match | None:
    if not _editable(f) or not _matmul(f):
        return None
    bound = _bound(f)
    if bound is not None and bound.kind == "memory":
        return None
    steps = []
    k, s = f.code, f.sass
    if k is not None and k.instructions and not k.mix.get("matrix"):
        steps.append(Step(
            evidence=f"isa {k.arch}: none of the {k.instructions:,} instructions use the matrix units",
            inference=f"a {f.identity.category} kernel computing on the vector units",
            action="route the inner product through the matrix units (tl.dot, MFMA/WMMA, WGMMA/MMA) with a "
            "supported dtype and tiles of at least 16 along each dimension",
        ))  # fmt: skip
    if s is not None and s.executed and not s.matrix:
        steps.append(Step(
            evidence=f"ncu: none of the {s.executed:,} executed warp instructions are tensor-core MMAs",
            inference=f"a {f.identity.category} kernel computing on the FP32/FP16 pipes",
            action="use tensor-core MMAs (tl.dot, WGMMA/MMA) with a supported dtype and tile sizes",
        ))  # fmt: skip
    if not steps:
        return None
    return _match(steps, _headroom(bound) if bound is not None and bound.kind == "compute" else None)


def _fusion(f: Facts) -> Match | None:
    row, bound = f.row, _bound(f)
    if row is None or f.identity.category not in FUSABLE:
        return None
    steps = []
    if bound is not None and bound.kind == "memory" and bound.pct >= NEAR_ROOF_PCT:
        steps.append(Step(
            evidence=bound.text,
            inference="at the memory roof already: this kernel only gets faster by moving fewer bytes",
            action="fuse it into its producer or consumer so its input or output never goes through DRAM "
            "(torch.compile, a fused Triton kernel, a GEMM epilogue)",
        ))  # fmt: skip
    if row.avg_us < TINY_US and row.calls >= TINY_CALLS:
        steps.append(Step(
            evidence=f"gap: {row.calls:,} calls averaging {row.avg_us:.1f} µs",
            inference="launches this short are dominated by launch and ramp-up cost",
            action="fuse it with its neighbours, or capture the sequence in a CUDA/HIP graph",
        ))  # fmt: skip
    if not steps:
        return None
    t = f.totals
    if t is not None and t.wall_time_us and t.idle_time_us and 100 * t.idle_time_us / t.wall_time_us >= IDLE_PCT:
        steps.append(Step(
            evidence=f"gap: the GPU idles {100 * t.idle_time_us / t.wall_time_us:.0f}% of the "
            f"{t.wall_time_us:,.0f} µs wall time",
            inference="gaps between launches are a visible part of the run",
            action="fewer, larger kernels also shrink those gaps",
        ))  # fmt: skip
    return _match(steps, (1.0, "its whole time, if fusion removes all of its DRAM traffic and its launch"))


def _precision(f: Facts) -> Match | None:
    bound = _bound(f)
    if bound is None or bound.kind != "memory" or f.data_dtype is None or f.data_dtype[0] not in WIDE_DTYPES:
        return None
    dtype, where = f.data_dtype
    size = WIDE_DTYPES[dtype]
    steps = [
        Step(evidence=bound.text, inference="a memory-bound kernel's time scales with its bytes",
             action="move fewer bytes per element"),
        Step(evidence=f"{where}: {dtype} data ({size} B per element)",
             inference=f"2-byte storage would move {100 * (1 - 2 / size):.0f}% fewer bytes",
             action="store in bf16/fp16 (or fp8) where accuracy allows, computing in fp32"),
    ]  # fmt: skip
    return _match(steps, (1 - 2 / size, f"{100 * (1 - 2 / size):.0f}% fewer bytes at 2 B per element"))


def _library_choice(f: Facts) -> Match | None:
    bound = _bound(f)
    if _editable(f) or bound is None or bound.pct >= NEAR_ROOF_PCT:
        return None
    i = f.identity
    steps = [
        Step(evidence=bound.text, inference=f"{100 - bound.pct:.0f}% below its roof",
             action="compare other implementations of the op on the same shapes"),
        Step(evidence=f"identity: {i.kind} {i.category} kernel {i.function}",
             inference="prebuilt library code: its source is not yours to change",
             action="try another algorithm of the library (cuBLASLt/hipBLASLt autotuning), torch.compile "
             "(mode='max-autotune'), or Triton/CUTLASS/CK kernels"),
    ]  # fmt: skip
    return _match(steps, _headroom(bound))


RULES: tuple[Rule, ...] = (
    Rule("memory-latency", "memory_access", 0.9,
         Risk(level="low", why="changes how data is loaded, not what is computed; check masked tails and alignment"),
         f"memory-bound below {NEAR_ROOF_PCT:.0f}% of the roof (or bound unknown), with >= {MEMORY_WAIT_PCT:.0f}% of "
         f"stalls on global memory or >= {NARROW_PCT:.0f}% of global loads narrower than {VECTOR_BITS} bits",
         _memory_access),
    Rule("repeated-passes", "algorithm", 0.8,
         Risk(level="medium", why="a new decomposition: numerics (e.g. online rescaling) and edge cases change"),
         f"not a matrix kernel; global loads at >= 2 source lines request >= {REREAD}x the bytes DRAM delivered",
         _algorithm),
    Rule("matrix-memory-waits", "pipelining", 0.7,
         Risk(level="medium", why="more stages hold more registers and LDS/shared memory: occupancy can drop"),
         f"a matrix kernel (gemm, attention, conv) with >= {MEMORY_WAIT_PCT:.0f}% of stalls on global memory, "
         f"below {NEAR_ROOF_PCT:.0f}% of its roof", _pipelining),
    Rule("barrier-stalls", "synchronization", 0.7,
         Risk(level="medium", why="a missing barrier is a race: the correctness gate must cover varied shapes"),
         f">= {BARRIER_PCT:.0f}% of stall samples/cycles at barriers", _synchronization),
    Rule("on-chip-memory-waits", "data_reuse", 0.6,
         Risk(level="medium", why="layout changes (padding, swizzles) cost LDS/shared memory and index math"),
         f">= {SHARED_WAIT_PCT:.0f}% of stalls on LDS/shared memory (ncu short scoreboard + MIO throttle, ATT "
         "lds_smem_wait)", _data_reuse),
    Rule("register-limited", "occupancy", 0.6,
         Risk(level="medium", why="fewer registers can mean smaller tiles (less reuse) or new spills"),
         f"below {NEAR_ROOF_PCT:.0f}% of the roof; occupancy under {LOW_OCCUPANCY_PCT:.0f}% limited by registers "
         "or LDS/shared memory, or register spills", _occupancy),
    Rule("small-blocks", "launch_config", 0.6,
         Risk(level="low", why="launch parameters only; the work per block must still be split correctly"),
         "the per-SM/CU block limit, not registers or memory, caps occupancy below 100%", _launch_config),
    Rule("small-grid", "tile_shape", 0.6,
         Risk(level="medium", why="smaller tiles trade reuse for parallelism and need re-tuning per shape"),
         "fewer blocks in the grid than SMs", _tile_shape),
    Rule("no-matrix-units", "instruction_selection", 0.8,
         Risk(level="medium", why="matrix units need supported dtypes and tile sizes; accumulation order changes"),
         "a gemm/attention/conv kernel, not memory-bound, without matrix-unit instructions", _instruction_selection),
    Rule("bandwidth-bound-or-tiny", "fusion", 0.5,
         Risk(level="medium", why="changes kernel boundaries; the fused kernel holds more live values"),
         f"an elementwise/norm/copy/reduce/softmax kernel in the trace at >= {NEAR_ROOF_PCT:.0f}% of the memory roof, "
         f"or averaging < {TINY_US:.0f} µs over >= {TINY_CALLS} calls", _fusion),
    Rule("wide-data", "precision", 0.3,
         Risk(level="high", why="changes results: needs an accuracy tolerance agreed with the model's owner"),
         "memory-bound on fp32/fp64 data", _precision),
    Rule("library-below-roof", "library_choice", 0.4,
         Risk(level="low", why="the same math from another implementation; summation order may differ"),
         f"a library kernel (cuBLAS, cuDNN, Tensile, aten, ...) below {NEAR_ROOF_PCT:.0f}% of its roof",
         _library_choice),
)  # fmt: skip


# --- ranking --------------------------------------------------------------------------------------------


def _demotions(f: Facts, lever: Lever, ledger: Sequence[LedgerRecord]) -> list[Demotion]:
    """Ledger records of ``lever`` on this kernel (its name or short function name) that did not work."""
    names = {f.name, f.identity.function}
    return [
        Demotion(id=r.id, task=r.task, time=r.time, status=r.status, factor=DEMOTION[r.status])
        for r in ledger
        if r.lever == lever and r.kernel in names and r.status in DEMOTION
    ]


def _inside(path: str, repo: str) -> str | None:
    p, root = PurePosixPath(path), PurePosixPath(repo)
    return str(p.relative_to(root)) if p.is_absolute() and p.is_relative_to(root) else None


def _task_name(f: Facts, lever: Lever) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{f.identity.function}-{lever}").lstrip("._-")[:64]
    return name if re.fullmatch(TASK_NAME, name) else lever


def _contract(f: Facts, lever: Lever, ev: Evidence, code: list[str], test: str | None) -> Contract:
    gate = test or "CHECK: a command that exits non-zero when the kernel's output differs from a reference"
    if lever == "precision":
        gate += " (within the accuracy tolerance agreed for the narrower type)"
    argv = [
        "kscope", "task", "new", _task_name(f, lever), "-w", ev.workspace or "WS", "--repo", ev.repo or "REPO",
        "--baseline-ref", ev.baseline or "REF", "--allowed", code[0] if code else "GLOB", "--eval-command", "CMD",
        "--metric", "time_us", "--direction", "lower", "--timeout", "600", "--correctness", test or "CHECK",
        "--kernel", f.name, "--lever", lever,
    ]  # fmt: skip
    return Contract(
        metric="time_us",
        direction="lower",
        measure="CMD prints KSCOPE_METRIC time_us=<the kernel's time> on the task's shapes (kscope bench "
        "FILE.py:FACTORY, a replay script, or the workload's own timer)",
        correctness=gate,
        command=" ".join(shlex.quote(a) for a in argv),
    )


def _experiment(f: Facts, rule: Rule, m: Match, ev: Evidence) -> Experiment:
    demoted = _demotions(f, rule.lever, ev.ledger)
    effect = m.effect if m.effect is not None else UNBOUNDED
    score = (f.share if f.share is not None else 1.0) * rule.confidence * effect * math.prod(d.factor for d in demoted)
    found = ev.sources.get(f.name)
    code, tests, test = [], [], None
    if ev.repo is not None:
        located = [found.location.path] if found is not None and found.location is not None else []
        code = list(dict.fromkeys(located + [p for h in m.hotspots if (p := _inside(h.rsplit(":", 1)[0], ev.repo))]))
        tests = [t.path for t in found.tests] if found is not None else []
        test = next((t.command for t in found.tests if t.command), None) if found is not None else None
    share_pct = None if f.share is None else 100 * f.share
    if m.effect is None:
        expected = Effect(kernel_pct=None, total_pct=None, basis=f"{m.basis}; scored as {UNBOUNDED:.0%} of the kernel")
    else:
        total = None if share_pct is None else share_pct * m.effect
        of_total = f", {total:.1f}% of the GPU time at its {share_pct:.1f}% share" if total is not None else ""
        basis = f"saves at most {100 * m.effect:.0f}% of the kernel's time{of_total}: {m.basis}"
        expected = Effect(kernel_pct=100 * m.effect, total_pct=total, basis=basis)
    return Experiment(
        rank=0,
        score=round(score, 4),
        lever=rule.lever,
        rule=rule.id,
        kernel=KernelRef(
            name=f.name,
            function=f.identity.function,
            identity=f.identity.summary(),
            share_pct=share_pct,
            share_source=f.share_source,
        ),
        files=list(dict.fromkeys(code + tests)),
        hotspots=m.hotspots,
        rationale=m.steps,
        risk=rule.risk,
        expected=expected,
        contract=_contract(f, rule.lever, ev, code, test),
        demoted_by=demoted,
    )


def rank(ev: Evidence, *, kernel: str | None = None, top: int = 10) -> SuggestResult:
    """The ``top`` experiments over the kernels matching ``kernel`` (a regex), best first; ties go to the
    lever named first in ``LEVERS``, then to the kernel name."""
    facts, notes = kernels(ev)
    if kernel is not None:
        wanted = selector(kernel)
        chosen = [f for f in facts if wanted(f.name, f.identity.demangled)]
        if not chosen:
            raise InputError(f"--kernel {kernel!r} matches none of the {len(facts)} kernel(s) in the evidence")
        facts = chosen
    found = [_experiment(f, r, m, ev) for f in facts for r in RULES if (m := r.test(f)) is not None]
    found.sort(key=lambda e: (-e.score, LEVERS.index(e.lever), e.kernel.name))
    for i, e in enumerate(found, 1):
        e.rank = i
    silent = len(facts) - len({e.kernel.name for e in found})
    if silent:
        notes.append(f"{silent} of {len(facts)} kernel(s) triggered no rule")
    if len(found) > top:
        notes.append(f"{len(found) - top} more experiment(s) below --top {top}")
    return SuggestResult(experiments=found[:top], evidence_used={k: list(v) for k, v in ev.inputs.items()},
                         notes=[*ev.notes, *notes])  # fmt: skip
