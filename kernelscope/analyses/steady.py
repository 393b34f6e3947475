"""Steady state without markers: the repeating iteration in a device's kernel sequence.

A training or decode loop launches the same kernels in the same order every iteration; the first ones differ
(warm-up, compilation, autotuning, cache allocation). Over one device's launches in time order, the longest
suffix of the kernel-name sequence that repeats a period at least ``MIN_ITERATIONS`` times is the steady
state: its period is the iteration's launch count (Knuth-Morris-Pratt's failure function over the reversed
sequence gives, for every suffix, its smallest period, in one pass). The first steady iteration begins where
the repetition begins or, when the repeating stretch holds more than whole periods, at the launch within that
slack after the longest wait (between launch calls on the host where the trace links them, else the GPU's
idle gap): the host's turn between iterations. A step marker may still sit
a few launches away (the names do not say where a step's code begins): the iterations are whole periods, the
same count and launches per iteration wherever the boundary falls.
"""

from __future__ import annotations

import msgspec
import numpy as np

from kernelscope.analyses.window import assign, step_number, subset
from kernelscope.errors import InputError
from kernelscope.model import KernelLaunch, Profile
from kernelscope.model.gap import Steady

MIN_ITERATIONS = 2
MIN_PERIOD = 2  # a single kernel repeated is a loop inside an iteration, not an iteration
MAX_LAUNCHES = 400_000  # the tail searched: a periodic suffix longer than this is cut to it
WARMUP_RATIO = 1.5  # a leading iteration this much slower than the median is warm-up, not steady


def _settled(lengths: np.ndarray) -> int:
    """How many leading iterations are warm-up (``lengths``: start to next start, one fewer than the
    iterations): slower than ``WARMUP_RATIO`` x the median of the later ones (the first decode step after a
    prefill, the first training step with its allocations and autotuning)."""
    drop = 0
    while lengths.size - drop > MIN_ITERATIONS - 1 and lengths[drop] > WARMUP_RATIO * np.median(lengths[drop + 1 :]):
        drop += 1
    return drop


def _smallest_periods(seq: list[int]) -> list[int]:
    """``out[L-1]``: the smallest period of ``seq[:L]`` (Knuth-Morris-Pratt failure function)."""
    n = len(seq)
    fail = [0] * n
    k = 0
    for i in range(1, n):
        while k and seq[i] != seq[k]:
            k = fail[k - 1]
        if seq[i] == seq[k]:
            k += 1
        fail[i] = k
    return [i + 1 - f for i, f in enumerate(fail)]


def detect(
    name_id: np.ndarray, start_ns: np.ndarray, end_ns: np.ndarray, launch_ns: np.ndarray | None = None
) -> Steady | None:
    """The steady iterations among one device's launches (in time order), or None when no suffix repeats.
    ``launch_ns``: each launch call's host time (0 where unknown), which places the boundary better than
    the GPU's gaps: the host's turn between iterations (a sync, sampling, Python) delays the next launch."""
    n = int(name_id.size)
    tail = min(n, MAX_LAUNCHES)
    rev = name_id[n - tail :][::-1].tolist()
    periods = _smallest_periods(rev)
    best = 0
    for length in range(tail, 0, -1):  # the longest suffix with enough whole repeats of a real period
        p = periods[length - 1]
        if p >= MIN_PERIOD and length >= MIN_ITERATIONS * p:
            best = length
            break
    if not best:
        return None
    period = periods[best - 1]
    iterations = best // period
    # the repetition begins at n - best; the launches beyond whole periods are slack: the iterations start
    # at the launch within it after the longest wait (a loop's boundary: the host's turn)
    first, slack = n - best, best - iterations * period
    at = np.arange(first, first + slack + 1)
    ok = at > 0
    before = np.zeros(at.size, np.int64)
    if launch_ns is not None and bool((launch_ns[np.maximum(at - 1, 0)] > 0).all() and (launch_ns[at] > 0).all()):
        before[ok] = launch_ns[at[ok]] - launch_ns[at[ok] - 1]  # host: time between the launch calls
    else:
        reach = np.maximum.accumulate(end_ns)
        before[ok] = start_ns[at[ok]] - reach[at[ok] - 1]  # GPU: idle time before the kernel
    begin = first + int(np.argmax(before))
    stop = begin + iterations * period
    last_end = int(end_ns[begin:stop].max())
    lengths = np.diff(start_ns[begin:stop:period])  # start to next start: each iteration with its host turn
    warm = _settled(lengths)
    begin, iterations, lengths = begin + warm * period, iterations - warm, lengths[warm:]
    return Steady(
        period=period,
        iterations=iterations,
        first_launch=begin,
        start_us=float(start_ns[begin]) / 1e3,
        end_us=last_end / 1e3,
        iteration_us=float(np.median(lengths)) / 1e3,
        source="kernel sequence",
    )


