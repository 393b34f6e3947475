"""How each vendor tracer is invoked: the command line and environment that wrap the workload.

All vendor knowledge of ``kscope profile`` lives here. NVIDIA/ROCm Python workloads: the PyTorch
profiler injected through ``sitecustomize`` (``hook/``), step-windowed. AMD: ``rocprofv3 --kernel-trace
--stats`` with CSV output, the format whose ``kernel_stats.csv`` the gap analysis is checked against.
NVIDIA non-Python workloads: ``nsys profile`` exporting SQLite.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.errors import InputError, MissingToolError
from kernelscope.profiling.config import ProfileConfig, Tracer

HOOK_DIR = Path(__file__).parent / "hook"
_PYTHON_LAUNCHERS = ("python", "python3", "torchrun", "pytest", "accelerate", "deepspeed")


@dataclass(frozen=True)
class Invocation:
    """What to execute: argv (no shell), extra environment, and the glob that finds the traces after."""

    tracer: Tracer
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    trace_glob: str = "*"


def is_python(argv: list[str]) -> bool:
    exe = Path(argv[0]).name
    return exe.endswith(".py") or any(exe == p or exe.startswith(p + ".") for p in _PYTHON_LAUNCHERS)


def choose(cfg: ProfileConfig) -> Tracer:
    """``auto``: rocprofv3 on an AMD machine, else the torch hook for Python, else nsys."""
    if cfg.tracer != "auto":
        return cfg.tracer
    if shutil.which("rocprofv3") and Path("/dev/kfd").exists():
        return "rocprofv3"
    if is_python(cfg.command):
        return "torch"
    if shutil.which("nsys"):
        return "nsys"
    raise MissingToolError(
        "a kernel tracer", "for a non-Python workload install Nsight Systems (nsys) or ROCm's rocprofv3"
    )


def torch_hook(cfg: ProfileConfig, out: Path) -> Invocation:
    w = cfg.window
    path = os.pathsep.join(p for p in (str(HOOK_DIR), os.environ.get("PYTHONPATH", "")) if p)
    env = {
        "PYTHONPATH": path,
        "KSCOPE_TRACE_DIR": str(out),
        "KSCOPE_WAIT": str(w.wait),
        "KSCOPE_WARMUP": str(w.warmup),
        "KSCOPE_ACTIVE": str(w.active),
        "KSCOPE_STEP_FN": w.step_fn,
        "KSCOPE_RECORD_SHAPES": "1" if cfg.record_shapes else "0",
    }
    return Invocation("torch", list(cfg.command), env, "trace_rank*_pid*.json.gz")


def rocprofv3(cfg: ProfileConfig, out: Path) -> Invocation:
    argv = [
        "rocprofv3",
        "--kernel-trace",
        "--marker-trace",  # ROCTx ranges, for --phase-by
        "--stats",
        "--output-format",
        "csv",
        "--output-directory",
        str(out),
        "--output-file",
        "run",
        "--",
        *cfg.command,
    ]
    return Invocation("rocprofv3", argv, {}, "**/*kernel_trace.csv")


def nsys(cfg: ProfileConfig, out: Path) -> Invocation:
    argv = ["nsys", "profile", "--trace", "cuda,nvtx", "--export", "sqlite", "--force-overwrite", "true"]
    argv += ["--output", str(out / "run"), "--", *cfg.command]
    return Invocation("nsys", argv, {}, "run.sqlite")


def invocation(cfg: ProfileConfig, out: Path) -> Invocation:
    if not cfg.command:
        raise InputError("no workload command: give one after -- or as `command:` in --config")
    tracer = choose(cfg)
    if tracer == "torch" and not is_python(cfg.command):
        raise InputError(f"the torch tracer injects into Python; {cfg.command[0]!r} is not a Python launcher")
    build = {"torch": torch_hook, "rocprofv3": rocprofv3, "nsys": nsys}[tracer]
    return build(cfg, out)
