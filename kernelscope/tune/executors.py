"""Where candidates run: ``local`` (one worker process per visible GPU of this host, nothing to start) or
``ray`` (the same worker hosted by a Ray actor with ``num_gpus=1``, on every node of a cluster).

Both hand work out dynamically — a worker that finishes takes the next item — so uneven candidate costs
balance instead of one device receiving the slowest third of a static split. Only one candidate runs on a
device at a time. ``on_done`` sees every reply (or death) and may return items to run next (a crashed
candidate's retry, a shape's stage 2); an item whose worker's host disappears is re-queued, not failed.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import shutil
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kernelscope.errors import InputError, KernelscopeError, MissingToolError, ToolFailedError
from kernelscope.process import run_tool
from kernelscope.tune.protocol import Hello, Job, Reply, Setup, encode, hello_decoder, reply_decoder
from kernelscope.tune.slot import Died, Slot, pinned_env


@dataclass
class Item:
    """One unit of work: a job, its deadline, and the caller's bookkeeping (``tag``)."""

    job: Job
    timeout_s: float
    tag: Any = None
    attempt: int = 1
    lost: int = 0  # times its worker's host vanished under it
    seconds: float = 0.0  # wall time of its last run, set by the executor
    urgent: bool = False  # queued before the waiting items (a shape's stage 2: the longest jobs go first)
    affinity: str = ""  # what a worker that ran it has ready (a compiled config): see Backlog
    wants: frozenset[str] = frozenset()  # the affinities it needs (a stage 2's finalists): see Backlog


@dataclass
class WorkerInfo:
    name: str
    hello: Hello
    restarts: int = 0
    ready_at: float = 0.0  # time.monotonic() when its hello arrived


OnDone = Callable[[Item, "Reply | Died", WorkerInfo], Sequence[Item]]


class Executor(Protocol):
    """``start`` returns the first worker ready (its environment keys the store) while the others go on
    starting; in ``map`` each worker takes work the moment it is ready, so no device waits for the slowest
    start. ``size`` is how many workers there will be; ``workers`` those that started."""

    kind: str
    size: int

    def start(self) -> WorkerInfo: ...

    def map(self, items: Sequence[Item], on_done: OnDone) -> None: ...

    def workers(self) -> list[WorkerInfo]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class DeviceList:
    vendor: str  # nvidia, amd or cpu
    ids: list[str]  # what the pinning variable takes, one per device
    names: list[str] = field(default_factory=list)


_PROBE = """
import json, os
try:
    import torch
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
except ImportError:
    torch, n = None, 0
hip = bool(n and torch.version.hip)
out = []
for i in range(n):
    p = torch.cuda.get_device_properties(i)
    out.append([str(getattr(p, "uuid", "")), p.name])
print(json.dumps({"hip": hip, "devices": out}))
"""


