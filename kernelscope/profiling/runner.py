"""Execute an ``Invocation`` (in its own process group: ``kernelscope.process``) and find its traces."""

from __future__ import annotations

import math
import os
import shutil
import signal
import sys
from pathlib import Path

import msgspec

from kernelscope.errors import MissingToolError
from kernelscope.process import run_group
from kernelscope.profiling.config import ProfileConfig
from kernelscope.profiling.tracers import Invocation, invocation


class ProfileRun(msgspec.Struct, kw_only=True):
    """What one ``kscope profile`` run did: the command, exit code (-9: killed at the timeout), wall time, traces."""

    tracer: str
    argv: list[str]
    env: dict[str, str]
    returncode: int
    wall_s: float
    traces: list[str]
    out_dir: str
    timed_out: bool = False


def plan(cfg: ProfileConfig) -> Invocation:
    """The command line and environment ``run`` would use, without running anything (``--dry-run``)."""
    return invocation(cfg, Path(cfg.out_dir).resolve())


def run(cfg: ProfileConfig, *, quiet_stdout: bool = False) -> ProfileRun:
    """Run the workload under its tracer; ``quiet_stdout`` sends the workload's stdout to stderr, so a
    caller printing JSON on stdout keeps it machine-readable."""
    out = Path(cfg.out_dir).resolve()
    inv = invocation(cfg, out)
    if shutil.which(inv.argv[0]) is None and not Path(inv.argv[0]).exists():
        raise MissingToolError(inv.argv[0], f"it must be on PATH for the {inv.tracer} tracer")
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.glob(inv.trace_glob))
    env = {**os.environ, **cfg.env, **inv.env}
    timeout_s = math.inf if cfg.timeout_s is None else cfg.timeout_s
    stdout = sys.stderr if quiet_stdout else None
    returncode, wall = run_group(inv.argv, cwd=cfg.cwd, env=env, timeout_s=timeout_s, stdout=stdout)
    traces = sorted(str(p) for p in set(out.glob(inv.trace_glob)) - before)
    return ProfileRun(
        tracer=inv.tracer,
        argv=inv.argv,
        env=inv.env,
        returncode=-signal.SIGKILL if returncode is None else returncode,
        wall_s=wall,
        traces=traces,
        out_dir=str(out),
        timed_out=returncode is None,
    )
