"""How each vendor tracer is invoked: the command line and environment that wrap the workload.

All vendor knowledge of ``kscope profile`` lives here. NVIDIA/ROCm Python workloads: the PyTorch
profiler injected through ``sitecustomize`` (``hook/``), step-windowed. AMD: ``rocprofv3 --kernel-trace
--stats`` with CSV output, the format whose ``kernel_stats.csv`` the gap analysis is checked against.
NVIDIA non-Python workloads: ``nsys profile`` exporting SQLite. Per-instruction captures of chosen
kernels: ``ncu`` (Nsight Compute, one ``.ncu-rep``) and ``att`` (``rocprofv3 --att``, decoded
``ui_output_agent_*`` folders).
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


def ncu(cfg: ProfileConfig, out: Path) -> Invocation:
    """One ``.ncu-rep``. ``--target-processes all``: Python launchers often fork the process that runs
    the kernels. Kernel filter by function name (``--kernel-name-base function``, the name without
    parameters, as kscope shows Triton and CUDA kernels)."""
    k, o = cfg.kernels, cfg.ncu
    argv = ["ncu", "--target-processes", "all", "--set", o.set, "--import-source", "yes" if o.import_source else "no"]
    if k.regex:
        argv += ["--kernel-name-base", "function", "--kernel-name", f"regex:{k.regex}"]
    argv += ["--launch-skip", str(k.skip), "--launch-count", str(k.count)]
    argv += ["--export", str(out / "run"), "--force-overwrite", "--", *cfg.command]
    return Invocation("ncu", argv, {}, "run.ncu-rep")


def att(cfg: ProfileConfig, out: Path) -> Invocation:
    """``rocprofv3 --att`` with the decoder run in place (``ui_output_agent_*`` folders).

    Pitfalls handled: only the first launch of each kernel is traced unless an iteration range is given
    (so skip/count become ``--kernel-iteration-range``); an unfiltered trace covers every kernel, so the
    regex goes to ``--kernel-include-regex``; without the ROCprof Trace Decoder library only raw ``.att``
    files appear, so it is looked for first; the kernel trace rides along for the gap table.
    """
    k, a = cfg.kernels, cfg.att
    if next(out.glob("**/*.att"), None) is not None:  # the decoder would mix both captures' code objects
        raise InputError(f"{out} holds an earlier ATT capture; give a new folder with --out")
    lib = att_decoder()
    argv = ["rocprofv3", "--att", "--kernel-trace", "--output-format", "csv"]
    argv += ["--att-target-cu", str(a.target_cu), "--att-shader-engine-mask", a.shader_engine_mask]
    argv += ["--att-simd-select", a.simd_select, "--att-buffer-size", a.buffer_size]
    if lib:
        argv += ["--att-library-path", lib]
    if k.regex:
        argv += ["--kernel-include-regex", k.regex]
    argv += ["--kernel-iteration-range", f"[{k.skip + 1}-{k.skip + k.count}]"]
    argv += ["--output-directory", str(out), "--output-file", "run", "--", *cfg.command]
    return Invocation("att", argv, {}, "**/ui_output_agent_*")


_DECODER = "librocprof-trace-decoder.so"


def att_decoder() -> str | None:
    """Folder of the ROCprof Trace Decoder: ``$ROCPROF_ATT_LIBRARY_PATH`` or ROCm's lib (rocprofv3's own
    default search); None where neither has it (a dry run on a machine without ROCm)."""
    for d in (os.environ.get("ROCPROF_ATT_LIBRARY_PATH"), os.environ.get("ROCM_PATH", "/opt/rocm") + "/lib"):
        if d and Path(d, _DECODER).exists():
            return d
    return None


def invocation(cfg: ProfileConfig, out: Path) -> Invocation:
    if not cfg.command:
        raise InputError("no workload command: give one after -- or as `command:` in --config")
    tracer = choose(cfg)
    if tracer == "torch" and not is_python(cfg.command):
        raise InputError(f"the torch tracer injects into Python; {cfg.command[0]!r} is not a Python launcher")
    build = {"torch": torch_hook, "rocprofv3": rocprofv3, "nsys": nsys, "ncu": ncu, "att": att}[tracer]
    return build(cfg, out)
