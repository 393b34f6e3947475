"""Select part of a profile: the last N profiler steps, a time range, or the phases of user annotations.

A kernel belongs to the innermost annotation that encloses the host call that launched it
(``launch_ns``, linked by correlation id): kernels run after their launch, often after the host range
has closed, so their own start time would put them in the wrong step. Only when a rank's trace links
no launch to a host call, a GPU-side annotation (Kineto's ``gpu_user_annotation``) enclosing the
kernel's start is used, and failing that a host annotation enclosing its start; in a linked trace a
launch without a host call in the capture (launched before it began) belongs to no annotation.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from kernelscope.errors import InputError
from kernelscope.model import Annotation, KernelLaunch, Profile
from kernelscope.model.gap import HarnessBurst

STEP_PATTERN = re.compile(r"ProfilerStep\s*#\s*(\d+)")
NO_PHASE = "(outside)"


@dataclass(frozen=True)
class Window:
    """``last_steps`` (the last N ``ProfilerStep#`` annotations) or ``[start_us, end_us)`` from the first activity."""

    last_steps: int | None = None
    start_us: float | None = None
    end_us: float | None = None
    steady: bool = False  # the steady iterations (analyses/steady.py)

    @classmethod
    def parse(cls, spec: str) -> Window:
        """``"3"`` = last 3 steps; ``"1000:5000"`` / ``"1000:"`` / ``":5000"`` = a range in µs; ``"steady"``."""
        spec = spec.strip()
        if spec == "steady":
            return cls(steady=True)
        try:
            if ":" in spec:
                a, b = spec.split(":", 1)
                return cls(start_us=float(a) if a else 0.0, end_us=float(b) if b else None)
            n = int(spec)
        except ValueError:
            raise InputError(f"--window {spec!r}: expected N (last N steps), START_US:END_US or steady") from None
        if n <= 0:
            raise InputError(f"--window {spec!r}: the number of steps must be positive")
        return cls(last_steps=n)

    def describe(self) -> str:
        if self.steady:
            return "steady iterations"
        if self.last_steps is not None:
            # one label for PyTorch's ProfilerStep#N and JAX's StepTraceAnnotation
            return f"last {self.last_steps} profiler step{'s' if self.last_steps > 1 else ''}"
        end = "end" if self.end_us is None else f"{self.end_us:g} us"
        return f"{self.start_us or 0:g} us to {end} from the first GPU activity"


class _Ranges:
    """Annotations of one (rank, domain), sorted, for innermost-enclosing lookups."""

    def __init__(self, notes: list[Annotation]) -> None:
        self.notes = sorted(notes, key=lambda a: (a.start_ns, -a.end_ns))
        self.starts = [a.start_ns for a in self.notes]

    def find(self, t: int) -> Annotation | None:
        i = bisect.bisect_right(self.starts, t) - 1
        while i >= 0:  # the latest-starting range that still covers t is the innermost
            a = self.notes[i]
            if a.end_ns >= t:
                return a
            i -= 1
        return None


def assign(profile: Profile, keep: Callable[[Annotation], bool]) -> list[Annotation | None]:
    """For each launch, the innermost annotation passing ``keep`` that it belongs to (see module doc)."""
    by: dict[tuple[int | None, str], list[Annotation]] = {}
    for a in profile.annotations:
        if keep(a):
            by.setdefault((a.rank, a.domain), []).append(a)
    index = {k: _Ranges(v) for k, v in by.items()}
    empty = _Ranges([])
    # Ranks whose trace links launches to API calls: there, a launch without one was made before the
    # host capture began (a warmup step's kernel still running), so no range of the capture owns it.
    linked = {k.rank for k in profile.launches if k.launch_ns is not None}
    out: list[Annotation | None] = []
    for k in profile.launches:
        host, gpu = index.get((k.rank, "host"), empty), index.get((k.rank, "gpu"), empty)
        hit = host.find(k.launch_ns) if k.launch_ns is not None else None
        if hit is None and k.launch_ns is None and k.rank not in linked and k.start_ns is not None:
            hit = gpu.find(k.start_ns) or host.find(k.start_ns)
        out.append(hit)
    return out


def subset(profile: Profile, launches: list[KernelLaunch]) -> Profile:
    """The profile restricted to ``launches``; memory ops kept where they fall inside the launches' span."""
    starts = [k.start_ns for k in launches if k.start_ns is not None]
    ends = [k.end_ns for k in launches if k.end_ns is not None]
    lo, hi = (min(starts), max(ends)) if starts else (0, -1)
    mem = [m for m in profile.memory_ops if m.start_ns is not None and lo <= m.start_ns <= hi]
    return msgspec.structs.replace(profile, launches=launches, memory_ops=mem)


def apart(
    profile: Profile, bursts: list[HarnessBurst]
) -> tuple[Profile, Profile, dict[int | None, list[tuple[int, int]]]]:
    """``profile`` less the launches of ``bursts`` (on a burst's rank and device, inside its span), those
    launches as a profile of their own, and the bursts' spans per rank (that profile's wall time)."""
    spans: dict[tuple[int | None, int | None], list[tuple[int, int]]] = {}
    windows: dict[int | None, list[tuple[int, int]]] = {}
    for b in bursts:
        lo, hi = round(b.start_us * 1000) - 2, round((b.start_us + b.span_us) * 1000) + 2  # µs floats: ±2 ns
        spans.setdefault((b.rank, b.device), []).append((lo, hi))
        windows.setdefault(b.rank, []).append((lo + 2, hi - 2))
    for v in spans.values():
        v.sort()

    def inside(k: KernelLaunch) -> bool:
        ranges = spans.get((k.rank, k.device))
        if not ranges or k.start_ns is None:
            return False
        i = bisect.bisect_right(ranges, (k.start_ns, 2**63)) - 1
        return i >= 0 and k.start_ns <= ranges[i][1]

    held: list[KernelLaunch] = []
    kept: list[KernelLaunch] = []
    for k in profile.launches:
        (held if inside(k) else kept).append(k)
    return msgspec.structs.replace(profile, launches=kept), subset(profile, held), windows


def select(profile: Profile, window: Window) -> Profile:
    """The part of ``profile`` inside ``window`` (a steady window: ``analyses.steady.select``, which also
    says what it found)."""
    if window.steady:
        from kernelscope.analyses.steady import select as steady

        return steady(profile)[0]
    if window.last_steps is not None:
        return _last_steps(profile, window.last_steps)
    times = [k.start_ns for k in profile.launches if k.start_ns is not None]
    times += [m.start_ns for m in profile.memory_ops if m.start_ns is not None]
    if not times:
        raise InputError("--window with a time range needs timestamps; this profile has none")
    t0 = min(times)
    lo = t0 + round((window.start_us or 0.0) * 1000)
    hi = None if window.end_us is None else t0 + round(window.end_us * 1000)
    kept = [
        k for k in profile.launches if k.start_ns is not None and k.start_ns >= lo and (hi is None or k.start_ns < hi)
    ]
    return subset(profile, kept)


def step_number(a: Annotation) -> int | None:
    """The step a range marks: its ``step`` (JAX), else the N of a ``ProfilerStep#N`` name (PyTorch)."""
    if a.step is not None:
        return a.step
    m = STEP_PATTERN.fullmatch(a.name.strip())
    return int(m.group(1)) if m else None


def _last_steps(profile: Profile, n: int) -> Profile:
    steps = sorted({s for a in profile.annotations if (s := step_number(a)) is not None})
    if not steps:
        raise InputError(
            "--window N needs step annotations (PyTorch's ProfilerStep#, JAX's StepTraceAnnotation) and this profile "
            "has none; "
            "profile with a step schedule (kscope profile) or pass a time range START_US:END_US"
        )
    wanted = set(steps[-n:])
    owners = assign(profile, lambda a: step_number(a) is not None)
    kept = [k for k, a in zip(profile.launches, owners, strict=True) if a is not None and step_number(a) in wanted]
    return subset(profile, kept)


def phases(profile: Profile, pattern: str) -> dict[str, tuple[Profile, dict[int | None, list[tuple[int, int]]]]]:
    """Split launches by the innermost enclosing annotation matching ``pattern`` (regex, searched), each
    phase with its instances' spans per rank (first kernel start to last kernel end of each annotation it
    came from): a phase's wall time is their union, not its first-to-last span.

    The phase label is the first capture group when the pattern has one, else the annotation name.
    Launches outside every matching annotation go to ``"(outside)"`` (no spans: its wall is its extent).
    """
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise InputError(f"--phase-by {pattern!r}: not a valid regular expression ({exc})") from None
    owners = assign(profile, lambda a: rx.search(a.name) is not None)
    groups: dict[str, list[KernelLaunch]] = {}
    spans: dict[str, dict[tuple[int | None, int], list[int]]] = {}
    for k, a in zip(profile.launches, owners, strict=True):
        if a is None:
            label = NO_PHASE
        else:
            m = rx.search(a.name)
            label = m.group(1) if m and m.groups() and m.group(1) else a.name
            if k.start_ns is not None and k.end_ns is not None:
                span = spans.setdefault(label, {}).setdefault((k.rank, id(a)), [k.start_ns, k.end_ns])
                span[0], span[1] = min(span[0], k.start_ns), max(span[1], k.end_ns)
        groups.setdefault(label, []).append(k)
    out = {}
    for label, ks in groups.items():
        windows: dict[int | None, list[tuple[int, int]]] = {}
        for (rank, _), (lo, hi) in spans.get(label, {}).items():
            windows.setdefault(rank, []).append((lo, hi))
        out[label] = (subset(profile, ks), windows)
    return out
