"""Benchmark and tuning activity in a trace: launches that time kernels rather than run the workload.

Triton's ``do_bench`` (under ``@triton.autotune`` and ``triton.testing``), TunableOp and most hand-written
harnesses clear the L2 cache before every timed call by writing a buffer larger than it, so on the device
the harness reads: a fill of that buffer, the timed call (one to ``MAX_CALL`` kernels), the same fill, the
same call, many times over. ``do_bench`` also runs the call without the fill (its first call and its warm-up
loop) between such runs. The rule here, over one device's launches in time order:

- a **flush** is a launch of a fill/zero/memset kernel taking at least ``MIN_FLUSH_NS`` (an L2-sized buffer:
  tens of MB at a few TB/s; a workload's own small zeroing takes a few µs);
- flush, call, flush, call... with the same flush kernel and the same call (the same kernel names) forms a
  run; runs of one call separated only by launches of that call merge into one burst, and the one launch
  of that call right before a burst (``do_bench``'s first, untimed call) joins it;
- a burst with at least ``MIN_FLUSHES`` flushes is harness. The call right after a burst is not: it is the
  workload's own (the autotuner runs the winner once its benchmarks end).

Only names and durations are used, so the rule works on any profiler's trace (Kineto, rocprofv3, nsys).

A tuner that times without flushing (a hand-written loop, as vLLM's tuning scripts and many autotuners do)
still shows its candidates: one kernel launched back to back, config after config. So (**rotating-configs**)
a stretch of consecutive launches of one kernel (no other kernel between) made of ``MIN_CONFIGS`` or more
runs of ``MIN_REPEATS`` or more identical launches, each run a configuration not seen before in the stretch
and at least ``MIN_CONFIGS`` distinct binaries (block, registers, shared memory) among them, is harness; the
stretch ends at the first run of a configuration it already timed (the winner, run by the workload). A
workload whose grid grows (a batch ramping up) changes no binary; one whose kernel alternates with others
has no such stretch.

A CUDA/HIP graph is warmed up before it is captured, on a side stream (PyTorch's ``torch.cuda.graph`` needs
it, ``make_graphed_callables`` does it): where a trace says which kernels a graph launch replayed
(Kineto: their call is ``cudaGraphLaunch``) and each kernel's stream, the eager launches on other streams
after the replay stream's last eager launch and before a graph's first replay, holding every kernel the
replay holds, are that warm-up (**graph-warmup**).

Tuning inside one library call flushes nothing and rotates no config the trace can see: PyTorch's TunableOp
times every candidate GEMM solution inside the op call that first meets a shape (``TunableOp::FindFastest``:
per candidate 1 + 2+3 + 2+10 + 2+100 calls by default), then runs the winner once. So (**op-tuning**, traces
that link kernels to their op call: Kineto's External id) one op call that launched ``MIN_TUNED`` or more
kernels, all GEMMs, at least ``TUNED_RATIO`` times as many as the median of the other calls that launched
those kernel variants (1 when none did), is tuning; its last launch is the workload's own call. The ratio
keeps a loop of GEMMs under one annotation (the same variants in every iteration) out.

Traces ``kscope profile`` records need fewer guesses: its hook (``profiling/hook/_kscope_harness.py``) runs
Triton's autotuner, ``do_bench``, ``torch.utils.benchmark``, ``make_graphed_callables`` and Inductor's
benchmarker inside ``kscope::harness::<what>`` annotations, and every kernel whose launch call falls inside
one is harness (``marked``); the rules still run on the launches outside them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from kernelscope.model.gap import HarnessBurst
from kernelscope.model.ops import OpCall

FLUSH_NAME = re.compile(r"fill|zero|memset", re.IGNORECASE)
MIN_FLUSH_NS = 5_000  # a 40 MB write at 8 TB/s; Triton's 256 MB flush takes ~80 µs on an H100
MAX_CALL = 3  # kernels one timed call may launch
MIN_FLUSHES = 5  # do_bench's own first estimate is 5 flushed calls
MIN_CONFIGS = 3  # rotating configs: distinct binaries of one kernel timed one after another
MIN_REPEATS = 3  # rotating configs: launches of each (a timing loop's warm-up and repetitions)
MIN_TUNED = 20  # kernels of one op call: TunableOp's one candidate takes ~120; a GEMM op's own call 1-2
TUNED_RATIO = 10
RULE = "flush-alternation"
TUNED = "op-tuning"
ROTATING = "rotating-configs"
WARMUP = "graph-warmup"
MARKED = "hook-annotation"  # exact: launched inside kscope's HARNESS_MARK annotation (kscope profile's hook)


@dataclass(frozen=True)
class Burst:
    """One stretch of benchmarking on one device: ``first``..``last`` index the time-ordered launches."""

    first: int
    last: int
    call: tuple[int, ...]  # name ids of the timed call's kernels (its first run's)
    flush: int  # name id of the flush kernel
    flushes: int

    @property
    def kernels(self) -> frozenset[int]:
        return frozenset(self.call)


def is_flush(name_id: np.ndarray, duration_ns: np.ndarray, flush_names: np.ndarray) -> np.ndarray:
    """Which launches are L2 flushes: a fill/zero/memset kernel (``flush_names[name_id]``) taking at least
    ``MIN_FLUSH_NS``; ``name_id`` < 0 (not a kernel) never is."""
    kern = name_id >= 0
    out = np.zeros(name_id.size, bool)
    out[kern] = flush_names[name_id[kern]] & (duration_ns[kern] >= MIN_FLUSH_NS)
    return out


def flush_bursts(name_id: np.ndarray, duration_ns: np.ndarray, flush_names: np.ndarray) -> list[Burst]:
    """The harness bursts among one device's launches, sorted by start: ``name_id`` per launch, its
    duration, and ``flush_names[name_id]``: whether that name is a fill/zero/memset kernel."""
    pos = np.flatnonzero(is_flush(name_id, duration_ns, flush_names))
    if pos.size < 2:
        return []
    # segment j: the launches strictly between flushes pos[j] and pos[j+1]
    length = np.diff(pos) - 1
    ok = (length >= 1) & (length <= MAX_CALL) & (name_id[pos[1:]] == name_id[pos[:-1]])
    # a call of fills alone (short ones, under MIN_FLUSH_NS) is a workload zeroing buffers, not timed work
    fill = np.zeros(name_id.size, bool)
    fill[name_id >= 0] = flush_names[name_id[name_id >= 0]]
    others = np.concatenate([[0], np.cumsum(~fill)])  # others[i]: launches before i that are no fill
    ok &= others[pos[1:]] - others[pos[:-1] + 1] > 0
    calls: list[tuple[int, ...] | None] = [
        tuple(int(v) for v in name_id[p + 1 : p + 1 + ln]) if good else None
        for p, ln, good in zip(pos[:-1].tolist(), length.tolist(), ok.tolist(), strict=True)
    ]
    runs: list[Burst] = []
    j = 0
    while j < len(calls):
        call = calls[j]
        if call is None:
            j += 1
            continue
        k = j
        while k + 1 < len(calls) and calls[k + 1] == call:
            k += 1
        first, last = int(pos[j]), int(pos[k + 1])
        tail = last + 1 + len(call)  # the last flush's own call
        if tail <= name_id.size and tuple(int(v) for v in name_id[last + 1 : tail]) == call:
            last = tail - 1
        runs.append(Burst(first, last, call, int(name_id[pos[j]]), k - j + 2))
        j = k + 1
    return _first_calls([b for b in _merge(runs, name_id) if b.flushes >= MIN_FLUSHES], name_id)


def _merge(runs: list[Burst], name_id: np.ndarray) -> list[Burst]:
    """Join runs of one flush and the same kernels that touch, or are separated only by those kernels'
    launches (``do_bench``'s unflushed first call and warm-up loop)."""
    merged: list[Burst] = []
    for b in runs:
        prev = merged[-1] if merged else None
        if prev is not None and prev.flush == b.flush and prev.kernels == b.kernels:
            between = name_id[prev.last + 1 : b.first]
            if bool(np.isin(between, list(b.kernels)).all()):
                shared = max(0, prev.last - b.first + 1) and 1  # the flush two runs share counts once
                flushes = prev.flushes + b.flushes - shared
                merged[-1] = Burst(prev.first, max(prev.last, b.last), prev.call, b.flush, flushes)
                continue
        merged.append(b)
    return merged


def _first_calls(bursts: list[Burst], name_id: np.ndarray) -> list[Burst]:
    """Each burst with the one call just before it (``do_bench``'s first, untimed call), unless that launch
    belongs to the burst before."""
    out = []
    floor = -1
    for b in bursts:
        first = b.first
        before = first - len(b.call)
        if before > floor and tuple(int(v) for v in name_id[before:first]) == b.call:
            first = before
        out.append(Burst(first, b.last, b.call, b.flush, b.flushes))
        floor = b.last
    return out


def find(
    start: np.ndarray, duration_ns: np.ndarray, name_id: np.ndarray, flush_names: np.ndarray
) -> list[tuple[Burst, np.ndarray]]:
    """The bursts among one device's operations in any order (``name_id`` < 0: not a kernel), each with the
    indices of its launches into the inputs. Sorts only when enough flush-like launches exist to form one."""
    if int(is_flush(name_id, duration_ns, flush_names).sum()) < MIN_FLUSHES:
        return []
    idx = np.flatnonzero(name_id >= 0)
    idx = idx[np.argsort(start[idx], kind="stable")]
    return [(b, idx[b.first : b.last + 1]) for b in flush_bursts(name_id[idx], duration_ns[idx], flush_names)]


def marked(launch_ns: np.ndarray, ranges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each launch time (host ns; ``NO_CORRELATION`` where unknown), the index of the harness annotation
    range around it after nested ranges are merged (``do_bench`` inside ``_bench``), or -1; and per merged
    range, the index in ``ranges`` of its outermost (earliest) range, which names it."""
    if not ranges.size:
        return np.full(launch_ns.shape, -1, np.int64), np.zeros(0, np.int64)
    order = np.argsort(ranges[:, 0], kind="stable")
    lo, hi = ranges[order, 0], np.maximum.accumulate(ranges[order, 1])
    new = np.ones(lo.size, bool)
    new[1:] = lo[1:] > hi[:-1]  # a range starting inside the reach so far joins it
    group = np.cumsum(new) - 1
    starts = lo[new]
    ends = np.zeros(starts.size, np.int64)
    np.maximum.at(ends, group, hi)
    pos = np.searchsorted(starts, launch_ns, side="right") - 1
    inside = (pos >= 0) & (launch_ns >= 0) & (launch_ns <= ends[np.clip(pos, 0, None)])
    return np.where(inside, pos, -1), order[new]


def op_tuning(
    op: np.ndarray, name_id: np.ndarray, variant: np.ndarray, is_gemm: Callable[[np.ndarray], np.ndarray]
) -> list[np.ndarray]:
    """The tuning inside single op calls among one device's launches in time order: per op call that tuned,
    the positions of its launches less the last. ``op``: each launch's op call id (< 0: unknown);
    ``variant``: its launch configuration id (< 0: unknown, then its name stands for it); ``is_gemm(name
    ids)``: whether those kernels are GEMMs (asked only about the kernels of big calls).

    The yardstick is per variant, not per name: TunableOp tunes each shape once, so another shape's tuning
    call is no yardstick for this one, while a loop's iterations launch the same variants every time."""
    known = np.flatnonzero((op >= 0) & (name_id >= 0))
    if known.size < MIN_TUNED:
        return []
    key = np.where(variant >= 0, variant, -1 - name_id.astype(np.int64))  # variant ids >= 0, names < 0
    known = known[np.argsort(op[known], kind="stable")]  # grouped by op call, in time order within each
    ids, first, counts = np.unique(op[known], return_index=True, return_counts=True)
    calls = []  # (op call, its launch positions, its kernels) of the big all-GEMM calls
    for o, at, n in zip(ids.tolist(), first.tolist(), counts.tolist(), strict=True):
        if n >= MIN_TUNED:
            pos = known[at : at + n]
            if is_gemm(np.unique(name_id[pos])).all():
                calls.append((o, pos, np.unique(key[pos])))
    if not calls:
        return []
    # the launches of those variants per other op call: the yardstick for "many"
    sel = known[np.isin(key[known], np.concatenate([k for _, _, k in calls]))]
    pairs, per = np.unique(np.stack([op[sel], key[sel]], axis=1), axis=0, return_counts=True)
    out = []
    for o, pos, kinds in calls:
        others = per[np.isin(pairs[:, 1], kinds) & (pairs[:, 0] != o)]
        usual = float(np.median(others)) if others.size else 1.0
        if pos.size >= TUNED_RATIO * max(1.0, usual):
            out.append(pos[:-1])
    return out


def rotating(name_id: np.ndarray, variant: np.ndarray, binary: np.ndarray) -> list[np.ndarray]:
    """The stretches of configs timed back to back among one device's launches in time order (positions):
    ``variant`` each launch's configuration id and ``binary`` the id of its (block, registers, shared
    memory), < 0 where not recorded."""
    n = name_id.size
    if n < MIN_CONFIGS * MIN_REPEATS:
        return []
    change = np.ones(n, bool)
    change[1:] = (name_id[1:] != name_id[:-1]) | (variant[1:] != variant[:-1])
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], n)
    long = (ends - starts >= MIN_REPEATS) & (variant[starts] >= 0) & (name_id[starts] >= 0)
    # runs that continue a long run of the same kernel: a stretch is a chain of them
    chained = np.zeros(starts.size, bool)
    chained[1:] = long[1:] & long[:-1] & (name_id[starts[1:]] == name_id[starts[:-1]])
    out = []
    head = np.flatnonzero(long & ~chained)
    for h in head.tolist():
        stop = h + 1
        while stop < starts.size and chained[stop]:
            stop += 1
        if stop - h >= MIN_CONFIGS:
            out += _timed_configs(list(range(h, stop)), starts, ends, variant, binary)
    return out


