"""Gap analysis: rank kernels by GPU time, with honest totals.

``gap(profile)`` is the pure function; ``GapAccumulator`` is the same computation fed batch by batch,
so a multi-hundred-MB trace never has to be held as records (the CLI streams through it).

Definitions (also in ``docs/gap.md``):
- kernel time: the sum of kernel durations (concurrent kernels count once each);
- busy time: per device, the length of the union of kernel intervals (overlap counted once),
  summed over devices (a device is a (rank, device) pair);
- wall time: per rank, last end minus first start of any GPU activity (kernels and memory
  operations); the longest rank's wall when several ranks ran side by side; for a phase, the union of
  its instances' spans (first kernel start to last kernel end of each enclosing annotation);
- idle time: per device, its rank's wall minus its busy time, summed over devices;
- std: the sample standard deviation (n-1), as rocprofv3's ``--stats`` computes it; 0 for one call.
Memory operations are not kernels: they are counted only with ``include_memory``.

Benchmark and tuning bursts (``analyses/harness.py``) are set aside unless ``include_harness``: their launches
leave the rows and the busy time, and their spans leave the wall time, so the totals are the workload's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from kernelscope.analyses.harness import (
    MARKED,
    ROTATING,
    RULE,
    TUNED,
    WARMUP,
    find,
    flush_name_mask,
    graph_warmup,
    is_flush,
    marked,
    op_tuning,
    rotating,
)
from kernelscope.analyses.idle import UNKNOWN, innermost, launch_times, split, waited_under
from kernelscope.identity import Identities
from kernelscope.identity.source import SOURCE_RULE
from kernelscope.model import KernelStats, Profile
from kernelscope.model.columns import NO_CORRELATION, NO_DEVICE, NO_VARIANT, LaunchColumns, OpColumns
from kernelscope.model.gap import (
    GapOptions,
    GapResult,
    GapTotals,
    HarnessBurst,
    HostActivity,
    IdleBreakdown,
    KernelRow,
    LaunchDelay,
    Variant,
)
from kernelscope.model.source import SourceMatch

_NS_PER_US = 1000.0
HOST_ACTIVITY_TOP = 10


def busy_ns(starts: np.ndarray, ends: np.ndarray) -> int:
    """Length of the union of [start, end) intervals: sort by start, sweep the running maximum end."""
    if starts.size == 0:
        return 0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    gaps = np.maximum(s[1:] - reach[:-1], 0)
    return int(reach[-1] - s[0] - gaps.sum())


Key = tuple[int | None, int]  # (rank, device)
Calls = tuple[np.ndarray, np.ndarray]  # each launch's call: host start ns, duration ns (UNKNOWN: not linked)
Windows = dict[int | None, list[tuple[int, int]]]
Pairs = tuple[np.ndarray, np.ndarray, np.ndarray]  # launches' row ids, variant ids, durations ns


@dataclass
class _Finished:
    """The launches once the harness is set aside: per device (starts, ends, launch call starts, launch call
    durations, kept, counted, replayed by a graph launch) (the calls ``UNKNOWN`` where not linked, or all None
    when the rank links none;
    ``counted``: kept, or the first launch of a burst, whose preceding gap is the workload's; ``kept`` and
    ``counted`` None when nothing was set aside),
    the timed kernels' kept durations by row id, the bursts found and the spans cut out of each rank's wall."""

    spans: dict[Key, tuple[np.ndarray, np.ndarray, Calls | None, np.ndarray | None, np.ndarray | None, np.ndarray]]
    timed: dict[int, list[np.ndarray]]
    bursts: list[HarnessBurst]
    cuts: dict[Key, list[tuple[int, int]]]
    excluded_ns: int = 0
    excluded: int = 0
    host_activity: list[HostActivity] = field(default_factory=list)
    variants: dict[int, tuple[int, int]] = field(default_factory=dict)  # row id -> (distinct variants, top one)
    kernels: dict[Key, np.ndarray] = field(default_factory=dict)  # per device: which spans are kernels (not copies)


class _Group:
    __slots__ = ("chunks", "ranks", "vendor")

    def __init__(self, vendor: str | None) -> None:
        self.chunks: list[np.ndarray] = []  # duration arrays, one per batch
        self.ranks: set[int] = set()
        self.vendor = vendor


def _split_by(ids: np.ndarray, values: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(id, values of that id) for each distinct id, in one stable sort instead of a Python loop per item."""
    if not ids.size:
        return
    order = np.argsort(ids, kind="stable")
    sid, sval = ids[order], values[order]
    bounds = np.flatnonzero(np.diff(sid)) + 1
    for seg_id, seg in zip(np.split(sid, bounds), np.split(sval, bounds), strict=True):
        yield int(seg_id[0]), seg


