"""Theoretical occupancy of a kernel: resident waves per SIMD (AMD) or warps per SM (NVIDIA).

Pure arithmetic over the kernel's resources and its architecture's cited limits
(``kernelscope/data/arch/<arch>.yaml``; the formula and its sources are in that folder's README):

- AMD: a workgroup's waves all live on one CU, spread over its SIMDs, so every limit is counted in
  whole workgroups per CU — VGPRs (unified VGPR+AGPR file on gfx90a and later, allocated in granules),
  SGPRs (where they limit), LDS per CU, the waves-per-SIMD cap and the workgroups-per-CU cap — and
  waves per SIMD = workgroups x waves per workgroup / SIMDs.
- NVIDIA: blocks per SM limited by registers (per-warp allocation units), shared memory (static +
  dynamic + the per-block reservation, in allocation units, against the largest carve-out), warps per
  SM and blocks per SM — as the CUDA occupancy calculator does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from kernelscope.model.codeobj import KernelCode, Occupancy


@dataclass(frozen=True)
class ArchLimits:
    arch: str
    vendor: str
    values: dict[str, Any]

    def get(self, key: str, wave: int | None = None) -> Any:
        """The cited value; None when the data says UNKNOWN / NOT_APPLICABLE or does not have it.

        Values that differ by wave size (RDNA) or by CU/WGP mode are maps: the wave's entry, or the
        per-CU one (kscope counts occupancy per CU), is taken.
        """
        v = self.values.get(key)
        if isinstance(v, dict) and "value" in v:
            v = v["value"]
        if isinstance(v, dict):
            v = v.get(f"wave{wave}", v.get("cu_mode_per_cu"))
        if isinstance(v, (bool, int, float, list)):
            return v
        return None


def normalize_arch(arch: str) -> str:
    """``sm_90a`` -> ``sm_90``; ``gfx942:sramecc+`` -> ``gfx942``."""
    a = arch.split(":", maxsplit=1)[0].strip().lower()
    if a.startswith("sm_"):
        return "sm_" + "".join(ch for ch in a[3:] if ch.isdigit())
    return a


@cache
def arch_limits(arch: str) -> ArchLimits | None:
    name = normalize_arch(arch)
    try:
        text = resources.files("kernelscope.data").joinpath("arch", f"{name}.yaml").read_text()
    except (FileNotFoundError, OSError):
        return None
    doc = yaml.safe_load(text) or {}
    return ArchLimits(name, str(doc.get("vendor", "")), dict(doc.get("limits") or {}))


def roundup(x: int, unit: int | None) -> int:
    return x if not unit else -(-x // unit) * unit


# on ties the architecture's own caps name the limiter: a kernel at the maximum is not "VGPR-limited"
_PREFER = ("waves", "warps", "blocks", "workgroups", "vgpr", "registers", "sgpr", "lds", "shared")


def _limiter(limits: dict[str, int | None]) -> str:
    return min((v, _PREFER.index(k) if k in _PREFER else 99, k) for k, v in limits.items() if v is not None)[2]


def _floor_div(a: float, b: float) -> int | None:
    return int(a // b) if b else None


def amd(k: KernelCode, lim: ArchLimits, block: int, dynamic_lds: int, notes: list[str]) -> Occupancy | None:
    wave = k.wave_size or lim.get("wave_size") or 64
    simds = lim.get("simds_per_cu")
    cap = lim.get("max_waves_per_simd")
    vfile = lim.get("vgprs_per_simd_per_lane", wave)
    if not (simds and cap and vfile):
        notes.append(f"occupancy: {lim.arch} limits incomplete (SIMDs, waves/SIMD or VGPR file UNKNOWN)")
        return None
    waves_wg = math.ceil(block / wave)
    vgprs = k.vgpr if lim.get("unified_vgpr_agpr") else (k.arch_vgpr or k.vgpr)
    limits: dict[str, int | None] = {}
    if vgprs:
        per_simd = min(cap, vfile // roundup(vgprs, lim.get("vgpr_alloc_granule", wave)))
        limits["vgpr"] = (per_simd * simds) // waves_wg
    sfile, sgran = lim.get("sgprs_per_simd"), lim.get("sgpr_alloc_granule")
    if sfile and k.sgpr:
        limits["sgpr"] = (min(cap, sfile // roundup(k.sgpr, sgran)) * simds) // waves_wg
    lds = (k.lds_bytes or 0) + dynamic_lds
    lds_cu = lim.get("lds_per_cu_bytes")
    if lds and lds_cu:
        limits["lds"] = _floor_div(lds_cu, roundup(lds, lim.get("lds_alloc_granule_bytes")))
    limits["waves"] = (cap * simds) // waves_wg
    max_wg = lim.get("max_workgroups_per_cu")
    if max_wg:
        limits["workgroups"] = int(max_wg)
    wgs = min(v for v in limits.values() if v is not None)
    per_simd_f = wgs * waves_wg / simds
    limiter = _limiter(limits)
    return Occupancy(
        block_size=block,
        dynamic_shared_bytes=dynamic_lds,
        waves_per_simd=int(per_simd_f),
        blocks_per_cu=wgs,
        max_per_unit=int(cap),
        pct=100.0 * per_simd_f / cap,
        limiter=limiter,
        limits={key: None if v is None else (v * waves_wg) // simds for key, v in limits.items()},
        assumptions=notes,
    )


def nvidia_shared(k: KernelCode, lim: ArchLimits | None) -> tuple[int, int]:
    """The kernel's own static shared bytes and the driver's per-block reservation: sm_90 Triton cubins
    count the reservation inside SHARED (``reservation_in_static``), which the driver reports apart."""
    reserved = (lim.get("reserved_shared_per_block_bytes") if lim else None) or 0
    static = k.shared_bytes or 0
    if k.metadata.get("reservation_in_static"):
        static = max(static - reserved, 0)
    return static, reserved


def nvidia(k: KernelCode, lim: ArchLimits, block: int, dynamic_smem: int, notes: list[str]) -> Occupancy | None:
    max_warps, max_blocks = lim.get("max_warps_per_sm"), lim.get("max_blocks_per_sm")
    regs_sm, unit = lim.get("registers_per_sm"), lim.get("register_alloc_unit_per_warp")
    smem_sm = lim.get("max_shared_per_sm_bytes")
    if not (max_warps and max_blocks and regs_sm and smem_sm):
        notes.append(f"occupancy: {lim.arch} limits incomplete (warps, blocks, registers or shared memory UNKNOWN)")
        return None
    warp = lim.get("warp_size") or 32
    warps_blk = math.ceil(block / warp)
    limits: dict[str, int | None] = {"warps": max_warps // warps_blk, "blocks": int(max_blocks)}
    if k.registers:
        per_warp = roundup(k.registers * warp, unit)
        parts = lim.get("register_file_subpartitions") or 1  # each SM sub-partition has its own register file
        limits["registers"] = ((regs_sm // parts) // per_warp * parts) // warps_blk
    static, reserved = nvidia_shared(k, lim)
    smem = static + dynamic_smem + reserved
    if smem:
        limits["shared"] = _floor_div(smem_sm, roundup(smem, lim.get("shared_alloc_unit_bytes")))
    blocks = min(v for v in limits.values() if v is not None)
    limiter = _limiter(limits)
    warps = blocks * warps_blk
    return Occupancy(
        block_size=block,
        dynamic_shared_bytes=dynamic_smem,
        warps_per_sm=warps,
        blocks_per_cu=blocks,
        max_per_unit=int(max_warps),
        pct=100.0 * warps / max_warps,
        limiter=limiter,
        limits={key: None if v is None else v * warps_blk for key, v in limits.items()},
        assumptions=notes,
    )


def occupancy(k: KernelCode, block_size: int | None = None, dynamic_shared: int | None = None) -> Occupancy | None:
    """Occupancy for ``block_size`` threads and ``dynamic_shared`` bytes, falling back to the compiler's
    metadata (Triton's ``num_warps`` and ``shared``; AMD's max flat workgroup size)."""
    lim = arch_limits(k.arch)
    if lim is None:
        return None
    notes: list[str] = []
    warp = k.wave_size or (32 if k.vendor == "nvidia" else 64)
    meta = k.metadata
    if block_size is None and isinstance(meta.get("num_warps"), int):
        block_size = int(meta["num_warps"]) * warp  # type: ignore[call-overload]
        notes.append(f"block size {block_size} = Triton num_warps {meta['num_warps']} x {warp}")
    if block_size is None and k.max_workgroup_size:
        block_size = k.max_workgroup_size
        notes.append(f"block size {block_size} = the kernel's max flat workgroup size (pass --block-size)")
    if block_size is None:
        return None
    if dynamic_shared is None:
        dyn = meta.get("shared", meta.get("shared_bytes"))
        dynamic_shared = int(dyn) if isinstance(dyn, int) else 0
        if isinstance(dyn, int):
            notes.append(f"dynamic shared memory {dynamic_shared} B from Triton's metadata")
    fn = amd if k.vendor == "amd" else nvidia
    return fn(k, lim, block_size, dynamic_shared, notes)
