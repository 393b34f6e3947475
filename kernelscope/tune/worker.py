"""A tuning worker: ``python -m kernelscope.tune.worker``, one long-lived process per device.

It reads a ``Setup`` line, loads the target once, answers with a ``Hello`` (its device and environment
fingerprint), then runs one job per line. Whatever a candidate does — raise, print, corrupt the device,
segfault, hang — the parent sees it as a reply or as this process's death or silence, and restarts it.
Each candidate is checked before it is timed: its callable's result against the reference.
"""

from __future__ import annotations

import concurrent.futures
import faulthandler
import os
import platform
import random
import sys
import time
import traceback
from collections.abc import Callable
from typing import IO, Any

from kernelscope.errors import KernelscopeError, Skip, ToolFailedError, one_line
from kernelscope.model.measurement import Measurement
from kernelscope.model.tune import Outcome, Status
from kernelscope.process import run_tool
from kernelscope.tune.protocol import (
    Compare,
    CompareReply,
    Hello,
    Run,
    RunReply,
    Setup,
    encode,
    job_decoder,
    setup_decoder,
)
from kernelscope.tune.target import NO_REFERENCE, Target, load, mismatch

# a device error after which the process's GPU context is unusable: reply, then exit to be restarted
_FATAL = (
    "illegal memory access",
    "unspecified launch failure",
    "device-side assert",
    "misaligned address",
    "illegal instruction",
    "hipErrorIllegalAddress",
    "an illegal",
    "CUDA error",
    "HIP error",
)
_COMPILE_VARS = (
    "TRITON_",
    "AMDGCN_",
    "MLIR_",
    "LLVM_",
    "NVIDIA_TF32",
    "TORCHINDUCTOR_",
    "PYTORCH_TUNABLEOP_",
    "HIPBLASLT_",
)
_NOT_COMPILE = ("CACHE_DIR", "_HOME", "VISIBLE_DEVICES", "_DUMP")


def _uses_gpu(setup: Setup) -> bool:
    if setup.device == "cpu":
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def fingerprint(gpu: bool, driver: Callable[[], str] | None = None) -> Hello:
    """The device and what changes a timing or a compiled kernel: versions, driver, compile variables."""
    env = {n: v for n, v in os.environ.items() if n.startswith(_COMPILE_VARS) and not any(x in n for x in _NOT_COMPILE)}
    facts: dict[str, str] = {"python": platform.python_version()}
    for mod in ("torch", "triton"):
        module = sys.modules.get(mod)
        if module is None:
            try:
                module = __import__(mod)
            except ImportError:
                continue
        facts[mod] = str(getattr(module, "__version__", "?"))
    if not gpu:
        return Hello(device=_cpu_name(), device_uuid="", visible=0, environment={**facts, **env})
    import torch

    props = torch.cuda.get_device_properties(0)
    # CUDA builds of torch 2.11 also have gcnArchName, holding the device's name
    facts["arch"] = str(props.gcnArchName) if torch.version.hip else f"sm_{props.major}{props.minor}"
    facts["runtime"] = f"hip {torch.version.hip}" if torch.version.hip else f"cuda {torch.version.cuda}"
    facts["driver"] = (driver or _driver)()
    return Hello(
        device=str(props.name),
        device_uuid=str(getattr(props, "uuid", "")),
        visible=torch.cuda.device_count(),
        environment={**facts, **env},
    )


def _driver() -> str:
    """The kernel driver's version (a new driver can change a timing): nvidia-smi's, else amd-smi's, else ''."""
    for argv in (
        ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"],
        ["amd-smi", "version", "--csv"],
    ):
        try:
            done = run_tool(argv, timeout_s=30)
        except ToolFailedError:  # not installed, or hung
            continue
        if done.returncode == 0 and done.stdout.strip():
            return " ".join(done.stdout.split())[:200]
    return ""


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return "cpu: " + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "cpu: " + (platform.processor() or platform.machine())


def _reason(exc: BaseException) -> str:
    return one_line(f"{type(exc).__name__}: {exc}")[:500]


def _is_oom(exc: BaseException) -> bool:
    return (
        isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError" or "out of memory" in str(exc).lower()
    )


def _is_fatal(exc: BaseException) -> bool:
    return any(s in str(exc) for s in _FATAL)