def _busiest(launches: list[KernelLaunch]) -> tuple[int | None, list[KernelLaunch]]:
    """The device with the most timed launches, and its launches in time order."""
    by: dict[int | None, list[KernelLaunch]] = {}
    for k in launches:
        if k.start_ns is not None:
            by.setdefault(k.device, []).append(k)
    device = max(by, key=lambda d: len(by[d]))
    return device, sorted(by[device], key=lambda k: k.start_ns or 0)


def _from_markers(profile: Profile, ks: list[KernelLaunch]) -> Steady | None:
    """The steps of ``ProfilerStep#`` markers as the steady iterations (the ground truth where present)."""
    owners = assign(profile, lambda a: step_number(a) is not None)
    step_of = {id(k): step_number(a) for k, a in zip(profile.launches, owners, strict=True) if a is not None}
    steps: dict[int, list[int]] = {}
    for i, k in enumerate(ks):
        s = step_of.get(id(k))
        if s is not None:
            steps.setdefault(s, []).append(i)
    if len(steps) < MIN_ITERATIONS:
        return None
    ordered = [idx for _, idx in sorted(steps.items())]
    starts = [ks[idx[0]].start_ns or 0 for idx in ordered]
    last = max(ks[i].end_ns or 0 for idx in ordered for i in idx)
    lengths = np.diff(np.array(starts, np.int64))
    warm = _settled(lengths)
    ordered, starts, lengths = ordered[warm:], starts[warm:], lengths[warm:]
    firsts = [idx[0] for idx in ordered]
    return Steady(
        period=int(np.median([len(idx) for idx in ordered])),
        iterations=len(ordered),
        first_launch=firsts[0],
        start_us=starts[0] / 1e3,
        end_us=last / 1e3,
        iteration_us=float(np.median(lengths)) / 1e3,
        source="ProfilerStep markers",
    )


def find(profile: Profile) -> list[Steady]:
    """Each rank's steady iterations, on its busiest device: from step markers where the rank has them,
    else from its kernel sequence."""
    out = []
    ranks = sorted({k.rank for k in profile.launches if k.start_ns is not None}, key=lambda r: -1 if r is None else r)
    for rank in ranks:
        device, ks = _busiest([k for k in profile.launches if k.rank == rank])
        found = _from_markers(profile, ks)
        if found is None:
            names: dict[str, int] = {}
            ids = np.array([names.setdefault(k.name, len(names)) for k in ks], np.int64)
            starts = np.array([k.start_ns for k in ks], np.int64)
            ends = np.array([k.end_ns for k in ks], np.int64)
            launched = np.array([k.launch_ns or 0 for k in ks], np.int64)
            found = detect(ids, starts, ends, launched)
        if found is not None:
            out.append(msgspec.structs.replace(found, rank=rank, device=device))
    return out


def select(profile: Profile) -> tuple[Profile, list[Steady]]:
    """The launches of the steady iterations (every device of a rank, from its first steady iteration's
    start to its last one's end), and what was found; an error when nothing repeats."""
    found = find(profile)
    if not found:
        raise InputError(
            "--window steady: no repeating iteration found (the kernel sequence never repeats a period of "
            f"{MIN_PERIOD}+ launches {MIN_ITERATIONS}+ times in a row, and there are no ProfilerStep markers)"
        )
    spans = {s.rank: (round(s.start_us * 1e3) - 2, round(s.end_us * 1e3) + 2) for s in found}  # ±2 ns of µs floats
    kept = [
        k
        for k in profile.launches
        if k.rank in spans and k.start_ns is not None and spans[k.rank][0] <= k.start_ns <= spans[k.rank][1]
    ]
    return subset(profile, kept), found
