"""Ground-truth comparisons shared by reader tests: rocprofv3's own kernel_stats.csv versus launches."""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from kernelscope.model import Dim3, KernelLaunch


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


def assert_launch_matches_trace_row(k: KernelLaunch, r: dict[str, str]) -> None:
    """A launch read from another AMD format carries the same facts as its rocprofv3 kernel_trace.csv row."""
    items = Dim3(*(int(r[f"Grid_Size_{a}"]) for a in "XYZ"))
    block = Dim3(*(int(r[f"Workgroup_Size_{a}"]) for a in "XYZ"))
    assert k.name == r["Kernel_Name"]
    assert (k.start_ns, k.end_ns) == (int(r["Start_Timestamp"]), int(r["End_Timestamp"]))
    assert (k.grid_items, k.block) == (items, block)
    assert k.grid_blocks == Dim3(-(-items.x // block.x), -(-items.y // block.y), -(-items.z // block.z))
    assert (k.vgpr, k.agpr, k.sgpr) == (int(r["VGPR_Count"]), int(r["Accum_VGPR_Count"]), int(r["SGPR_Count"]))
    assert k.scratch_bytes == int(r["Scratch_Size"])
    # rocprofv3's CSV rounds LDS up to the 512-byte granule; the other formats keep the exact size
    assert k.lds_bytes is not None and -(-k.lds_bytes // 512) * 512 == int(r["LDS_Block_Size"])
