"""AMD occupancy against the resident waves measured by ATT on an MI350X (gfx950).

Truth: each ATT capture's occupancy.json (wave start/end per CU, SIMD and slot) gives the most waves
resident at once on one SIMD. Resources come from rocprofv3's kernel_trace.csv of the same kernel (its
VGPR_Count is half the real allocation on gfx950 — see the corpus README — so it is doubled here) and
the CU count from the agent info. What ATT saw can never exceed the theoretical occupancy; when the
grid is too small to fill every CU, it equals the workgroups that land on one CU.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from pathlib import Path

import pytest

from kernelscope.analyses.occupancy import occupancy
from kernelscope.data import demo_file
from kernelscope.model.codeobj import KernelCode

ATT = Path(__file__).parent / "data" / "att_occupancy"
CAPTURES = [
    ("rmsnorm", "rmsnorm_big.json"),
    ("pa_mqa_logits_fp4", "pa_mqa_logits_fp4_big.json"),
    ("pa_mqa_logits_fp4", "pa_mqa_logits_fp4_small.json"),
    ("flash_attn_func", "flash_attn_func_small.json"),
    ("blockscale_preshuffle_gemm", "blockscale_preshuffle_gemm_big.json"),
]


def measured_waves_per_simd(path: Path) -> tuple[str, int]:
    doc = json.loads(path.read_text())
    best = 0
    for se, events in doc.items():
        if not se.isdigit():
            continue
        live: Counter[tuple[int, int]] = Counter()
        for _t, cu, simd, _slot, start, disp in sorted(events, key=lambda e: (e[0], -e[4])):
            if disp == 1:
                live[(cu, simd)] += 1 if start else -1
                best = max(best, live[(cu, simd)])
    return str(doc["dispatches"]["1"]), best


def _row(kernel_dir: str, name: str) -> dict[str, str]:
    rows = csv.DictReader(demo_file("mi350x", kernel_dir, "discover_kernel_trace.csv").open())
    return next(r for r in rows if r["Kernel_Name"] == name)


def _cus(kernel_dir: str) -> int:
    rows = csv.DictReader(demo_file("mi350x", kernel_dir, "discover_agent_info.csv").open())
    return next(int(r["Cu_Count"]) for r in rows if r["Agent_Type"] == "GPU")


@pytest.mark.parametrize(("kernel_dir", "capture"), CAPTURES, ids=[c[1] for c in CAPTURES])
def test_att_resident_waves_within_theory(kernel_dir: str, capture: str) -> None:
    name, measured = measured_waves_per_simd(ATT / capture)
    r = _row(kernel_dir, name)
    block = int(r["Workgroup_Size_X"]) * int(r["Workgroup_Size_Y"]) * int(r["Workgroup_Size_Z"])
    k = KernelCode(
        name=name,
        arch="gfx950",
        vendor="amd",
        vgpr=2 * int(r["VGPR_Count"]),
        agpr=int(r["Accum_VGPR_Count"]),
        sgpr=int(r["SGPR_Count"]),
        lds_bytes=int(r["LDS_Block_Size"]),
        wave_size=64,
    )
    occ = occupancy(k, block_size=block, dynamic_shared=0)
    assert occ is not None and occ.waves_per_simd is not None
    workgroups = math.prod(int(r[f"Grid_Size_{a}"]) // int(r[f"Workgroup_Size_{a}"]) for a in "XYZ")
    waves_wg = math.ceil(block / 64)
    grid_limit = math.ceil(workgroups / _cus(kernel_dir)) * waves_wg // 4
    assert 1 <= measured <= min(occ.waves_per_simd, max(grid_limit, 1))
    if grid_limit < occ.waves_per_simd and "big" in capture:  # the grid, not the resources, decides
        assert measured == grid_limit
