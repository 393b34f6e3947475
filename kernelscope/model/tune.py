"""Typed records of ``kscope tune``: a search space, one candidate's outcome, a shape's winner, a sweep.

A candidate is one work unit: (shape, config). Its outcome carries a status from a closed list, so a
sweep's table can say how every candidate ended — a timed result (``ok``) or why there is none. Shapes and
configs are flat ``{name: value}`` maps (numbers, strings, booleans) kept in the order the space gives
them; ``key`` is their canonical JSON (sorted names), the identity the store and the writers use.
"""

from __future__ import annotations

from typing import Literal, get_args

import msgspec

from kernelscope.model.frames import Tabular, records

TUNE_SCHEMA = "kernelscope.tune.v1"

Value = int | float | str | bool
Params = dict[str, Value]
Status = Literal["ok", "compile_error", "mismatch", "oom", "crash", "timeout", "skipped", "pruned"]
STATUSES: tuple[Status, ...] = get_args(Status)
Device = Literal["cpu", "cuda", "auto"]
Timing = Literal["cold", "hot", "graph"]

_encoder = msgspec.json.Encoder(order="sorted")


def key(params: Params) -> str:
    """The canonical text of a shape or config: its JSON with sorted names (the store's identity)."""
    return _encoder.encode(params).decode()


def label(params: Params) -> str:
    """``A=1,B=x``: a shape or config as the table and ``--shape`` write it."""
    return ",".join(f"{k}={v}" for k, v in params.items())


class Space(msgspec.Struct, frozen=True, kw_only=True):
    """What to search: every combination of ``params`` (or the explicit list ``configs``, as a Triton
    ``@triton.autotune`` gives it) that satisfies all ``constraints``, for each shape. ``incumbent``: the
    config in use today (the speedup's reference and the first tie-breaker). ``signature``: a Triton kernel's
    runtime argument types for compiling it without a GPU (``kscope tune``'s screen), in the notation of
    Triton's AOT compiler: ``{a_ptr: "*fp16", M: "i32", stride_ak: "i32:1"}`` (``:16`` divisible by 16,
    ``:1`` equal to 1)."""

    params: dict[str, list[Value]] = {}
    configs: list[Params] = []
    constraints: list[str] = []
    shapes: list[Params] = []
    incumbent: Params | None = None
    signature: dict[str, str] = {}


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    shape: Params
    config: Params

    @property
    def id(self) -> str:
        return f"{key(self.shape)}|{key(self.config)}"


class Outcome(msgspec.Struct, kw_only=True):
    """One candidate's result. Times in µs; ``ci_us`` is the bootstrap CI of the median. ``detail`` says
    why a candidate has no time (the constraint, the error line, the tail of a crashed process's stderr);
    ``registers``/``shared_bytes`` come from its code object where the target exposes one (tie-breakers)."""

    shape: Params
    config: Params
    status: Status
    median_us: float | None = None
    ci_us: list[float] | None = None
    iqr_us: float | None = None
    samples: int = 0
    detail: str = ""
    device: str = ""
    device_uuid: str = ""
    attempts: int = 1
    seconds: float = 0.0
    registers: int | None = None
    shared_bytes: int | None = None
    reused: bool = False


class Best(msgspec.Struct, kw_only=True):
    """A shape's result after stage 2: ``config`` won when its CI separated from the runner-up's;
    otherwise ``tie`` lists every config it could not be told apart from (``config`` is then the one the
    deterministic tie-break chose: the incumbent, then fewer registers and shared bytes, then key order)."""

    shape: Params
    config: Params
    median_us: float
    ci_us: list[float]
    tie: list[Params] = []
    runner_up: Params | None = None
    runner_up_ratio: list[float] | None = None  # runner-up / best: estimate, CI low, CI high (paired rounds)
    incumbent_us: float | None = None
    speedup: float | None = None  # incumbent / best, from the same stage-2 rounds
    rounds: int = 0
    device: str = ""


class Screened(msgspec.Struct, kw_only=True):
    """One candidate as the screen saw its code object for ``arch``: kept for timing, or not and why."""

    shape: Params
    config: Params
    kept: bool
    status: Status = "ok"  # pruned or compile_error when not kept
    detail: str = ""
    registers: int | None = None
    shared_bytes: int | None = None
    occupancy: str = ""


class WorkerUse(msgspec.Struct, kw_only=True):
    """How one worker spent the sweep (seconds since the sweep started): whether the devices were kept busy,
    and how much of their time went to set-up (build, compile, first run, check) rather than timing."""

    name: str
    ready_s: float  # its device context and target were loaded
    items: int = 0
    busy_s: float = 0.0  # running items, round trips included
    setup_s: float = 0.0  # of which building, compiling, the first run and the correctness check
    stage2_s: float = 0.0  # of which re-timing finalists (stage 2)


class TuneResult(msgspec.Struct, Tabular, kw_only=True):
    """``kscope tune --json``: the winners, every candidate, and how many came from the store."""

    best: list[Best]
    candidates: list[Outcome]
    reused: int = 0
    target: str = ""
    source_hash: str = ""
    environment: dict[str, str] = {}
    workers: list[str] = []
    executor: str = "local"
    wall_s: float = 0.0
    usage: list[WorkerUse] = []
    stage1_end_s: float | None = None  # the last stage-1 result arrived (what follows is stage 2's tail)
    work_end_s: float | None = None  # the last item finished (what follows is stopping the workers)
    notes: list[str] = []
    screen_arch: str = ""
    screen: list[Screened] = []
    schema: str = TUNE_SCHEMA

    def _rows(self) -> list[dict[str, object]]:
        return records(self.candidates)

    def counts(self) -> dict[str, int]:
        """Candidates per status, in the closed list's order."""
        found = {s: 0 for s in STATUSES}
        for c in self.candidates:
            found[c.status] += 1
        return {s: n for s, n in found.items() if n}
