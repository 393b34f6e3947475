"""The environment a task's evals run in: the creator's, less profiler switches and secrets.

A shell left with ``CUDA_LAUNCH_BLOCKING=1`` or an Nsight injection library in it times a different
program. Evals therefore run in the environment recorded by ``kscope task new``, with these removed
(``docs/eval.md`` lists them):

- variables that serialize launches or inject a tracer: ``CUDA_LAUNCH_BLOCKING``, ``HIP_LAUNCH_BLOCKING``,
  ``AMD_SERIALIZE_KERNEL``, ``AMD_SERIALIZE_COPY``, ``HSA_TOOLS_LIB``, ``HSA_TOOLS_REPORT_LOAD_FAILURE``,
  ``CUDA_INJECTION64_PATH``, ``NVTX_INJECTION64_PATH``, ``NVTX_INJECTION32_PATH``, ``KINETO_CONFIG``,
  ``KINETO_USE_DAEMON``, and every name starting ``NSYS_``, ``NCU_``, ``NV_NSIGHT``, ``ROCPROF``,
  ``ROCP_``, ``ROCTRACER``, ``OMNITRACE`` or ``KSCOPE_`` (kscope's own profiler hook);
- ``LD_PRELOAD`` entries of profiler libraries (rocprofiler, roctracer, Nsight injection, CUPTI,
  omnitrace);
- ``PYTHONPATH`` entries that hold kscope's profiler hook (``kernelscope/profiling/hook``).

Names that look like secrets (``TOKEN``, ``SECRET``, ``PASSWORD``, ``API_KEY``...) are not written to
``task.json``: they are inherited from the environment of each eval instead.
"""

from __future__ import annotations

import os
import platform
import re
import socket
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from kernelscope.model.task import Environment
from kernelscope.profiling.tracers import HOOK_DIR

PROFILER_VARS = frozenset(
    {
        "CUDA_LAUNCH_BLOCKING",
        "HIP_LAUNCH_BLOCKING",
        "AMD_SERIALIZE_KERNEL",
        "AMD_SERIALIZE_COPY",
        "HSA_TOOLS_LIB",
        "HSA_TOOLS_REPORT_LOAD_FAILURE",
        "CUDA_INJECTION64_PATH",
        "NVTX_INJECTION64_PATH",
        "NVTX_INJECTION32_PATH",
        "KINETO_CONFIG",
        "KINETO_USE_DAEMON",
    }
)
PROFILER_PREFIXES = ("NSYS_", "NCU_", "NV_NSIGHT", "ROCPROF", "ROCP_", "ROCTRACER", "OMNITRACE", "KSCOPE_")
_PROFILER_LIB = re.compile(r"rocprof|roctracer|ToolsInjection|TreeLauncher|nsys|cupti|omnitrace", re.IGNORECASE)
_SECRET = re.compile(r"TOKEN|SECRET|PASSW|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL", re.IGNORECASE)


def _is_hook(entry: str) -> bool:
    p = Path(entry)
    return p.parts[-3:] == ("kernelscope", "profiling", "hook") or (p.exists() and p.resolve() == HOOK_DIR.resolve())


def _is_profiler_lib(entry: str) -> bool:
    return bool(_PROFILER_LIB.search(Path(entry).name))


def _filter(value: str, sep: str, drop: Callable[[str], bool]) -> tuple[str, str]:
    """The entries of the list ``value`` (separated by ``sep``) to keep, and those ``drop`` removes."""
    keep: list[str] = []
    gone: list[str] = []
    for entry in filter(None, value.split(sep)):
        (gone if drop(entry) else keep).append(entry)
    return sep.join(keep), sep.join(gone)


def record(env: Mapping[str, str] | None = None) -> Environment:
    """``env`` (default: this process's) as a task records it: profiler switches stripped, secrets inherited."""
    source = dict(os.environ if env is None else env)
    kept: dict[str, str] = {}
    stripped: dict[str, str] = {}
    inherit: list[str] = []
    for name, value in sorted(source.items()):
        if name in PROFILER_VARS or name.startswith(PROFILER_PREFIXES):
            stripped[name] = value
            continue
        if _SECRET.search(name):
            inherit.append(name)
            continue
        if name in ("LD_PRELOAD", "PYTHONPATH"):
            sep = " " if name == "LD_PRELOAD" and ":" not in value else ":"
            rest, gone = _filter(value, sep, _is_profiler_lib if name == "LD_PRELOAD" else _is_hook)
            if gone:
                stripped[name] = gone
            if rest:
                kept[name] = rest
            continue
        kept[name] = value
    return Environment(
        vars=kept,
        stripped=stripped,
        inherit=inherit,
        python=sys.version.split()[0],
        platform=platform.platform(),
        host=socket.gethostname(),
    )


def for_eval(recorded: Environment, current: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command of the task runs in: the recorded one plus the inherited secrets."""
    now = os.environ if current is None else current
    return {**recorded.vars, **{n: now[n] for n in recorded.inherit if n in now}}
