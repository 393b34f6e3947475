"""The messages between ``kscope tune`` and its worker processes: one JSON object per line.

The worker's stdout is the channel (the user's own prints are sent to stderr), so a candidate that prints
cannot corrupt it; a worker that dies mid-message is a ``crash`` like any other death.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from kernelscope.model.tune import Device, Outcome, Params, Timing


class Setup(msgspec.Struct, frozen=True, kw_only=True):
    """What every worker loads once: the target (``kind`` and spec), its reference, how to time."""

    kind: Literal["factory", "triton"]
    spec: str
    reference: str | None = None
    launch: str | None = None  # kind "triton": FILE.py:FUNC, FUNC(shape) -> the kernel's grid and arguments
    atol: float = 1e-2
    rtol: float = 1e-2
    device: Device = "auto"
    timing: Timing = "cold"
    cwd: str = "."
    expect_uuid: str = ""  # the device this worker was pinned to; the worker says which one it sees
    kernel_key: str = ""  # Triton's hash of the kernel's source, and of --source files: part of the store's key


class Hello(msgspec.Struct, frozen=True, kw_only=True):
    """The worker's first line: the device it runs on and what changes a timing (the environment fingerprint)."""

    device: str
    device_uuid: str
    visible: int
    environment: dict[str, str]
    error: str = ""  # the target could not be loaded: every candidate would fail the same way


class Run(msgspec.Struct, frozen=True, kw_only=True, tag="run"):
    """Stage 1: build, check and time one candidate."""

    shape: Params
    config: Params
    min_time_ms: float = 100.0
    warmup_ms: float = 25.0


class Compare(msgspec.Struct, frozen=True, kw_only=True, tag="compare"):
    """Stage 2: time several configs of one shape in interleaved rounds on this one device."""

    shape: Params
    configs: list[Params]
    rounds: int = 10
    round_ms: float = 20.0
    seed: int = 0


Job = Run | Compare


class RunReply(msgspec.Struct, kw_only=True, tag="run"):
    """The candidate's outcome as the worker saw it (device fields and timings of the run are the parent's)."""

    outcome: Outcome
    fatal: bool = False  # the device is unusable now (illegal address...): the worker exits after replying
    setup_s: float = 0.0  # build, compile, first run and correctness check, before timing


class CompareReply(msgspec.Struct, kw_only=True, tag="compare"):
    """``times[r][i]``: the median µs of config ``i`` in round ``r``; a config that failed to build has
    its reason in ``failed`` and no column (``kept`` lists the columns' indices into ``configs``)."""

    times: list[list[float]]
    kept: list[int]
    failed: dict[int, str] = {}
    detail: str = ""


Reply = RunReply | CompareReply

encode = msgspec.json.Encoder().encode
job_decoder = msgspec.json.Decoder(Job)
reply_decoder = msgspec.json.Decoder(Reply)
setup_decoder = msgspec.json.Decoder(Setup)
hello_decoder = msgspec.json.Decoder(Hello)
