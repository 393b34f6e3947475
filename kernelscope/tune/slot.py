"""One worker process seen from the parent: start it pinned to one device, hand it jobs, survive it.

A job's reply must arrive before its deadline. A worker that dies (segfault, ``os._exit``, the kernel's
OOM killer) is a ``crash`` with its exit signal and the tail of its stderr; one that stays silent past the
deadline is a ``timeout``. Either way its whole process group is killed and the next job starts a fresh
worker, so a bad candidate costs its own time and one restart, nothing more.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from typing import IO

from kernelscope.errors import InputError, ToolFailedError, one_line
from kernelscope.process import signal_name
from kernelscope.tune.protocol import (
    Hello,
    Job,
    Reply,
    RunReply,
    Setup,
    encode,
    hello_decoder,
    reply_decoder,
)

START_TIMEOUT_S = 300.0  # importing torch and the target, first CUDA context: seconds, minutes on a cold disk
TAIL_CHARS = 1500


class Died(Exception):
    """The worker is gone or silent; ``status`` is ``crash`` or ``timeout`` and ``detail`` says how."""

    def __init__(self, status: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def _signal_name(code: int | None) -> str:
    if code is None:
        return "still running"
    return f"killed by {signal_name(-code)}" if code < 0 else f"exit status {code}"


class Slot:
    """A worker pinned by ``env`` (``CUDA_VISIBLE_DEVICES``...), started on first use and after each death."""

    def __init__(self, name: str, setup: Setup, env: Mapping[str, str]) -> None:
        self.name, self.setup, self.env = name, setup, dict(env)
        self.proc: subprocess.Popen[bytes] | None = None
        self.hello: Hello | None = None
        self.restarts = 0
        self._err: IO[bytes] = tempfile.TemporaryFile(prefix="kscope-tune-stderr-")  # noqa: SIM115 - closed in close()
        self._buf = b""

    def start(self) -> Hello:
        self.stop()
        self._err.seek(0)
        self._err.truncate()
        self._buf = b""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kernelscope.tune.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=self.env,
            start_new_session=True,  # its own process group: killing it kills whatever it spawned
        )
        assert self.proc.stdin is not None
        self.proc.stdin.write(encode(self.setup) + b"\n")
        self.proc.stdin.flush()
        try:
            hello = hello_decoder.decode(self._line(START_TIMEOUT_S))
        except Died as died:
            self.stop()
            raise ToolFailedError(f"worker {self.name} did not start: {died.detail}") from None
        if hello.error:
            self.stop()
            raise InputError(hello.error)
        if self.setup.expect_uuid and hello.device_uuid and hello.device_uuid not in self.setup.expect_uuid:
            self.stop()
            raise ToolFailedError(
                f"worker {self.name} was pinned to {self.setup.expect_uuid} but sees {hello.device_uuid}"
            )
        self.hello = hello
        return hello

    def run(self, job: Job, timeout_s: float) -> Reply:
        """The job's reply, or ``Died`` (the worker is then stopped; the next job restarts it)."""
        if self.proc is None or self.proc.poll() is not None:
            if self.proc is not None:
                self.restarts += 1
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        mark = self._err.tell()
        try:
            self.proc.stdin.write(encode(job) + b"\n")
            self.proc.stdin.flush()
            reply: Reply = reply_decoder.decode(self._line(timeout_s))
        except BrokenPipeError:
            raise self._died("crash", mark) from None
        except Died as died:
            raise self._died(died.status, mark, died.detail) from None
        if isinstance(reply, RunReply) and reply.fatal:
            self.proc.wait(timeout=30)  # it exits by itself; the next job gets a fresh one
        return reply

    def _died(self, status: str, mark: int, detail: str = "") -> Died:
        code = self.proc.poll() if self.proc else None
        self.stop()
        self.restarts += 1
        tail = self.stderr_since(mark)
        what = detail or _signal_name(code)
        return Died(status, one_line(f"{what}; stderr: {tail}" if tail else what))

    def stderr_since(self, mark: int) -> str:
        self._err.flush()
        self._err.seek(mark)
        text = self._err.read().decode("utf-8", errors="replace")
        self._err.seek(0, os.SEEK_END)
        text = text.split("\n\nExtension modules:")[0].strip()  # faulthandler's module list: no clue to the crash
        return text[-TAIL_CHARS:]

    def _line(self, timeout_s: float) -> bytes:
        """One line from the worker's channel within ``timeout_s`` (``Died`` if it exits or stays silent)."""
        deadline = time.monotonic() + timeout_s
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Died("timeout", f"no answer within {timeout_s:g} s")
                if not sel.select(timeout=left):
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    self.proc.wait(timeout=10)
                    raise Died("crash", _signal_name(self.proc.returncode))
                self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def kill(self) -> None:
        """Signal the worker's process group to die, without waiting: releasing a GPU context takes the
        driver a while, so an executor signals every worker first and then waits for them together."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    def stop(self) -> None:
        if self.proc is None:
            return
        self.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        self.proc = None

    def close(self) -> None:
        self.stop()
        self._err.close()


def pinned_env(base: Mapping[str, str], device: str, vendor: str) -> dict[str, str]:
    """``base`` with only ``device`` (a UUID or an index among the visible devices) visible to the worker."""
    env = dict(base)
    if vendor == "amd":
        # HIP_VISIBLE_DEVICES filters what ROCR already exposes; set one level only, so two filters cannot
        # compose into an empty set
        env["HIP_VISIBLE_DEVICES"] = device
        env.pop("CUDA_VISIBLE_DEVICES", None)
    else:
        env["CUDA_VISIBLE_DEVICES"] = device
    return env