def _nvidia_smi() -> DeviceList | None:
    """The visible NVIDIA GPUs from ``nvidia-smi`` (tens of ms; importing torch to ask takes seconds), or None
    when it is missing or ``CUDA_VISIBLE_DEVICES`` names devices it cannot resolve here (MIG slices)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        done = run_tool([exe, "--query-gpu=index,uuid,name", "--format=csv,noheader"], timeout_s=30)
    except ToolFailedError:
        return None
    rows = [[f.strip() for f in line.split(",", 2)] for line in done.stdout.splitlines() if line.count(",") >= 2]
    if done.returncode != 0 or not rows:
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        chosen = []
        for entry in filter(None, (e.strip() for e in visible.split(","))):
            match = [r for r in rows if r[0] == entry or (entry.startswith("GPU-") and r[1].startswith(entry))]
            if len(match) != 1:
                return None
            chosen.append(match[0])
        rows = chosen
    return DeviceList("nvidia", [r[1] for r in rows], [r[2] for r in rows])


def probe_devices() -> DeviceList:
    """The GPUs this process may use: from nvidia-smi, else probed by torch in a child process (the parent
    never creates a GPU context)."""
    found_smi = _nvidia_smi()
    if found_smi is not None:
        return found_smi
    try:
        done = run_tool([sys.executable, "-c", _PROBE], timeout_s=300)  # importing torch: seconds, on a cold disk more
        found = json.loads(done.stdout.strip().splitlines()[-1])
    except (ToolFailedError, ValueError, IndexError):
        return DeviceList("cpu", [])
    devices = found["devices"]
    if not devices:
        return DeviceList("cpu", [])
    if found["hip"]:
        visible = os.environ.get("HIP_VISIBLE_DEVICES") or os.environ.get("CUDA_VISIBLE_DEVICES")
        entries = visible.split(",") if visible else [str(i) for i in range(len(devices))]
        return DeviceList("amd", entries[: len(devices)], [d[1] for d in devices])
    ids = [f"GPU-{u}" if u and not u.startswith("GPU-") else (u or str(i)) for i, (u, _) in enumerate(devices)]
    return DeviceList("nvidia", ids, [d[1] for d in devices])


LOOK_AHEAD = 4  # per worker: how far past the head of the backlog a free worker looks for its own affinity


class Backlog:
    """The items waiting for a worker, in order, urgent ones first. A free worker takes the first of the next
    few items whose ``affinity`` (a compiled and loaded config) it has itself, or that no worker has: on the
    next shape each worker then re-runs mostly its own configs, instead of every worker compiling and loading
    every config. An item that ``wants`` several (a stage 2 rebuilds its finalists) waits for the worker that
    has the most of them loaded: stage-1 items are short, so that worker comes free soon while the others go
    on. The look-ahead is short, so the order (shapes finishing one after another, stage 2 first) holds; with
    nothing else to do, a worker takes the head whatever it has loaded. Not thread-safe: the local executor
    guards it with a lock, Ray's loop is one thread."""

    def __init__(self, items: Sequence[Item], workers: int) -> None:
        self.items: deque[Item] = deque()
        self.window = LOOK_AHEAD * max(1, workers)
        self.served: dict[str, set[str]] = {}
        self.add(items)

    def __len__(self) -> int:
        return len(self.items)

    def add(self, items: Sequence[Item]) -> None:
        for item in items:
            if item.urgent:
                self.items.appendleft(item)
            else:
                self.items.append(item)

    def requeue(self, item: Item) -> None:
        self.items.appendleft(item)

    def forget(self, worker: str) -> None:
        """The worker's process was replaced: nothing it had loaded is loaded any more."""
        self.served.pop(worker, None)

    def _mine(self, item: Item, served: set[str], others: list[set[str]]) -> bool:
        if item.wants:
            have = len(item.wants & served)
            return all(have >= len(item.wants & s) for s in others)
        return item.affinity in served or not any(item.affinity in s for s in others)

    def take(self, worker: str) -> Item:
        served = self.served.setdefault(worker, set())
        others = [s for w, s in self.served.items() if w != worker]
        pick = spare = None
        for i in range(min(self.window, len(self.items))):
            item = self.items[i]
            if self._mine(item, served, others):
                pick = i
                break
            if spare is None and not item.wants:
                spare = i  # nobody's own stage-1 item beats another worker's stage 2
        index = pick if pick is not None else (spare if spare is not None else 0)
        item = self.items[index]
        del self.items[index]
        served.update(item.wants)
        if item.affinity:
            served.add(item.affinity)
        return item


class _Queue:
    """The shared backlog of the local executor's worker threads; ``on_done`` may add more."""

    def __init__(self, items: Sequence[Item], workers: int) -> None:
        self.backlog = Backlog(items, workers)
        self.inflight = 0
        self.cond = threading.Condition()
        self.error: BaseException | None = None

    def take(self, worker: str) -> Item | None:
        with self.cond:
            while not self.backlog and self.inflight and self.error is None:
                self.cond.wait()
            if not self.backlog or self.error is not None:
                self.cond.notify_all()
                return None
            self.inflight += 1
            return self.backlog.take(worker)

    def finish(self, worker: str, more: Sequence[Item], restarted: bool) -> None:
        with self.cond:
            if restarted:
                self.backlog.forget(worker)
            self.backlog.add(more)
            self.inflight -= 1
            self.cond.notify_all()

    def fail(self, exc: BaseException, taken: bool = True) -> None:
        with self.cond:
            if self.error is None:
                self.error = exc
            self.inflight -= taken
            self.cond.notify_all()


