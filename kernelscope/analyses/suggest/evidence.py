"""The evidence ``kscope suggest`` reads, and each kernel's facts joined from every input."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.analyses.ncu import summarize_kernel
from kernelscope.analyses.roofline import from_calls
from kernelscope.analyses.suggest.thresholds import TOP_LINES, VECTOR_BITS
from kernelscope.analyses.variants import fits
from kernelscope.codeobj.mix import nvidia_mix, sass_opcode
from kernelscope.identity import Identities
from kernelscope.identity.source import from_match
from kernelscope.model import DeviceInfo, KernelLaunch
from kernelscope.model.att import AttKernel, AttResult
from kernelscope.model.codeobj import CodeObject, KernelCode
from kernelscope.model.gap import GapResult, GapTotals, KernelRow
from kernelscope.model.identity import KernelIdentity
from kernelscope.model.levers import Lever
from kernelscope.model.ncu import KernelSummary, NcuKernelSource, NcuSource
from kernelscope.model.ops import OpCall
from kernelscope.model.roofline import Peaks, RooflinePoint, RooflineResult
from kernelscope.model.source import SourceLocation, SourceMatch
from kernelscope.model.suggest import (
    Risk,
    Step,
)
from kernelscope.model.task import LedgerRecord


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
    sites: list[SourceLocation]  # source lines with executed global loads, in address order


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
    hotspots: list[SourceLocation] = field(default_factory=list)


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
    sites: dict[SourceLocation, None] = {}
    for inst in k.instructions:
        op = sass_opcode(inst.sass)
        n = inst.executed or 0
        executed += n
        mix = nvidia_mix([op] if op else [])
        matrix += n if mix["matrix"] else 0
        width = next((int(c[5:]) for c in mix if c.startswith("ldg.b")), None)
        if width is None or not n:
            continue
        widths[width] += n
        requested += (inst.thread_executed or 0) * width / 8
        if inst.source is not None:
            sites[inst.source] = None
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
    function name that only one kernel has. The timing input's own kernels are distinct: six hipBLASLt GEMMs
    share the function name ``Cijk_Alik_Bljk`` and stay six."""

    def __init__(self, names: Sequence[str]) -> None:
        self.ids = Identities()
        self.ids.add(names)
        self.facts: list[Facts] = []

    def find(self, name: str, *, by_function: bool = True) -> Facts | None:
        ident = self.ids[name]
        hit = next((f for f in self.facts if f.name == name), None) or next(
            (f for f in self.facts if f.identity.demangled == ident.demangled), None
        )
        if hit is not None or not by_function:
            return hit
        same = [f for f in self.facts if f.identity.function == ident.function]
        return same[0] if len(same) == 1 else None

    def get(self, name: str, *, timing: bool = False) -> Facts:
        """The kernel ``name`` joins, or a new one; ``timing``: a kernel of the timing input, which only its own
        name (or demangled form) joins."""
        found = self.find(name, by_function=not timing)
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
    mains = [(a, att_kernel(a)) for a in ev.att]
    code = [k for o in ev.code for k in o.kernels]
    names += [k.name for k in ncu] + [m.name for _, m in mains if m] + [k.name for k in code]
    table = _Table(names)
    notes: list[str] = []
    timed = ev.gap is not None or any(k.duration_ns for k in ncu)
    if ev.gap is not None:
        t = ev.gap.totals
        for r in ev.gap.kernels:
            f = table.get(r.name, timing=True)
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
    joined: dict[int, tuple[Facts, list[KernelCode]]] = {}
    for k in code:
        of = table.find(k.name) if timed else table.get(k.name)
        if of is None:
            left["code-object kernel"] += 1
        else:
            joined.setdefault(id(of), (of, []))[1].append(k)
    for of, ks in joined.values():  # several code objects of a kernel (configs, archs): the one that ran
        ran = of.row.top_variant if of.row is not None else None
        fit = [k for k in ks if fits(ran, k)] if ran is not None else []
        of.code = fit[0] if fit else ks[0]
        repeated += len(ks) - 1
        if ran is not None and len(fit) > 1:
            notes.append(f"{of.name}: {len(fit)} code objects fit the variant that ran ({ran.label()}): the first")
    for f in table.facts:  # with a repository: the kind and category its source shows, where the name said too little
        if (found := ev.sources.get(f.name)) is not None:
            f.identity = from_match(f.identity, found)
    notes += [f"{n} {what}(s) match no timed kernel: left out" for what, n in left.items()]
    if repeated:
        notes.append(f"{repeated} code-object kernel(s) repeat a kernel (another config, arch or specialization): "
                     "the one that fits the variant that ran most is used, else the first")  # fmt: skip
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
        f = table.find(k.name) if timed_by_gap else table.get(k.name, timing=True)
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


def att_name(a: AttResult) -> str:
    return f"att {Path(a.path).name}"


def att_kernel(a: AttResult) -> AttKernel | None:
    """The capture's kernel with the most executed instructions (the one a capture is taken for)."""
    return max(a.kernels, key=lambda k: k.hits, default=None)
