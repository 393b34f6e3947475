"""rocprofv3 ``kernel_stats.csv`` (``--stats``): per-kernel statistics rocprofv3 computed itself.

Columns: Name, Calls, TotalDurationNs, AverageNs, Percentage, MinNs, MaxNs, StdDev (sample standard
deviation, n-1). There is no timeline: the profile has ``timing="none"`` and only ``stats`` (and the GPUs of
the ``agent_info.csv`` beside it).
"""

from __future__ import annotations

import re
from pathlib import Path

from kernelscope.errors import FormatError
from kernelscope.model import KernelStats, Profile, numbers
from kernelscope.readers import rocprof_agents
from kernelscope.readers._csv import norm, rows, to_float, to_int

FORMAT = "rocprof-kernel-stats"
_EXPECTED = "a rocprofv3 kernel_stats.csv (Name, Calls, TotalDurationNs, ... columns)"
_REQUIRED = ("name", "calls", "totaldurationns")
# rocprof writes its other statistics with the same columns: API calls (results.hip_stats.csv,
# <pid>_hip_api_stats.csv), copies (results.copy_stats.csv, <pid>_memory_copy_stats.csv), per domain, ...
NOT_KERNELS = re.compile(
    r"(^|[._])(?P<what>(hip|hsa|marker|rccl|rocdecode|rocjpeg|kfd|ompt)(_api)?|memory_copy|memory_allocation|copy"
    r"|scratch_memory|domain)_stats\.csv(\.gz)?$"
)
# a renamed file of API calls or copies: every name is a runtime function or a copy direction (not nccl*: RCCL's
# kernels are ncclDevKernel_...)
_API_NAME = re.compile(r"^(_*hip[A-Z_]|hsa_|roctx|MEMORY_COPY_|Copy(Host|Device)To|MARKER_)")


def read(path: Path, *, rank: int | None = None) -> Profile:
    del rank  # statistics are already aggregated over the process
    if m := NOT_KERNELS.search(path.name):
        raise FormatError(path, "rocprof's kernel statistics (kernel_stats.csv, results.stats.csv)",
                          f"its {m['what']} statistics: API calls or copies, not kernels")  # fmt: skip
    it = rows(path, _EXPECTED)
    header = [norm(h) for h in next(it, [])]
    if not all(c in header for c in _REQUIRED):
        raise FormatError(path, _EXPECTED, f"columns {header[:8]}")
    col = {h: i for i, h in enumerate(header)}
    out = Profile(sources=[str(path)], formats=[FORMAT], timing="none", devices=rocprof_agents.devices_beside(path))
    dropped = 0
    for line, row in enumerate(it, start=2):
        if not row:
            continue
        if len(row) != len(header):
            raise FormatError(path, _EXPECTED, f"line {line} with {len(row)} fields (truncated?)")
        calls, total = to_int(row[col["calls"]]), to_float(row[col["totaldurationns"]])
        if calls is None or total is None:
            raise FormatError(path, _EXPECTED, f"line {line} without Calls/TotalDurationNs numbers")
        times = [row[col[c]] for c in ("averagens", "minns", "maxns", "stddev") if c in col]
        if calls < 0 or total < 0 or any((v := to_float(t)) is not None and v < 0 for t in times):
            dropped += 1
            continue

        def f(name: str, row: list[str] = row) -> float | None:
            return to_float(row[col[name]]) if name in col else None

        out.stats.append(
            KernelStats(
                name=row[col["name"]],
                calls=calls,
                total_ns=total,
                avg_ns=f("averagens"),
                min_ns=f("minns"),
                max_ns=f("maxns"),
                std_ns=f("stddev"),
                pct=f("percentage"),
                source=str(path),
            )
        )
    if out.stats and all(_API_NAME.match(k.name) for k in out.stats):
        raise FormatError(path, "rocprof's kernel statistics", "statistics of API calls or copies, not kernels")
    numbers.count_dropped("kernel statistics", dropped, path)
    return out