@dataclass(frozen=True)
class _Launches:
    """One device's launches as the harness rules read them (any order; ``replay``: a graph launch's)."""

    start: np.ndarray
    dur: np.ndarray
    nid: np.ndarray
    vid: np.ndarray
    op: np.ndarray
    stream: np.ndarray
    corr: np.ndarray
    replay: np.ndarray


class GapAccumulator:
    """Feed batches with ``add`` (records) or ``add_columns``; ``result`` gives the gap table of them all.

    Everything is computed on columns (``LaunchColumns``): records are converted per batch, and readers
    of huge formats produce columns directly, so ingest is bounded by decoding, not by this bookkeeping.
    """

    def __init__(self, options: GapOptions | None = None, windows: Windows | None = None) -> None:
        """``windows``: per rank, the (start, end) ns spans the table covers (a phase's instances): its wall
        time is their union, and the idle gaps between them are not its own."""
        self.options = options or GapOptions()
        self.windows = windows or {}
        self._ids: dict[tuple[int | None, str, bool], int] = {}
        self._groups: list[tuple[tuple[int | None, str], _Group]] = []
        # per (rank, device): (starts, ends, correlation ids, row ids, kernel name ids, variant ids, op call
        # ids, streams); memory ops: -1 ids
        self._spans: dict[tuple[int | None, int], list[tuple[np.ndarray, ...]]] = {}
        self._name_ids: dict[str, int] = {}  # kernel name -> id, for the harness rule (names, not row labels)
        self._variant_ids: dict[Variant, int] = {}  # launch configuration -> id, for each row's variant count
        self._untimed_variants: list[Pairs] = []  # untimed launches: rows, variants, ns
        # rank -> harness annotation ranges (host ns) and what each marks
        self._marks: dict[int | None, list[tuple[np.ndarray, list[str]]]] = {}
        self._host: dict[int | None, list[OpColumns]] = {}  # rank -> host work (thread id in ``device``)
        self._finished: _Finished | None = None
        # rank -> (correlation ids, host start ns, duration ns, graph launch 0/1) of the launching API calls
        self._api: dict[int | None, list[tuple[np.ndarray, ...]]] = {}
        self._activity: dict[int | None, list[int]] = {}  # rank -> [first start, last end]
        self._memory_ns = 0
        self._memory_ops = 0
        self._untimed = 0
        self._stats_rows: list[KernelRow] = []
        self._identities = Identities()
        self._members: dict[str, str] = {}  # group label -> the first kernel name in it
        self.sources: list[str] = []

    def _label(self, name: str, memory: bool) -> str:
        by = self.options.group_by
        if by == "name" or memory:
            return name
        label = str(getattr(self._identities[name], by))
        self._members.setdefault(label, name)
        return label

    def _gid(self, rank: int | None, name: str, vendor: str | None) -> int:
        """The row id of (rank, label of name); memory rows (``vendor`` None) never merge with kernels."""
        key = (rank, self._label(name, vendor is None))
        full = (*key, vendor is None)
        g = self._ids.get(full)
        if g is None:
            g = self._ids[full] = len(self._groups)
            self._groups.append((key, _Group(vendor)))
        return g

    def _rows(self, ops: OpColumns, rank: int | None, vendor: str | None) -> np.ndarray:
        """Each op's row id; the durations of ops without a timeline go to their rows now (timed kernels'
        go at ``result``, once the harness is set aside). ``vendor`` None marks memory rows."""
        row_rank = rank if self.options.per_rank else None
        if self.options.group_by != "name" and vendor is not None:
            self._identities.add(ops.names)  # one batched classification (and c++filt run) per batch
        # one lookup per distinct name, then a gather: no Python work per operation
        per_name = np.array([self._gid(row_rank, n, vendor) for n in ops.names], np.int64)
        gids: np.ndarray = per_name[ops.name_idx]
        if rank is not None:
            for g in np.unique(gids).tolist():
                self._groups[g][1].ranks.add(rank)
        if vendor is None or ops.start_ns is None:
            for g, seg in _split_by(gids, ops.duration_ns):
                self._groups[g][1].chunks.append(seg)
            if vendor is not None:
                self._untimed_variants.append(_pairs(gids, self._vids(ops), ops.duration_ns))
        return gids

    def _vids(self, ops: OpColumns) -> np.ndarray:
        """Each op's variant id, the same for the same launch configuration in every batch (-1: unknown)."""
        if ops.variant_idx is None or not ops.variants:
            return np.full(len(ops), NO_VARIANT, np.int64)
        lut = np.array([self._variant_ids.setdefault(v, len(self._variant_ids)) for v in ops.variants], np.int64)
        known = ops.variant_idx >= 0
        return np.where(known, lut[np.where(known, ops.variant_idx, 0)], NO_VARIANT)

    def _intervals(self, ops: OpColumns, rank: int | None, busy: bool, gids: np.ndarray | None = None) -> None:
        """Each device's activity span and, when ``busy``, its intervals; ``gids`` (kernels only): their rows."""
        if ops.start_ns is None:  # serialized profilers: durations without a timeline
            self._untimed += len(ops)
            return
        s, e = ops.start_ns, ops.start_ns + ops.duration_ns
        corr = ops.correlation if ops.correlation is not None else np.full(len(ops), NO_CORRELATION, np.int64)
        op = ops.op if ops.op is not None else np.full(len(ops), NO_CORRELATION, np.int64)
        stream = ops.stream if ops.stream is not None else np.full(len(ops), NO_CORRELATION, np.int64)
        if gids is None:  # memory operations: no row, no kernel name, no variant
            gids = nids = vids = np.full(len(ops), -1, np.int32)
        else:
            nids = np.array([self._name_ids.setdefault(n, len(self._name_ids)) for n in ops.names], np.int32)
            nids = nids[ops.name_idx]
            gids = gids.astype(np.int32)  # row and name ids: a few thousand at most
            vids = self._vids(ops).astype(np.int32)
        for device, idx in _split_by(ops.device, np.arange(len(ops))):
            lo, hi = int(s[idx].min()), int(e[idx].max())
            act = self._activity.setdefault(rank, [lo, hi])
            act[0], act[1] = min(act[0], lo), max(act[1], hi)
            if busy:
                spans = (s[idx], e[idx], corr[idx], gids[idx], nids[idx], vids[idx], op[idx], stream[idx])
                self._spans.setdefault((rank, device), []).append(spans)

    def add_columns(self, cols: LaunchColumns) -> None:
        self._finished = None
        if cols.source is not None and cols.source not in self.sources:
            self.sources.append(cols.source)
        if cols.api_corr is not None and cols.api_ns is not None and cols.api_corr.size:
            zeros = np.zeros(cols.api_corr.size, np.int64)
            took = cols.api_dur_ns if cols.api_dur_ns is not None else zeros
            graph = cols.api_graph if cols.api_graph is not None else zeros
            self._api.setdefault(cols.rank, []).append((cols.api_corr, cols.api_ns, took, graph))
        if cols.harness_marks is not None and cols.harness_marks.size:
            self._marks.setdefault(cols.rank, []).append((cols.harness_marks, cols.harness_labels))
        if cols.host is not None and len(cols.host) and cols.host.start_ns is not None:
            self._host.setdefault(cols.rank, []).append(cols.host)
        if len(cols.kernels):
            gids = self._rows(cols.kernels, cols.rank, cols.vendor)
            self._intervals(cols.kernels, cols.rank, busy=True, gids=gids)
        mem = cols.memory
        if len(mem):
            self._memory_ns += int(mem.duration_ns.sum())
            self._memory_ops += len(mem)
            if self.options.include_memory:
                self._rows(mem, cols.rank, None)
            self._intervals(mem, cols.rank, busy=self.options.include_memory)

    def add(self, profile: Profile) -> None:
        self.sources.extend(s for s in profile.sources if s not in self.sources)
        for cols in LaunchColumns.from_profile(profile):
            self.add_columns(cols)
        self._stats_rows.extend(_row_from_stats(s) for s in profile.stats)

    def _chunks(self, g: int) -> list[np.ndarray]:
        return self._groups[g][1].chunks + self._finish().timed.get(g, [])

    def durations(self) -> dict[tuple[int | None, str], np.ndarray]:
        """Per-launch durations (ns) of every timed row, keyed like its ``KernelRow`` by (rank, name).

        For tests on the launches (``kscope diff``); rows from profiler-computed statistics have none.
        """
        return {key: np.concatenate(c) for i, (key, _) in enumerate(self._groups) if (c := self._chunks(i))}

    def _wall(self, rank: int | None, activity: list[int]) -> int:
        spans = self.windows.get(rank)
        return _union_ns(spans) if spans else activity[1] - activity[0]

    def harness(self) -> list[HarnessBurst]:
        """The benchmark and tuning bursts found (without computing the rows)."""
        return self._finish().bursts

    def _bursts(
        self, dev: Key, k: _Launches, calls: Calls | None, flush: np.ndarray
    ) -> list[tuple[str, str, np.ndarray]]:
        """(rule, what benchmarked, launch indices in time order) of each harness burst on a device: exactly
        where its rank's trace holds kscope's harness annotations, and by the rules among the other launches."""
        out: list[tuple[str, str, np.ndarray]] = []
        rest = np.flatnonzero(k.nid >= 0)  # memory operations are never harness
        marks = self._marks.get(dev[0])
        if marks is not None and calls is not None:
            ranges = np.concatenate([r for r, _ in marks])
            labels = [label for _, ls in marks for label in ls]
            inside, outer = marked(calls[0], ranges)
            inside[k.nid < 0] = -1
            for g, idx in _split_by(inside, np.arange(inside.size)):
                if g >= 0:
                    out.append((MARKED, labels[int(outer[g])], idx[np.argsort(k.start[idx], kind="stable")]))
            rest = rest[inside[rest] < 0]
        flushed = [rest[idx] for _, idx in find(k.start[rest], k.dur[rest], k.nid[rest], flush)]
        out += [(RULE, "benchmark (L2 flush between timed calls)", idx) for idx in flushed]
        order = rest[np.argsort(k.start[rest], kind="stable")]
        rules: list[tuple[str, str, Callable[[np.ndarray], list[np.ndarray]]]] = [
            (
                ROTATING,
                "configs timed back to back (no flush)",
                lambda o: rotating(k.nid[o], k.vid[o], self._binary(k.vid[o])),
            ),
            (
                WARMUP,
                "graph warm-up before capture",
                lambda o: graph_warmup(k.nid[o], k.stream[o], k.replay[o], k.corr[o]),
            ),
            (
                TUNED,
                "tuning inside one op call (TunableOp)",
                lambda o: op_tuning(k.op[o], k.nid[o], k.vid[o], self._is_gemm),
            ),
        ]
        hits = flushed
        for rule, what, find_in in rules:
            if hits:  # each rule reads the launches the ones before left, in time order
                order = order[~np.isin(order, np.concatenate(hits))]
            hits = [order[pos] for pos in find_in(order)]
            out += [(rule, what, h) for h in hits]
        return out

    def _binary(self, vid: np.ndarray) -> np.ndarray:
        """Each variant id's binary id (block, registers, shared memory: the grid left out); -1 stays -1."""
        ids: dict[tuple[object, ...], int] = {}
        keys = [(v.block, v.registers, v.shared_bytes) for v in self._variant_ids]
        lut = np.array([ids.setdefault(key, len(ids)) for key in keys] or [0], np.int64)
        return np.where(vid >= 0, lut[np.maximum(vid, 0)], -1)

    def _is_gemm(self, name_ids: np.ndarray) -> np.ndarray:
        names = list(self._name_ids)  # ids in order of first appearance
        self._identities.add(names[i] for i in name_ids.tolist())  # one c++filt run for them all
        return np.array([self._identities[names[i]].category == "gemm" for i in name_ids.tolist()], bool)

    def _finish(self) -> _Finished:
        """Set the harness aside, device by device (once; ``add`` starts over)."""
        if self._finished is not None:
            return self._finished
        names = list(self._name_ids)
        flush = flush_name_mask(names)
        done = _Finished(spans={}, timed={}, bursts=[], cuts={})
        pairs: list[Pairs] = list(self._untimed_variants)
        api = {r: tuple(np.concatenate(c) for c in zip(*parts, strict=True)) for r, parts in self._api.items()}
        for dev, parts in self._spans.items():
            cols = tuple(np.concatenate(c) for c in zip(*parts, strict=True))
            self._spans[dev] = [cols]  # joined once: the batches' arrays are freed
            start, end, corr, gid, nid, vid, op, stream = cols
            dur = end - start
            # each launch's call (its host start and duration), looked up once for the marks and the idle split
            launch: Calls | None = None
            replay = np.zeros(start.size, bool)  # launched by a graph launch
            if dev[0] in api:
                launched, took, graph = launch_times(corr, *api[dev[0]])
                launch, replay = (launched, took), graph == 1
            keep: np.ndarray | None = None  # None: every launch is the workload's
            counted: np.ndarray | None = None
            launches = _Launches(start, dur, nid, vid, op, stream, corr, replay)
            for rule, what, idx in self._bursts(dev, launches, launch, flush):
                lo, hi, ns = int(start[idx[0]]), int(end[idx].max()), int(dur[idx].sum())
                flushing = is_flush(nid[idx], dur[idx], flush)
                timed_calls = Counter(nid[idx][~flushing].tolist())
                flushes = Counter(nid[idx][flushing].tolist())
                done.bursts.append(
                    HarnessBurst(
                        rule=rule,
                        harness=what,
                        kernels=[names[i] for i, _ in timed_calls.most_common()],
                        flush=names[flushes.most_common(1)[0][0]] if flushes else "",
                        launches=int(idx.size),
                        flushes=int(flushing.sum()),
                        time_us=ns / _NS_PER_US,
                        span_us=(hi - lo) / _NS_PER_US,
                        start_us=lo / _NS_PER_US,
                        rank=dev[0],
                        device=None if dev[1] == NO_DEVICE else dev[1],
                    )
                )
                if self.options.include_harness:
                    continue
                if keep is None or counted is None:
                    keep, counted = np.ones(start.size, bool), np.ones(start.size, bool)
                keep[idx] = False
                counted[idx[1:]] = False  # the gap before a burst is the workload's, those inside are not
                done.cuts.setdefault(dev, []).append((lo, hi))
                done.excluded_ns += ns
                done.excluded += int(idx.size)
            if dev[0] in self.windows:  # the gap before each window's first launch lies between windows
                opening = np.isin(start, [lo for lo, _ in self.windows[dev[0]]])
                counted = ~opening if counted is None else counted & ~opening
            done.spans[dev] = (start, end, launch, keep, counted, replay)
            done.kernels[dev] = nid >= 0
            timed = gid >= 0 if keep is None else keep & (gid >= 0)
            for g, seg in _split_by(gid[timed], dur[timed]):
                done.timed.setdefault(g, []).append(seg)
            pairs.append(_pairs(gid[timed], vid[timed], dur[timed]))
        done.variants = _variant_counts(pairs)
        self._finished = done
        return done

    def _identify(self, rows: list[KernelRow]) -> None:
        """Fill each row's kind, category, function and dtype (memory rows are already labeled)."""
        by = self.options.group_by
        kernel_rows = [r for r in rows if r.kind != "memory"]
        if by in ("category", "kind"):
            for r in kernel_rows:
                setattr(r, by, r.name)
            return
        self._identities.add(r.name for r in kernel_rows)
        for r in kernel_rows:
            ident = self._identities[self._members.get(r.name, r.name)]
            r.kind, r.category, r.function = ident.kind, ident.category, ident.function
            r.dtype = ident.dtype if by == "name" else None

    def _host_activity(self, gaps: dict[int | None, list[np.ndarray]]) -> list[HostActivity]:
        """The host work the GPU waited under (each rank's host intervals against its devices' host-wait
        gaps), the top ``HOST_ACTIVITY_TOP`` names by wait."""
        per_name: dict[str, list[int]] = {}
        for rank, parts in self._host.items():
            if rank not in gaps:
                continue
            names: dict[str, int] = {}
            ids = np.concatenate([np.array([names.setdefault(n, len(names)) for n in c.names], np.int64)[c.name_idx]
                                  for c in parts])  # fmt: skip
            start = np.concatenate([c.start_ns for c in parts if c.start_ns is not None])
            end = start + np.concatenate([c.duration_ns for c in parts])
            thread = np.concatenate([c.device for c in parts])
            under = sum((waited_under(g, start, end) for g in gaps[rank]), np.zeros(start.size, np.int64))
            own = innermost(start, end, thread, under)
            hit = own > 0
            label = list(names)
            for g, seg in _split_by(ids[hit], own[hit]):
                acc = per_name.setdefault(label[g], [0, 0])
                acc[0] += int(seg.sum())
                acc[1] += int(seg.size)
        ranked = sorted(per_name.items(), key=lambda kv: -kv[1][0])[:HOST_ACTIVITY_TOP]
        return [HostActivity(name=n, idle_us=ns / _NS_PER_US, intervals=k) for n, (ns, k) in ranked]

    def _idle_split(self, done: _Finished, idle_us: float) -> tuple[IdleBreakdown, LaunchDelay] | None:
        """The idle time by cause, where the trace links kernels to their launch calls (else None). The gaps
        inside a harness burst set aside are not counted; the gap before one is the workload's (the host was
        busy tuning)."""
        host = kernel = shorter = linked_kernels = 0
        delays: list[np.ndarray] = []
        calls: list[np.ndarray] = []
        gaps: dict[int | None, list[np.ndarray]] = {}
        for dev, (start, end, launch, _, counted, replay) in done.spans.items():
            if launch is None:
                continue
            cut = split(start, end, launch[0], counted=counted, call_ns=launch[1], replay=replay)
            host, kernel, shorter = host + cut.host_wait_ns, kernel + cut.kernel_wait_ns, shorter + cut.shorter
            linked_kernels += cut.linked
            delays.append(cut.delays_ns)
            calls.append(cut.calls_ns)
            gaps.setdefault(dev[0], []).append(cut.host_gaps)
        done.host_activity = self._host_activity(gaps)
        linked = np.concatenate(delays) if delays else np.zeros(0, np.int64)
        if not linked.size:
            return None
        host_us, kernel_us = host / _NS_PER_US, kernel / _NS_PER_US
        breakdown = IdleBreakdown(
            host_wait_us=host_us, kernel_wait_us=kernel_us, other_us=max(idle_us - host_us - kernel_us, 0.0)
        )
        p50, p95 = np.percentile(linked, [50, 95]) / _NS_PER_US
        took = np.concatenate(calls) if calls else np.zeros(0, np.int64)
        return breakdown, LaunchDelay(
            median_us=float(p50),
            p95_us=float(p95),
            linked=linked_kernels,
            call_median_us=float(np.median(took)) / _NS_PER_US if took.size else None,
            shorter_than_call=shorter,
        )

    def result(self) -> GapResult:
        done = self._finish()
        timed_rows = [(i, key, g, c) for i, (key, g) in enumerate(self._groups) if (c := self._chunks(i))]
        variants = list(self._variant_ids)
        rows = [_row(name, rank, g, c) for _, (rank, name), g, c in timed_rows]
        for (i, *_), row in zip(timed_rows, rows, strict=True):
            if i in done.variants:
                row.variants, top = done.variants[i]
                row.top_variant = variants[top]
        rows += self._stats_rows
        self._identify(rows)
        kernel_ns = sum(r.total_us for r in rows) * _NS_PER_US
        for r in rows:
            r.pct = 100.0 * r.total_us * _NS_PER_US / kernel_ns if kernel_ns else 0.0
        rows.sort(key=lambda r: (-r.total_us, r.name))
        launches = sum(r.calls for r in rows)
        warnings = []
        timed = bool(self._spans) or bool(self._activity)
        if self._untimed:
            warnings.append(
                f"{self._untimed} launches have durations but no timestamps (serialized profiler): "
                "busy time is their sum, wall and idle time are unknown"
            )
        busy: float | None = None
        wall: float | None = None
        idle: float | None = None
        idle_split: tuple[IdleBreakdown, LaunchDelay] | None = None
        if timed:
            busy_dev = {
                d: busy_ns(start, end) if keep is None else busy_ns(start[keep], end[keep])
                for d, (start, end, _, keep, _, _) in done.spans.items()
            }
            walls = {r: self._wall(r, a) - _covered(done, r) for r, a in self._activity.items()}
            busy = sum(busy_dev.values()) / _NS_PER_US
            wall = max(walls.values()) / _NS_PER_US
            idle = sum(walls.get(rank, 0) - b for (rank, _), b in busy_dev.items()) / _NS_PER_US
            idle_split = self._idle_split(done, idle)
        elif self._untimed or self._stats_rows:
            busy = kernel_ns / _NS_PER_US if self._untimed else None
        if self._stats_rows:
            medians = "" if all(r.median_us is not None for r in self._stats_rows) else " (and no median)"
            warnings.append(f"rows from profiler-computed statistics have no timeline{medians}")
        if not rows and not done.excluded:
            warnings.append("no GPU kernel in the input: a profile of host activity only, or one that missed the GPU")
        early, early_ns = _before_capture(done)
        if early:
            warnings.append(
                f"{early} kernels ({early_ns / _NS_PER_US:,.1f} us, {100 * early_ns / max(kernel_ns, 1):.1f} % of "
                "kernel time) "
                "ran before the first kernel linked to a launch call and have no call of their own: launched "
                "before the capture began (an earlier step's work still running); --window N (the last N "
                "ProfilerSteps) or --window steady leaves them out"
            )
        return GapResult(
            totals=GapTotals(
                kernel_time_us=kernel_ns / _NS_PER_US,
                busy_time_us=busy,
                wall_time_us=wall,
                idle_time_us=idle,
                launches=launches,
                kernels=len(rows),
                memory_time_us=self._memory_ns / _NS_PER_US,
                memory_ops=self._memory_ops,
                devices=len(self._spans),
                ranks=len({r for r in self._activity if r is not None}) or (1 if self._activity else 0),
                idle_breakdown=idle_split[0] if idle_split else None,
                launch_delay_us=idle_split[1] if idle_split else None,
                excluded_harness_us=done.excluded_ns / _NS_PER_US,
                excluded_harness_launches=done.excluded,
            ),
            kernels=rows,
            options=self.options,
            sources=list(self.sources),
            warnings=warnings,
            harness=done.bursts,
            host_activity=done.host_activity,
        )