def _timed_configs(runs: list[int], starts: np.ndarray, ends: np.ndarray, variant: np.ndarray,
                   binary: np.ndarray) -> list[np.ndarray]:  # fmt: skip
    """Within one chain of long runs of a kernel: each prefix of new configurations with enough distinct
    binaries; a run repeating a configuration ends it and is the workload's (the next may start after it)."""
    out = []
    i = 0
    while i < len(runs):
        seen: set[int] = set()
        j = i
        while j < len(runs) and int(variant[starts[runs[j]]]) not in seen:
            seen.add(int(variant[starts[runs[j]]]))
            j += 1
        picked = runs[i:j]
        if len(picked) >= MIN_CONFIGS and len({int(binary[starts[r]]) for r in picked}) >= MIN_CONFIGS:
            out.append(np.arange(starts[picked[0]], ends[picked[-1]]))
        i = j + 1  # past the repeated configuration: the workload's run
    return out


def graph_warmup(name_id: np.ndarray, stream: np.ndarray, replay: np.ndarray, call: np.ndarray) -> list[np.ndarray]:
    """Positions (time order) of the warm-up before each graph's first replay among one device's launches in
    time order: ``stream`` each launch's stream (< 0: unknown), ``replay`` whether a graph launch replayed it,
    ``call`` its launching call's id (one graph launch replays its kernels under one)."""
    out = []
    for s in np.unique(stream[replay & (stream >= 0)]).tolist():
        on = np.flatnonzero(stream == s)
        # first replays: replayed launches on the stream whose previous launch there was eager
        first = on[1:][replay[on[1:]] & ~replay[on[:-1]]].tolist() + ([int(on[0])] if replay[on[0]] else [])
        for p in sorted(first):
            before = on[(on < p) & ~replay[on]]
            lo = int(before[-1]) + 1 if before.size else 0
            window = np.arange(lo, p)
            side = window[(stream[window] != s) & (stream[window] >= 0) & ~replay[window]]
            graph = np.flatnonzero(replay & (call == call[p]))
            if side.size and set(name_id[graph].tolist()) <= set(name_id[side].tolist()):
                out.append(side)
    return out


def flush_name_mask(names: list[str]) -> np.ndarray:
    return np.array([bool(FLUSH_NAME.search(n)) for n in names], bool)


def workload_calls(calls: Sequence[OpCall], bursts: Sequence[HarnessBurst]) -> list[OpCall]:
    """``calls`` less the ops whose every kernel ran inside a harness burst (an autotuner's L2 flush, a
    candidate config timed): the ops whose shapes and times are the workload's, for rooflines and ledgers."""
    if not bursts:
        return list(calls)
    spans = sorted((round(b.start_us * 1000), round((b.start_us + b.span_us) * 1000)) for b in bursts)
    lo = np.array([s for s, _ in spans], np.int64) - 2  # the µs floats of the bursts: ±2 ns of rounding
    hi = np.array([e for _, e in spans], np.int64) + 2

    def inside(t: int) -> bool:
        i = int(np.searchsorted(lo, t, side="right")) - 1
        return i >= 0 and t <= hi[i]

    return [c for c in calls if not (c.kernel_starts_ns and all(inside(t) for t in c.kernel_starts_ns))]
