"""A sweep: enumerate, reuse what the store has, screen and time the rest (stage 1), re-time each shape's
finalists on one device (stage 2), decide — every result written to the store the moment it arrives.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.analyses.tune import alone, decide, finalists
from kernelscope.errors import InputError
from kernelscope.model.tune import Best, Candidate, Outcome, Params, Space, TuneResult, WorkerUse, key, label
from kernelscope.tune.executors import DeviceList, Executor, Item, LocalExecutor, RayExecutor, WorkerInfo, probe_devices
from kernelscope.tune.protocol import Compare, CompareReply, Reply, Run, RunReply, Setup
from kernelscope.tune.slot import Died
from kernelscope.tune.space import enumerate_candidates
from kernelscope.tune.store import Store, env_key

RETRY = ("crash",)  # retried once in a fresh process: a crash may be the previous candidate's doing
Progress = Callable[[int, int, str, dict[str, int]], None]


@dataclass
class Options:
    """How to run a sweep (``kscope tune``'s options; defaults are the CLI's)."""

    store: Path
    executor: str = "local"
    ray_address: str | None = None
    workers: int | None = None
    timeout_s: float = 60.0
    stage1_ms: float = 20.0
    warmup_ms: float = 10.0
    rounds: int = 10
    round_ms: float = 20.0
    within: float = 0.05
    top: int = 6
    retry_failed: bool = False
    seed: int = 0
    pruned: dict[str, Outcome] = field(default_factory=dict)  # by Candidate.id: the screen's verdicts


def source_hash(spec: str, kind: str, extra: Sequence[str] = ()) -> str:
    """The identity of the code being tuned: the target file's bytes (a module's file when given as
    MODULE:NAME) and its name; a change to the kernel's source starts a fresh set of results."""
    where, _, name = spec.rpartition(":")
    path = Path(where)
    if not where.endswith(".py"):
        import importlib.util

        try:
            found = importlib.util.find_spec(where)
        except (ImportError, ValueError):
            found = None
        if found is None or not found.origin:
            raise InputError(f"{spec}: cannot find module {where!r}")
        path = Path(found.origin)
    try:
        digest = hashlib.sha256(path.read_bytes())
    except OSError as exc:
        raise InputError(f"{where}: {exc.strerror or exc}") from None
    digest.update(f"\0{kind}\0{name}".encode())
    for e in extra:
        digest.update(b"\0" + e.encode())
    return digest.hexdigest()[:16]