class Worker:
    def __init__(self, setup: Setup, target: Target, gpu: bool) -> None:
        self.setup, self.target, self.gpu = setup, target, gpu

    def measure(self, fn: Callable[[], object], min_time_ms: float, warmup_ms: float) -> Measurement:
        from kernelscope import timing

        if not self.gpu:
            return timing.bench_host(fn, warmup_ms=warmup_ms, min_time_ms=min_time_ms)
        mode = "cold" if self.setup.timing == "cold" else "hot"
        return timing.bench(
            fn, mode=mode, graph=self.setup.timing == "graph", warmup_ms=warmup_ms, min_time_ms=min_time_ms
        )

    def run(self, job: Run) -> RunReply:
        t0 = time.perf_counter()
        setup: list[float] = []  # set once the candidate is checked and timing starts

        def reply(status: Status, fatal: bool = False, **measured: Any) -> RunReply:
            return RunReply(
                outcome=Outcome(shape=job.shape, config=job.config, status=status, **measured),
                fatal=fatal,
                setup_s=round(setup[0] if setup else time.perf_counter() - t0, 4),
            )

        try:
            fn = self.target.build(job.config, job.shape)
        except Skip as exc:
            return reply("skipped", detail=one_line(str(exc)) or "Skip")
        except Exception as exc:  # the user's set-up or the compiler: any exception is this candidate's
            return reply("oom" if _is_oom(exc) else "compile_error", _is_fatal(exc), detail=_reason(exc))
        registers, shared = self.target.resources(fn)
        try:
            got = fn()
            self._sync()
            want = self.target.expected(job.shape)
            why = None if want is NO_REFERENCE else mismatch(got, want, self.setup.atol, self.setup.rtol)
            if why:
                return reply("mismatch", detail=why, registers=registers, shared_bytes=shared)
            setup.append(time.perf_counter() - t0)
            m = self.measure(fn, job.min_time_ms, job.warmup_ms)
        except Skip as exc:
            return reply("skipped", detail=one_line(str(exc)) or "Skip")
        except Exception as exc:
            status: Status = "oom" if _is_oom(exc) else "crash"
            # a crash ends this process too: its retry then runs in a fresh one, whatever state it left behind
            fatal = status == "crash" or _is_fatal(exc)
            return reply(status, fatal, detail=_reason(exc), registers=registers, shared_bytes=shared)
        ci = m.median_ci
        return reply(
            "ok",
            median_us=m.summary.median,
            ci_us=[ci.low, ci.high],
            iqr_us=m.summary.iqr,
            samples=m.summary.n,
            detail="; ".join(m.warnings),
            registers=registers,
            shared_bytes=shared,
        )

    def compare(self, job: Compare) -> CompareReply:
        fns: list[Callable[[], object]] = []
        kept: list[int] = []
        failed: dict[int, str] = {}
        for i, config in enumerate(job.configs):
            try:
                fn = self.target.build(config, job.shape)
                fn()
            except Exception as exc:
                failed[i] = _reason(exc)
                continue
            fns.append(fn)
            kept.append(i)
        self._sync()
        order = list(range(len(fns)))
        rng = random.Random(job.seed)
        times: list[list[float]] = []
        for _ in range(job.rounds):
            rng.shuffle(order)  # interleaved: a clock or thermal drift hits every config alike
            row = [0.0] * len(fns)
            for i in order:
                row[i] = self.measure(fns[i], job.round_ms, warmup_ms=min(5.0, job.round_ms)).summary.median
            times.append(row)
        return CompareReply(times=times, kept=kept, failed=failed)

    def _sync(self) -> None:
        if self.gpu:
            import torch

            torch.cuda.synchronize()


def _send(channel: IO[bytes], message: Any) -> None:
    channel.write(encode(message) + b"\n")
    channel.flush()


def main() -> None:
    faulthandler.enable()  # a segfaulting candidate leaves its Python stack in the stderr tail kscope reports
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the candidate's own prints go to stderr, never into the channel
    setup = setup_decoder.decode(sys.stdin.buffer.readline())
    # asking the driver (nvidia-smi: up to a second on a big host) overlaps importing torch and the target
    driver = concurrent.futures.ThreadPoolExecutor(1).submit(_driver) if setup.device != "cpu" else None
    os.chdir(setup.cwd)
    sys.path.insert(0, setup.cwd)
    gpu = _uses_gpu(setup)
    try:
        target = load(setup)
    except Exception as exc:  # kscope's own errors are already one line naming the spec
        error = str(exc) if isinstance(exc, KernelscopeError) else f"{setup.spec}: {_reason(exc)}"
        _send(channel, Hello(device="", device_uuid="", visible=0, environment={}, error=error))
        return
    _send(channel, fingerprint(gpu, driver.result if driver else None))
    worker = Worker(setup, target, gpu)
    for line in sys.stdin.buffer:
        job = job_decoder.decode(line)
        reply = worker.run(job) if isinstance(job, Run) else worker.compare(job)
        _send(channel, reply)
        if isinstance(reply, RunReply) and reply.fatal:
            traceback.print_exc()
            os._exit(3)


if __name__ == "__main__":
    main()
