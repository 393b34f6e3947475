"""The one process runner (eval commands, profiled workloads): a command in its own process group.

It runs in a new session, so its pid is the id of a group holding everything it spawns. At the timeout,
and also after a normal exit (stragglers left in the background would perturb the next run), the whole
group gets SIGKILL. The leader is waited for without being reaped (``waitid(WNOWAIT)``) until the group
is killed, so the group id cannot have been recycled by then.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from kernelscope.errors import ToolFailedError

CompletedText = subprocess.CompletedProcess[str]


def _exited(pid: int, timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` for ``pid`` to exit, leaving it unreaped; False at the timeout."""
    deadline = time.monotonic() + timeout_s
    delay = 0.0005
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(delay, left))
        delay = min(delay * 2, 0.02)  # the polling adds at most 20 ms to the wall time
    return True


def run_group(
    cmd: list[str],
    *,
    cwd: Path | str | None,
    env: Mapping[str, str],
    timeout_s: float = math.inf,
    stdout: IO[Any] | int | None = None,
    stderr: IO[Any] | int | None = None,
) -> tuple[int | None, float]:
    """Run ``cmd`` (stdin from /dev/null: a background group reading the terminal would stop) and kill its
    process group when it exits or at ``timeout_s``: its exit status (None: killed at the timeout) and
    wall time. Raises ``OSError`` if it cannot start."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, start_new_session=True
    )
    try:
        timed_out = not _exited(proc.pid, timeout_s)
    finally:  # also on Ctrl-C: nothing of the command outlives kscope's wait for it
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return None if timed_out else proc.returncode, time.perf_counter() - t0


def signal_name(number: int) -> str:
    """``SIGSEGV`` for 11: how a process died, from its negative return code's absolute value."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


TOOL_TIMEOUT_S = 120.0  # llvm-objdump, cuobjdump, c++filt: seconds on the largest real inputs, never minutes


def run_tool(
    argv: list[str], *, input: str | None = None, timeout_s: float = TOOL_TIMEOUT_S, cwd: Path | None = None
) -> CompletedText:
    """Run an external tool (a disassembler, a demangler) to completion with a timeout; its output as text
    (invalid UTF-8 replaced). Not starting, or running past ``timeout_s``, is one ``ToolFailedError`` line;
    the caller judges the exit status."""
    name = Path(argv[0]).name
    try:
        return subprocess.run(
            argv, input=input, capture_output=True, text=True, errors="replace", timeout=timeout_s, check=False, cwd=cwd
        )
    except subprocess.TimeoutExpired:
        raise ToolFailedError(f"{name} ran past its {timeout_s:g} s timeout and was stopped") from None
    except OSError as exc:
        raise ToolFailedError(f"{name} could not start ({exc.strerror or exc})") from None
