"""Ground-truth comparisons shared by reader tests: rocprofv3's own kernel_stats.csv versus launches."""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from kernelscope.model import KernelLaunch


def assert_matches_rocprof_stats(launches: Iterable[KernelLaunch], stats_csv: Path) -> None:
    """Per kernel, calls and Σ duration ns equal rocprofv3's Calls and TotalDurationNs exactly."""
    calls: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    for k in launches:
        calls[k.name] += 1
        total[k.name] += k.duration_ns
    with stats_csv.open(newline="") as f:
        stats = list(csv.DictReader(f))
    assert {s["Name"]: int(s["Calls"]) for s in stats} == calls
    assert {s["Name"]: int(s["TotalDurationNs"]) for s in stats} == total
