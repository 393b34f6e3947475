"""Why a GPU idled, split as HolisticTraceAnalysis splits it, over one device's kernels.

Between two stretches of kernel work the device waits. The kernel that ends the wait says why: if its
launching API call began after the device went idle, the host had not yet asked for it (**host wait**: the
CPU, the Python above it, a sync, is the bottleneck); if it was already queued and the gap is shorter than
``kernel_wait_ns``, the gap is the cost of starting one kernel after another (**kernel wait**: many small
kernels); anything else (queued long before, the device waiting on another stream, a copy, an event) is
**other**. HTA attributes each gap the same way, per stream, with a threshold in ns; kscope works on the
device's merged intervals (its idle time is the device's) and counts idle time at the ends of the rank's
wall time, before the device's first kernel and after its last, as other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernelscope.model.columns import NO_CORRELATION

# A kernel already queued starts within a few µs of its predecessor's end on current GPUs: on the bundled
# H100 training trace 90 % of gaps before an already-launched kernel are under 5 µs (docs/gap.md).
KERNEL_WAIT_NS = 5_000
UNKNOWN = NO_CORRELATION  # a launch time no API call gave


@dataclass(frozen=True)
class IdleSplit:
    host_wait_ns: int
    kernel_wait_ns: int  # the rest of the idle time is "other"
    linked: int  # kernels whose launch time is known
    delays_ns: np.ndarray  # GPU start - host launch, per linked launch call (a graph's: to its first kernel)
    host_gaps: np.ndarray  # (n, 2) start, end ns of each host-wait gap, in time order
    calls_ns: np.ndarray  # each linked launch call's duration, where the trace has one
    shorter: int  # linked launch calls whose kernels ran for less time, together, than the call took


def split(
    start: np.ndarray,
    end: np.ndarray,
    launch: np.ndarray,
    kernel_wait_ns: int = KERNEL_WAIT_NS,
    counted: np.ndarray | None = None,
    call_ns: np.ndarray | None = None,
    replay: np.ndarray | None = None,
) -> IdleSplit:
    """The idle gaps between one device's kernels (``start``/``end`` ns; ``launch``: the host start of each
    one's API call, ``UNKNOWN`` where not linked), by cause. ``counted``: the kernels whose preceding gap and
    launch delay count (default all); the others (inside a harness burst set aside) keep the device busy
    but their gaps are not the workload's. ``call_ns``: each launching call's duration (``UNKNOWN`` where
    not linked): work shorter than its own launch call cannot keep the GPU busy however deep the queue.
    ``replay``: the kernels a graph launch replayed. One graph launch (cudaGraphLaunch) starts hundreds of
    kernels; its delay is to the first of them and its work is all of them, so it counts once: weighting
    the call by its kernels would make one slow graph launch look like thousands of slow kernel launches."""
    order = np.argsort(start, kind="stable")
    s, e, launched = start[order], end[order], launch[order]
    mine = np.ones(s.size, bool) if counted is None else counted[order]
    reach = np.maximum.accumulate(e)  # the device is busy until here, whatever ran before
    gap_start = reach[:-1]
    gap = s[1:] - gap_start
    waits = (gap > 0) & mine[1:]
    nxt = launched[1:]
    host = waits & (nxt != UNKNOWN) & (nxt > gap_start)
    kernel = waits & ~host & (nxt != UNKNOWN) & (gap < kernel_wait_ns)
    # a kernel cannot start before the host asked for it: such a link (clock skew, damage) is not trusted
    linked = (launched != UNKNOWN) & mine & (s >= launched)
    took = call_ns[order] if call_ns is not None else np.full(s.size, UNKNOWN, np.int64)
    call, work = np.flatnonzero(linked), (e - s)[linked]
    if replay is not None and replay.any():
        # a graph's kernels share their launch call's host start: grouped by it, the first (in start order)
        # stands for the call, and the call's work is the group's summed time
        graph = np.flatnonzero(replay[order][linked])
        _, first, inverse = np.unique(launched[call[graph]], return_index=True, return_inverse=True)
        alone = np.ones(call.size, bool)
        alone[graph] = False
        summed = np.bincount(inverse, weights=work[graph]).astype(np.int64)
        call, work = np.concatenate([call[alone], call[graph[first]]]), np.concatenate([work[alone], summed])
    timed = took[call] > 0
    return IdleSplit(
        host_wait_ns=int(gap[host].sum()),
        kernel_wait_ns=int(gap[kernel].sum()),
        linked=int(linked.sum()),
        delays_ns=(s - launched)[call],
        host_gaps=np.stack([gap_start[host], s[1:][host]], axis=1),
        calls_ns=took[call][timed],
        shorter=int((work[timed] < took[call][timed]).sum()),
    )


def waited_under(gaps: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """For each host interval [start, end), the ns of ``gaps`` (disjoint, sorted (n, 2) intervals: one
    device's host-wait gaps) inside it: differences of the gaps' cumulative coverage, no loop per pair."""
    if not gaps.size or not start.size:
        return np.zeros(start.shape, np.int64)
    lo, hi = gaps[:, 0], gaps[:, 1]
    before = np.concatenate([[0], np.cumsum(hi - lo)])  # coverage before gap i

    def covered(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(lo, t, side="right") - 1
        inside = np.where(i >= 0, np.minimum(t - lo[np.maximum(i, 0)], (hi - lo)[np.maximum(i, 0)]), 0)
        return np.where(i >= 0, before[np.maximum(i, 0)] + inside, 0)

    out: np.ndarray = covered(end) - covered(start)
    return out


def innermost(start: np.ndarray, end: np.ndarray, thread: np.ndarray, under: np.ndarray) -> np.ndarray:
    """Each host interval's own share of ``under`` (the wait inside it): less what its directly nested
    intervals on the same thread hold, so a wait counts once, for the innermost activity around it."""
    own = under.astype(np.int64).copy()
    order = np.lexsort((-end, start, thread))
    stack: list[int] = []
    for i in order[under[order] > 0].tolist():  # only intervals with some wait inside can matter
        while stack and (thread[stack[-1]] != thread[i] or start[i] >= end[stack[-1]]):
            stack.pop()
        if stack:
            own[stack[-1]] -= under[i]
        stack.append(i)
    return own


def launch_times(corr: np.ndarray, api_corr: np.ndarray, *api_columns: np.ndarray) -> list[np.ndarray]:
    """For each kernel, by its correlation id, the value of each of ``api_columns`` (its launching call's
    host start, its duration...) in one search; ``UNKNOWN`` where no call matches."""
    outs = [np.full(corr.shape, UNKNOWN, np.int64) for _ in api_columns]
    if not api_corr.size or not corr.size:
        return outs
    order = np.argsort(api_corr, kind="stable")
    keys = api_corr[order]
    pos = np.clip(np.searchsorted(keys, corr), 0, keys.size - 1)
    hit = (keys[pos] == corr) & (corr != UNKNOWN)
    at = order[pos[hit]]
    for out, column in zip(outs, api_columns, strict=True):
        out[hit] = column[at]
    return outs