class LocalExecutor:
    """One worker process per device (``devices``), or ``workers`` CPU workers when there is no GPU."""

    kind = "local"

    def __init__(self, setup: Setup, devices: DeviceList, workers: int | None = None) -> None:
        base = dict(os.environ)
        if setup.device == "cpu" or devices.vendor == "cpu":
            n = workers or 1
            self.slots = [Slot(f"cpu{i}", setup, base) for i in range(n)]
        else:
            ids = devices.ids[: workers or len(devices.ids)]
            self.slots = [
                Slot(f"gpu{i}", _expecting(setup, d), pinned_env(base, d, devices.vendor)) for i, d in enumerate(ids)
            ]
        self.size = len(self.slots)
        self.info: dict[str, WorkerInfo] = {}
        self.starting: dict[str, cf.Future[WorkerInfo]] = {}

    def _start(self, slot: Slot) -> WorkerInfo:
        hello = slot.start()
        info = self.info[slot.name] = WorkerInfo(slot.name, hello, ready_at=time.monotonic())
        return info

    def start(self) -> WorkerInfo:
        """Start every worker at once (imports and GPU contexts in parallel); the first ready one is returned,
        the first failure raised."""
        pool = cf.ThreadPoolExecutor(len(self.slots), thread_name_prefix="kscope-start")
        self.starting = {s.name: pool.submit(self._start, s) for s in self.slots}
        pool.shutdown(wait=False)
        for fut in cf.as_completed(self.starting.values()):
            if (exc := fut.exception()) is not None:
                self.close()
                raise exc
            return fut.result()
        raise AssertionError("no worker slots")  # LocalExecutor always has at least one slot

    def workers(self) -> list[WorkerInfo]:
        return [self.info[s.name] for s in self.slots if s.name in self.info]

    def map(self, items: Sequence[Item], on_done: OnDone) -> None:
        queue = _Queue(items, len(self.slots))

        def loop(slot: Slot) -> None:
            try:
                self.starting[slot.name].result()  # this worker's own start; the others may still be starting
            except BaseException as exc:  # a worker that cannot start: the sweep cannot promise its devices
                queue.fail(exc, taken=False)
                return
            while (item := queue.take(slot.name)) is not None:
                t0 = time.monotonic()
                restarts = slot.restarts
                try:
                    reply: Reply | Died = slot.run(item.job, item.timeout_s)
                except Died as died:
                    reply = died
                except BaseException as exc:  # a worker that cannot restart: the sweep cannot go on
                    queue.fail(exc)
                    return
                item.seconds = time.monotonic() - t0
                info = self.info[slot.name]
                info.restarts = slot.restarts
                if slot.hello is not None:
                    info.hello = slot.hello
                try:
                    more = on_done(item, reply, info)
                except BaseException as exc:
                    queue.fail(exc)
                    return
                queue.finish(slot.name, more, slot.restarts != restarts)

        threads = [threading.Thread(target=loop, args=(s,), daemon=True, name=s.name) for s in self.slots]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(timeout=0.2)  # a short join keeps Ctrl-C deliverable to this thread
        except KeyboardInterrupt:
            queue.fail(KeyboardInterrupt())
            self.close()
            raise
        if queue.error is not None:
            raise queue.error

    def close(self) -> None:
        for s in self.slots:
            s.kill()
        for s in self.slots:
            s.close()


def _expecting(setup: Setup, device: str) -> Setup:
    import msgspec

    return msgspec.structs.replace(setup, expect_uuid=device if device.startswith("GPU-") else "")


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingToolError("ray", "pip install 'kernelscope[ray]' for --executor ray") from None
    return ray


class _RayWorker:
    """A Ray actor hosting one ``Slot``: Ray pins the actor to its GPU (``CUDA_VISIBLE_DEVICES``) and the
    slot's worker process inherits that, so a candidate that crashes kills the worker, not the actor."""

    def __init__(self, setup: bytes, name: str) -> None:
        from kernelscope.tune.protocol import setup_decoder

        self.slot = Slot(name, setup_decoder.decode(setup), dict(os.environ))

    def hello(self) -> tuple[bytes, str]:
        import socket

        return encode(self.slot.start()), socket.gethostname()

    def run(self, job: bytes, timeout_s: float) -> tuple[str, bytes | str, str, int]:
        from kernelscope.tune.protocol import job_decoder

        try:
            reply = self.slot.run(job_decoder.decode(job), timeout_s)
        except Died as died:
            return (
                died.status,
                died.detail,
                encode(self.slot.hello).decode() if self.slot.hello else "",
                self.slot.restarts,
            )
        return "reply", encode(reply), encode(self.slot.hello).decode() if self.slot.hello else "", self.slot.restarts


MAX_LOST = 2  # an item whose host vanished this often is a crash (it may be what kills hosts)