def _before_capture(done: _Finished) -> tuple[int, int]:
    """Kernels (how many, ns) with no launch call, on a device where later kernels have one, that started
    before the first of those: launched before the host capture began. Copies are never linked: not counted."""
    n = ns = 0
    for dev, (start, end, launch, keep, _, _) in done.spans.items():
        linked = launch[0] != UNKNOWN if launch is not None else np.zeros(0, bool)
        if not linked.any():
            continue
        early = ~linked & done.kernels[dev] & (start < start[linked].min())
        if keep is not None:
            early &= keep
        n, ns = n + int(early.sum()), ns + int((end - start)[early].sum())
    return n, ns


def _covered(done: _Finished, rank: int | None) -> int:
    """ns of the rank's wall time inside harness bursts set aside (the union over its devices)."""
    return _union_ns([c for (r, _), cs in done.cuts.items() if r == rank for c in cs])


def _union_ns(spans: list[tuple[int, int]]) -> int:
    """Length of the union of (start, end) ns spans."""
    if not spans:
        return 0
    lo, hi = (np.array(v, np.int64) for v in zip(*spans, strict=True))
    return busy_ns(lo, hi)


def _pairs(gids: np.ndarray, vids: np.ndarray, ns: np.ndarray) -> Pairs:
    """Row id, variant id and duration of each launch whose variant is known."""
    known = vids >= 0
    return gids[known], vids[known], ns[known]


