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
    delays_ns: np.ndarray  # GPU start - host launch, per linked kernel


def split(
    start: np.ndarray,
    end: np.ndarray,
    launch: np.ndarray,
    kernel_wait_ns: int = KERNEL_WAIT_NS,
    counted: np.ndarray | None = None,
) -> IdleSplit:
    """The idle gaps between one device's kernels (``start``/``end`` ns; ``launch``: the host start of each
    one's API call, ``UNKNOWN`` where not linked), by cause. ``counted``: the kernels whose preceding gap and
    launch delay count (default all); the others (inside a harness burst set aside) keep the device busy
    but their gaps are not the workload's."""
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
    linked = (launched != UNKNOWN) & mine
    return IdleSplit(
        host_wait_ns=int(gap[host].sum()),
        kernel_wait_ns=int(gap[kernel].sum()),
        linked=int(linked.sum()),
        delays_ns=(s - launched)[linked],
    )


def launch_times(corr: np.ndarray, api_corr: np.ndarray, api_ns: np.ndarray) -> np.ndarray:
    """Each kernel's launch time from its correlation id (``UNKNOWN`` where none matches)."""
    out = np.full(corr.shape, UNKNOWN, np.int64)
    if not api_corr.size or not corr.size:
        return out
    order = np.argsort(api_corr, kind="stable")
    keys, vals = api_corr[order], api_ns[order]
    pos = np.clip(np.searchsorted(keys, corr), 0, keys.size - 1)
    hit = (keys[pos] == corr) & (corr != UNKNOWN)
    out[hit] = vals[pos[hit]]
    return out