class _Sweep:
    def __init__(
        self, setup: Setup, space: Space, shapes: Sequence[Params], opts: Options, progress: Progress | None
    ) -> None:
        self.setup, self.space, self.opts, self.progress = setup, space, opts, progress
        self.shapes = [dict(s) for s in shapes]
        self.source = source_hash(setup.spec, setup.kind, [setup.reference or "", setup.kernel_key])
        self.store = Store(opts.store)
        self.outcomes: dict[str, Outcome] = {}
        self.best: dict[str, Best] = {}
        self.lock = threading.Lock()
        self.done = 0
        self.total = 0
        self.reused = 0
        self.env = ""
        self.notes: list[str] = []
        self.left: dict[str, int] = {}  # by shape key: stage-1 candidates still to finish
        self.lead: Outcome | None = None  # the fastest ok candidate so far (the progress line's "best")
        self.failures: dict[str, int] = {}
        self.t0 = time.monotonic()
        self.usage: dict[str, WorkerUse] = {}
        self.stage1_end: float | None = None
        self.work_end: float | None = None

    def executor(self) -> Executor:
        if self.opts.executor == "ray":
            return RayExecutor(self.setup, self.opts.ray_address, self.opts.workers)
        devices = DeviceList("cpu", []) if self.setup.device == "cpu" else probe_devices()
        if self.setup.device == "cuda" and not devices.ids:
            raise InputError("--device cuda: no GPU is visible to PyTorch here (use --device cpu or auto)")
        return LocalExecutor(self.setup, devices, self.opts.workers)

    def _tally(self, o: Outcome) -> None:
        """The progress line's best so far and failures by status, kept as outcomes arrive (re-scanning every
        outcome per result would cost a sweep of N candidates N² steps)."""
        if o.status == "ok" and o.median_us is not None:
            if self.lead is None or o.median_us < (self.lead.median_us or math.inf):
                self.lead = o
        elif o.status not in ("skipped", "pruned"):
            self.failures[o.status] = self.failures.get(o.status, 0) + 1

    def _report(self) -> None:
        if self.progress is None:
            return
        lead = self.lead
        best = f"best {lead.median_us:.2f} µs ({label(lead.config)})" if lead else "no result yet"
        self.progress(self.done, self.total, best, dict(self.failures))

    def _record(self, o: Outcome) -> None:
        with self.lock:
            self.outcomes[Candidate(shape=o.shape, config=o.config).id] = o
            self.store.put(self.source, self.setup.spec, self.env, o)
            self.done += 1
            self._tally(o)
            self._report()

    def _use(self, item: Item, reply: Reply | Died, worker: WorkerInfo) -> None:
        with self.lock:
            use = self.usage.setdefault(worker.name, WorkerUse(name=worker.name, ready_s=self._since(worker.ready_at)))
            use.items += 1
            use.busy_s += item.seconds
            if isinstance(reply, RunReply):
                use.setup_s += reply.setup_s
            self.work_end = time.monotonic()
            if isinstance(item.job, Run):
                self.stage1_end = self.work_end
            else:
                use.stage2_s += item.seconds

    def _since(self, t: float) -> float:
        return round(max(0.0, t - self.t0), 3)

    def on_done(self, item: Item, reply: Reply | Died, worker: WorkerInfo) -> list[Item]:
        self._use(item, reply, worker)
        if isinstance(item.job, Compare):
            self._decided(item, reply, worker)
            return []
        assert isinstance(item.job, Run)
        job = item.job
        # a death, or an error that ended the worker: once more, in a fresh process
        assert isinstance(reply, (Died, RunReply))
        status = reply.status if isinstance(reply, Died) else reply.outcome.status
        if status in RETRY and item.attempt == 1:
            return [Item(job=job, timeout_s=item.timeout_s, attempt=2)]
        if isinstance(reply, Died):
            o = Outcome(shape=job.shape, config=job.config, status=reply.status, detail=reply.detail)  # type: ignore[arg-type]
        else:
            o = reply.outcome
        o.device, o.device_uuid = worker.hello.device, worker.hello.device_uuid
        o.attempts, o.seconds = item.attempt, round(item.seconds, 3)
        self._record(o)
        with self.lock:
            self.left[key(job.shape)] -= 1
            return self._stage2(job.shape) if self.left[key(job.shape)] == 0 else []

    def _decided(self, item: Item, reply: Reply | Died, worker: WorkerInfo) -> None:
        shape, entrants = item.tag
        if isinstance(reply, Died) or not isinstance(reply, CompareReply) or len(reply.kept) < 2:
            why = reply.detail if isinstance(reply, Died) else "fewer than two finalists could be rebuilt"
            fastest = min(entrants, key=lambda o: o.median_us or math.inf)
            b = alone(fastest, self.space.incumbent)
            with self.lock:
                self.best[key(shape)] = b
                self.notes.append(f"{label(shape)}: stage 2 did not run ({why}); best by stage 1 only")
            return
        kept = [entrants[i] for i in reply.kept]
        b = decide(
            shape,
            [o.config for o in kept],
            reply.times,
            incumbent=self.space.incumbent,
            stage1=kept,
            device=worker.hello.device,
            seed=self.opts.seed,
        )
        with self.lock:
            self.best[key(shape)] = b
            self.store.put_decision(self.source, self.env, [o.config for o in entrants], b)

    def run(self) -> TuneResult:
        self.t0 = time.monotonic()
        todo: list[Candidate] = []
        ids: list[str] = []
        for cand, broken in enumerate_candidates(self.space, self.shapes):
            ids.append(cand.id)
            if broken is not None:
                self.outcomes[cand.id] = Outcome(
                    shape=cand.shape, config=cand.config, status="skipped", detail=f"constraint: {broken}"
                )
            elif cand.id in self.opts.pruned:
                self.outcomes[cand.id] = self.opts.pruned[cand.id]
            else:
                todo.append(cand)
        ex = self.executor()
        try:
            hello = ex.start().hello  # the first worker ready; the others start work as they become ready
            self.env = env_key(hello.environment | {"device": hello.device})
            self.store.put_environment(self.env, hello.environment | {"device": hello.device})
            stored = self.store.get(self.source, self.env)
            fresh: list[Candidate] = []
            for cand in todo:
                old = stored.get((key(cand.shape), key(cand.config)))
                if old is not None and not (self.opts.retry_failed and old.status != "ok"):
                    old.shape, old.config = cand.shape, cand.config  # the user's param order
                    self.outcomes[cand.id] = old
                    self.reused += 1
                else:
                    fresh.append(cand)
            self.total = len(fresh)
            for o in self.outcomes.values():  # skipped, pruned and reused ones
                self._tally(o)
            self._report()
            for c in fresh:
                self.left[key(c.shape)] = self.left.get(key(c.shape), 0) + 1
            done = [item for shape in self.shapes if key(shape) not in self.left for item in self._stage2(shape)]
            opts = self.opts
            run = [
                Item(
                    job=Run(shape=c.shape, config=c.config, min_time_ms=opts.stage1_ms, warmup_ms=opts.warmup_ms),
                    timeout_s=opts.timeout_s,
                    affinity=key(c.config),
                )
                for c in stage1_order(fresh, ex.size)
            ]
            ex.map(done + run, self.on_done)
            workers = ex.workers()
        finally:
            ex.close()
            self.store.close()
        if len({w.hello.device for w in workers}) > 1:
            self.notes.append("workers run on different device models: stage 1 times are not comparable across them")
        for w in workers:  # one that started but never got an item
            self.usage.setdefault(w.name, WorkerUse(name=w.name, ready_s=self._since(w.ready_at)))
        order = {key(s): i for i, s in enumerate(self.shapes)}
        best = sorted(self.best.values(), key=lambda b: order.get(key(b.shape), 0))
        return TuneResult(
            best=best,
            candidates=[self.outcomes[i] for i in ids if i in self.outcomes],
            reused=self.reused,
            target=self.setup.spec,
            source_hash=self.source,
            environment=hello.environment | {"device": hello.device},
            workers=[f"{w.name}: {w.hello.device} {w.hello.device_uuid}".strip() for w in workers],
            executor=ex.kind,
            wall_s=self._since(time.monotonic()),
            usage=[self.usage[n] for n in sorted(self.usage)],
            stage1_end_s=None if self.stage1_end is None else self._since(self.stage1_end),
            work_end_s=None if self.work_end is None else self._since(self.work_end),
            notes=self.notes,
        )

    def _stage2(self, shape: Params) -> list[Item]:
        """The shape's stage-2 item once its stage 1 is complete (none: fewer than two finalists, or the
        store has the decision for these finalists). Urgent: it starts on the next free worker, while other
        shapes are still in stage 1, instead of every shape's stage 2 waiting for the slowest stage 1."""
        ok = [o for o in self.outcomes.values() if key(o.shape) == key(shape) and o.status == "ok" and o.median_us]
        entrants = finalists(ok, within=self.opts.within, top=self.opts.top, incumbent=self.space.incumbent)
        if len(entrants) == 1:
            self.best[key(shape)] = alone(entrants[0], self.space.incumbent)
        if len(entrants) < 2:
            return []
        old = self.store.get_decision(self.source, self.env, shape, [o.config for o in entrants])
        if old is not None:
            self.best[key(shape)] = old
            return []
        o = self.opts
        job = Compare(
            shape=shape, configs=[e.config for e in entrants], rounds=o.rounds, round_ms=o.round_ms, seed=o.seed
        )
        budget = o.timeout_s * len(entrants) + o.rounds * len(entrants) * (o.round_ms / 1e3 * 3 + 0.5)
        wants = frozenset(key(e.config) for e in entrants)  # on the worker that has most of them loaded
        return [Item(job=job, timeout_s=budget, tag=(shape, entrants), urgent=True, wants=wants)]


def stage1_order(cands: Sequence[Candidate], workers: int) -> list[Candidate]:
    """Shape after shape, except the last ``workers`` shapes, which are interleaved config by config.

    A shape's stage 2 (its finalists re-timed on one device) can start only when its stage 1 ends. Shape
    after shape, each stage 2 starts early and runs while the other devices go on with the next shapes, but
    the last shape's stage 2 would run alone while every other device idles. Interleaving the last
    ``workers`` shapes makes them end together, so their stage 2s run side by side on as many devices.
    """
    by_shape: dict[str, list[Candidate]] = {}
    for c in cands:
        by_shape.setdefault(key(c.shape), []).append(c)
    groups = list(by_shape.values())
    split = max(0, len(groups) - max(1, workers))
    head = [c for g in groups[:split] for c in g]
    tail = [c for rank in itertools.zip_longest(*groups[split:]) for c in rank if c is not None]
    return head + tail


def sweep(
    setup: Setup, space: Space, shapes: Sequence[Params], opts: Options, progress: Progress | None = None
) -> TuneResult:
    if not shapes:
        raise InputError("no shapes to tune: give --shape NAME=VALUE,... or shapes: in the space file")
    return _Sweep(setup, space, shapes, opts, progress).run()