_DENSE_MAX = 1 << 24  # rows x variants up to this: one bincount over a dense table, else a sort


def _variant_counts(pairs: list[Pairs]) -> dict[int, tuple[int, int]]:
    """Row id -> (how many distinct variants its launches ran, the variant with the most kernel time); rows
    with none recorded are absent."""
    if not pairs:
        return {}
    gid, vid, ns = (np.concatenate(c).astype(np.int64) for c in zip(*pairs, strict=True))
    if not gid.size:
        return {}
    width = int(vid.max()) + 1
    index, weight = gid * width + vid, ns.astype(np.float64)
    if (int(gid.max()) + 1) * width <= _DENSE_MAX:
        cell = np.flatnonzero(np.bincount(index))
        time = np.bincount(index, weights=weight)[cell]
    else:
        cell, inverse = np.unique(index, return_inverse=True)
        time = np.bincount(inverse, weights=weight)
    out: dict[int, tuple[int, int]] = {}
    for row, seg in _split_by(cell // width, np.arange(cell.size)):
        out[row] = (int(seg.size), int(cell[seg[np.argmax(time[seg])]] % width))  # ties: the lower variant id
    return out


def _row(name: str, rank: int | None, g: _Group, chunks: list[np.ndarray]) -> KernelRow:
    d = np.concatenate(chunks)
    n = int(d.size)
    return KernelRow(
        name=name,
        calls=n,
        total_us=float(d.sum()) / _NS_PER_US,
        avg_us=float(d.mean()) / _NS_PER_US,
        median_us=float(np.median(d)) / _NS_PER_US,
        min_us=float(d.min()) / _NS_PER_US,
        max_us=float(d.max()) / _NS_PER_US,
        std_us=float(d.std(ddof=1)) / _NS_PER_US if n > 1 else 0.0,
        pct=0.0,
        kind="memory" if g.vendor is None else None,
        category="copy" if g.vendor is None else None,
        rank=rank,
        ranks=sorted(g.ranks),
        vendor=g.vendor,
    )


def _us(v: float | None) -> float | None:
    return None if v is None else v / _NS_PER_US


def _row_from_stats(s: KernelStats) -> KernelRow:
    return KernelRow(
        name=s.name,
        calls=s.calls,
        total_us=s.total_ns / _NS_PER_US,
        avg_us=s.avg_ns / _NS_PER_US if s.avg_ns is not None else s.total_ns / max(s.calls, 1) / _NS_PER_US,
        median_us=_us(s.median_ns),
        min_us=_us(s.min_ns),
        max_us=_us(s.max_ns),
        std_us=_us(s.std_ns),
        pct=0.0,
    )


def attach_sources(result: GapResult, matches: dict[str, SourceMatch]) -> None:
    """Fill the source columns of every row (phases included) from ``kscope find`` answers by name; a kind or
    category the kernel's source decided (identity/source.py) replaces the one its name gave."""
    for part in [result, *result.phases]:
        for r in part.kernels:
            m = matches.get(r.name)
            if m is None or r.kind == "memory":
                continue
            r.source_status = m.status
            if m.location is not None:
                loc = m.location
                r.source, r.source_url = f"{loc.repo}:{loc.path}:{loc.line}", loc.url
            r.test_command = next((t.command for t in m.tests if t.command), None)
            if m.kind_rule.startswith(SOURCE_RULE):
                r.kind = m.kind
            if m.category_rule.startswith(SOURCE_RULE):
                r.category = m.category


def gap(
    profile: Profile | Iterable[Profile], options: GapOptions | None = None, windows: Windows | None = None
) -> GapResult:
    """The gap table of one profile, or of batches of one (``readers.stream``); ``windows``: see
    ``GapAccumulator``."""
    acc = GapAccumulator(options, windows)
    for batch in [profile] if isinstance(profile, Profile) else profile:
        acc.add(batch)
    return acc.result()