class RayExecutor:
    """Workers as Ray actors: one per GPU of the cluster (``num_gpus=1``), or ``workers`` CPU actors."""

    kind = "ray"

    def __init__(self, setup: Setup, address: str | None, workers: int | None = None) -> None:
        self.ray = _ray()
        self.setup = setup
        if not self.ray.is_initialized():
            try:
                self.ray.init(address=address, log_to_driver=False, include_dashboard=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ToolFailedError(f"ray: cannot connect to {address or 'a local cluster'} ({exc})") from None
        gpus = int(self.ray.cluster_resources().get("GPU", 0))
        self.per = {"num_gpus": 1} if setup.device != "cpu" and gpus else {"num_cpus": 1}
        n = workers or (gpus if "num_gpus" in self.per else 1)
        if n < 1:
            raise InputError("ray: the cluster has no GPU; pass --device cpu --workers N")
        actor = self.ray.remote(max_restarts=0)(_RayWorker)
        self.actors = {f"ray{i}": actor.options(**self.per).remote(encode(setup), f"ray{i}") for i in range(n)}
        self.size = n
        self.info: dict[str, WorkerInfo] = {}
        self.hellos: dict[Any, str] = {}  # workers still starting: their hello's ref -> name

    def start(self) -> WorkerInfo:
        self.hellos = {self.actors[n].hello.remote(): n for n in self.actors}
        (ref,), _ = self.ray.wait(list(self.hellos), num_returns=1)
        return self._ready(ref)

    def _ready(self, ref: Any) -> WorkerInfo:
        """The worker whose hello ``ref`` is, now started (its start's failure raised as one error)."""
        name = self.hellos.pop(ref)
        try:
            hello, host = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:
            cause = exc.cause if isinstance(getattr(exc, "cause", None), KernelscopeError) else None
            raise cause or ToolFailedError(f"ray: a worker did not start ({type(exc).__name__})") from None
        info = self.info[name] = WorkerInfo(f"{name}@{host}", hello_decoder.decode(hello), ready_at=time.monotonic())
        return info

    def workers(self) -> list[WorkerInfo]:
        return list(self.info.values())

    def map(self, items: Sequence[Item], on_done: OnDone) -> None:
        ray = self.ray
        queue = Backlog(items, len(self.actors))
        pending: dict[Any, tuple[str, Item]] = {}
        idle = [n for n in self.actors if n in self.info]

        def give() -> None:
            while idle and queue:
                name = idle.pop(0)
                item = queue.take(name)
                ref = self.actors[name].run.remote(encode(item.job), item.timeout_s)
                pending[ref] = (name, item)
                item.seconds = time.monotonic()

        give()
        while pending or (self.hellos and queue):
            (ref,), _ = ray.wait([*pending, *self.hellos], num_returns=1)
            if ref in self.hellos:  # another worker is ready: it starts work now
                name = self.hellos[ref]
                try:
                    self._ready(ref)
                    idle.append(name)
                except ToolFailedError:  # its actor or node went away while it started: the others go on
                    del self.actors[name]
                    self._some_left(queue, pending)
                give()
                continue
            name, item = pending.pop(ref)
            item.seconds = time.monotonic() - item.seconds
            try:
                status, body, hello, restarts = ray.get(ref)
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError, ray.exceptions.NodeDiedError):
                # the actor or its node is gone: this item is not at fault; run it elsewhere
                del self.actors[name]
                queue.forget(name)
                item.lost += 1
                if item.lost >= MAX_LOST:
                    queue.add(on_done(item, Died("crash", f"its host was lost {item.lost} times"), self.info[name]))
                else:
                    queue.requeue(item)
                self._some_left(queue, pending)
                give()
                continue
            info = self.info[name]
            if restarts != info.restarts:
                queue.forget(name)
            info.restarts = restarts
            if hello:
                info.hello = hello_decoder.decode(hello)
            reply: Reply | Died = reply_decoder.decode(body) if status == "reply" else Died(status, str(body))
            queue.add(on_done(item, reply, info))
            idle.append(name)
            give()

    def _some_left(self, queue: Backlog, pending: dict[Any, tuple[str, Item]]) -> None:
        if not self.actors:
            raise ToolFailedError(f"ray: every worker was lost; {len(queue) + len(pending)} items not run")

    def close(self) -> None:
        for a in self.actors.values():
            self.ray.kill(a)
        self.actors.clear()
