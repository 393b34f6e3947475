"""The ISA fit view: one kernel's resources against its architecture's limits, its instruction mix,
and the likely limiter with what is left on the table. Pure over a ``KernelCode`` with occupancy;
``compare`` lines up the same kernels of several code objects (one column per object) from those views."""

from __future__ import annotations

import math
from collections.abc import Sequence

from kernelscope.analyses.occupancy import ArchLimits, arch_limits, nvidia_shared
from kernelscope.model.codeobj import (
    CodeObject,
    FitColumn,
    FitComparison,
    FitInput,
    Gauge,
    KernelCode,
    KernelComparison,
    KernelFit,
)


def _next_level_amd(k: KernelCode, lim: ArchLimits) -> str | None:
    occ = k.occupancy
    if occ is None or occ.waves_per_simd is None or occ.limiter != "vgpr":
        return None
    file = lim.get("vgprs_per_simd_per_lane", k.wave_size)
    gran = lim.get("vgpr_alloc_granule", k.wave_size) or 1
    target = occ.waves_per_simd + 1
    if not file or target > occ.max_per_unit:
        return None
    budget = (file // target) // gran * gran
    return f"{k.vgpr} VGPRs allow {occ.waves_per_simd} wave(s)/SIMD; at most {budget} would allow {target}"


def _next_level_nvidia(k: KernelCode, lim: ArchLimits) -> str | None:
    occ = k.occupancy
    if occ is None or occ.limiter != "registers" or not k.registers:
        return None
    regs_sm, unit = lim.get("registers_per_sm"), lim.get("register_alloc_unit_per_warp") or 1
    parts = lim.get("register_file_subpartitions") or 1
    warps_blk = math.ceil(occ.block_size / 32)
    want = (occ.blocks_per_cu + 1) * warps_blk
    per_part = math.ceil(want / parts)
    per_warp = ((regs_sm // parts) // per_part) // unit * unit
    regs = per_warp // 32
    now, more = occ.blocks_per_cu, occ.blocks_per_cu + 1
    return f"{k.registers} registers/thread allow {now} block(s)/SM; at most {regs} would allow {more}"


def fit(k: KernelCode) -> KernelFit:
    lim = arch_limits(k.arch)
    gauges: list[Gauge] = []
    readout: list[str] = []
    get = lim.get if lim else (lambda key: None)
    if k.vendor == "amd":
        gauges.append(
            Gauge(
                label="VGPR (unified)" if get("unified_vgpr_agpr") else "VGPR",
                used=k.vgpr or 0,
                limit=get("max_vgprs_per_wave"),
            )
        )
        if k.agpr is not None:
            gauges.append(Gauge(label="  of which AGPR", used=k.agpr, limit=get("max_vgprs_per_wave")))
        # .sgpr_count counts VCC (and on GFX9 flat scratch and XNACK) too: against 102 addressable, 106 read as over
        limit = get("max_sgprs_counted_per_wave") or get("max_sgprs_per_wave")
        gauges.append(Gauge(label="SGPR", used=k.sgpr or 0, limit=limit))
        lds = (k.lds_bytes or 0) + (k.occupancy.dynamic_shared_bytes if k.occupancy else 0)
        gauges.append(Gauge(label="LDS / workgroup", used=lds, limit=get("max_lds_per_workgroup_bytes"), unit="B"))
        spills = (k.vgpr_spill or 0) + (k.sgpr_spill or 0)
        if spills:
            mem = k.mix.get("scratch_load", 0) + k.mix.get("scratch_store", 0)
            readout.append(
                f"spills: {k.vgpr_spill or 0} VGPR + {k.sgpr_spill or 0} SGPR, {k.scratch_bytes or 0} B scratch per "
                f"work-item, {mem} scratch instructions: registers are the first thing to cut"
            )
        nxt = _next_level_amd(k, lim) if lim else None
    else:
        gauges.append(Gauge(label="registers/thread", used=k.registers or 0, limit=get("max_registers_per_thread")))
        smem = (k.shared_bytes or 0) + (k.occupancy.dynamic_shared_bytes if k.occupancy else 0)
        gauges.append(Gauge(label="shared / block", used=smem, limit=get("max_shared_per_block_bytes"), unit="B"))
        if k.local_bytes or k.stack_bytes:
            readout.append(
                f"local memory: {k.local_bytes or 0} B local, {k.stack_bytes or 0} B stack per thread "
                f"({k.mix.get('ldl_spill', 0)} LDL / {k.mix.get('stl_spill', 0)} STL): spills or local arrays"
            )
        nxt = _next_level_nvidia(k, lim) if lim else None
    occ = k.occupancy
    if occ is not None:
        used = occ.waves_per_simd if occ.waves_per_simd is not None else occ.warps_per_sm
        unit = "waves/SIMD" if occ.waves_per_simd is not None else "warps/SM"
        gauges.append(Gauge(label=f"occupancy ({unit})", used=float(used or 0), limit=float(occ.max_per_unit)))
        readout.append(f"occupancy {occ.pct:.0f}% ({used} {unit}, block {occ.block_size}), limited by {occ.limiter}")
    if nxt:
        readout.append(nxt)
    total = sum(v for c, v in k.mix.items() if "." not in c)
    mix = (
        {c: 100.0 * v / total for c, v in sorted(k.mix.items(), key=lambda cv: -cv[1]) if "." not in c} if total else {}
    )
    matrix = mix.get("matrix", 0.0) if total else None
    if total and not matrix and (k.instructions or 0) > 0:
        readout.append("no matrix-unit instructions: a GEMM-like kernel here runs on the vector units")
    if not total:
        readout.append("no instruction mix (no disassembly for this architecture)")
    return KernelFit(
        name=k.name,
        arch=k.arch,
        vendor=k.vendor,
        gauges=gauges,
        mix=mix,
        matrix_share=matrix,
        limiter=occ.limiter if occ else None,
        readout=readout,
    )


def _resources(k: KernelCode) -> dict[str, int]:
    dynamic = k.occupancy.dynamic_shared_bytes if k.occupancy else None
    static, reserved = (k.lds_bytes, None) if k.vendor == "amd" else nvidia_shared(k, arch_limits(k.arch))
    fields = {
        "vgpr_spill": k.vgpr_spill,
        "sgpr_spill": k.sgpr_spill,
        "static_shared": static,  # the kernel's own, as the driver reports it
        "reserved_shared": reserved or None,  # the driver's per block (NVIDIA sm_80+)
        "dynamic_shared": dynamic,
        "scratch_bytes": k.scratch_bytes,
        "local_bytes": k.local_bytes,
        "stack_bytes": k.stack_bytes,
    }
    return {key: v for key, v in fields.items() if v is not None}


def _column(k: KernelCode) -> FitColumn:
    return FitColumn(fit=fit(k), occupancy=k.occupancy, resources=_resources(k))


def compare(objs: Sequence[CodeObject]) -> FitComparison:
    """One comparison per kernel name (Triton names a kernel alike on every target), in first-seen order;
    a kernel missing from an object gets ``None`` in that column."""
    by_obj = [{k.name: k for k in reversed(o.kernels)} for o in objs]  # reversed: the first of a name wins
    names = list(dict.fromkeys(k.name for o in objs for k in o.kernels))
    return FitComparison(
        inputs=[FitInput(path=o.path, arch=o.arch, vendor=o.vendor, notes=list(o.notes)) for o in objs],
        kernels=[
            KernelComparison(name=n, columns=[_column(ks[n]) if n in ks else None for ks in by_obj]) for n in names
        ],
    )
