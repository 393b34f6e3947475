"""The rules of ``kscope suggest``: one lever each, a condition over one kernel's facts."""

from __future__ import annotations

from kernelscope.analyses.ncu import DRAM_BYTES
from kernelscope.analyses.suggest.evidence import Facts, Match, Rule, att_kernel, att_name
from kernelscope.analyses.suggest.facts import (
    headroom_effect,
    hot_step,
    is_editable,
    is_matmul,
    make_match,
    narrow_loads,
    ncu_achieved,
    ncu_occupancy,
    roof_bound,
    stall_quote,
    stalled_effect,
    time_effect,
    vgpr_limited,
)
from kernelscope.analyses.suggest.thresholds import (
    ATT_BARRIER,
    ATT_MEMORY,
    ATT_SHARED,
    BARRIER_PCT,
    BLOCK_LIMITERS,
    FUSABLE,
    GEMM_LIBRARIES,
    IDLE_PCT,
    LOW_OCCUPANCY_PCT,
    MEMORY_WAIT_PCT,
    NARROW_PCT,
    NCU_BARRIER,
    NCU_MEMORY,
    NCU_SHARED,
    NEAR_ROOF_PCT,
    REGISTER_LIMITERS,
    REREAD,
    SHARED_WAIT_PCT,
    TINY_CALLS,
    TINY_US,
    TUNABLE_SOURCE,
    TUNE_SHARE,
    VECTOR_BITS,
    WIDE_DTYPES,
)
from kernelscope.model.codeobj import KernelCode
from kernelscope.model.source import SourceLocation
from kernelscope.model.suggest import (
    Risk,
    Step,
)

# --- the rules ------------------------------------------------------------------------------------------


def _memory_access(f: Facts) -> Match | None:
    narrow = narrow_loads(f)
    narrow = narrow if narrow is not None and narrow.pct >= NARROW_PCT else None
    if not is_editable(f) or (is_matmul(f) and narrow is None):  # a GEMM waiting on memory: pipelining
        return None
    bound = roof_bound(f)
    if bound is not None and (bound.kind != "memory" or bound.pct >= NEAR_ROOF_PCT):
        return None
    waits = stall_quote(f, NCU_MEMORY, ATT_MEMORY)
    waits = waits if waits is not None and waits.pct >= MEMORY_WAIT_PCT else None
    if waits is None and narrow is None:
        return None
    steps = []
    if bound is not None:
        steps.append(Step(
            evidence=bound.text,
            inference=f"DRAM is {100 - bound.pct:.0f}% idle: too few bytes in flight, not bandwidth, limit the kernel",
            action="raise the bytes in flight per warp: wider loads, more independent loads before the first use",
        ))  # fmt: skip
    if waits is not None:
        steps.append(Step(
            evidence=waits.text,
            inference="warps spend their time waiting for global-memory results",
            action="issue loads earlier and several at once (unroll, prefetch the next chunk): overlap their latency",
        ))  # fmt: skip
    hot, where = hot_step(f, NCU_MEMORY, ATT_MEMORY, "rework the loads feeding this line first")
    steps += hot
    if narrow is not None:
        steps.append(Step(
            evidence=narrow.text,
            inference=f"each load moves less than {VECTOR_BITS // 8} B per thread: more instructions per byte moved",
            action=f"load {VECTOR_BITS} bits per thread: contiguous elements per thread and provably aligned, "
            "contiguous pointers (Triton tl.multiple_of / tl.max_contiguous, CUDA vector types)",
        ))  # fmt: skip
    return make_match(steps, headroom_effect(bound), time_effect(waits, "waiting on memory"), where=where)


def _lines_of(sites: list[SourceLocation]) -> str:
    """``a.py:44, 48, 52; b.py:3``: source lines grouped by file."""
    by_file: dict[str, list[str]] = {}
    for site in sites:
        by_file.setdefault(site.file, []).append(str(site.line))
    return "; ".join(f"{file}:{', '.join(lines)}" for file, lines in by_file.items())


def _algorithm(f: Facts) -> Match | None:
    s, launch = f.sass, f.launch
    if not is_editable(f) or is_matmul(f) or s is None or launch is None or len(s.sites) < 2:
        return None
    dram_read = (launch.metrics or {}).get(DRAM_BYTES[0])
    if not dram_read or s.requested_bytes / dram_read < REREAD:
        return None
    ratio = s.requested_bytes / dram_read
    sites = _lines_of(s.sites)
    steps = [Step(
        evidence=f"ncu: global loads at {len(s.sites)} source lines ({sites}) request "
        f"{s.requested_bytes / 1e6:,.1f} MB; DRAM delivered {dram_read / 1e6:,.1f} MB of reads ({DRAM_BYTES[0]})",
        inference=f"each byte read from DRAM is loaded {ratio:.2f} times: the kernel passes over the same data "
        "several times, the later passes served by cache",
        action="restructure into one pass that keeps the data in registers or shared memory between the phases "
        "(e.g. online softmax: running max and sum in one sweep)",
    )]  # fmt: skip
    waits = stall_quote(f, NCU_MEMORY, ATT_MEMORY)
    hot, where = hot_step(f, NCU_MEMORY, ATT_MEMORY, "this load is one of the repeated passes: fold it into the first")
    steps += hot if waits is not None and waits.pct >= MEMORY_WAIT_PCT else []
    basis = f"1 - 1/{ratio:.2f}: the repeated loads, if time scales with load traffic"
    return make_match(steps, (1 - 1 / ratio, basis), where=where)


def _pipelining(f: Facts) -> Match | None:
    if not is_editable(f) or not is_matmul(f):
        return None
    bound = roof_bound(f)
    waits = stall_quote(f, NCU_MEMORY, ATT_MEMORY)
    if waits is None or waits.pct < MEMORY_WAIT_PCT or (bound is not None and bound.pct >= NEAR_ROOF_PCT):
        return None
    steps = [Step(
        evidence=waits.text,
        inference="a matrix kernel's waves wait for tiles from memory instead of overlapping the loads with math",
        action="prefetch the next tile while computing this one: more pipeline stages (num_stages), async copies "
        "(cp.async/TMA on NVIDIA, buffer loads straight to LDS on AMD), double-buffered LDS",
    )]  # fmt: skip
    hot, where = hot_step(f, NCU_MEMORY, ATT_MEMORY, "move the loads this wait covers one iteration earlier")
    steps += hot
    steps += [Step(evidence=bound.text, inference="below the roof: the pipeline leaves it idle",
                   action="check the stage count against the LDS/shared memory it costs")] if bound else []  # fmt: skip
    return make_match(steps, headroom_effect(bound), time_effect(waits, "waiting on memory"), where=where)


def _synchronization(f: Facts) -> Match | None:
    waits = stall_quote(f, NCU_BARRIER, ATT_BARRIER)
    if not is_editable(f) or waits is None or waits.pct < BARRIER_PCT:
        return None
    if is_matmul(f):  # a tiled kernel's barriers hand shared-memory tiles from one stage to the next
        inference = "warps wait at the barriers that hand shared-memory tiles between pipeline stages"
        action = ("cheaper hand-offs: more stages with async copies and per-stage barriers (cp.async/TMA + mbarrier, "
                  "direct-to-LDS loads), or producer/consumer warp specialization")  # fmt: skip
    else:
        inference = "warps wait at block-wide barriers for the slowest warp of their block (cross-warp reductions)"
        action = ("fewer barriers: reduce within a warp first (shuffles), fewer warps per reduction, combine "
                  "reductions that share a barrier (max and sum together)")  # fmt: skip
    steps = [Step(evidence=waits.text, inference=inference, action=action)]
    hot, where = hot_step(f, NCU_BARRIER, ATT_BARRIER, "this barrier (or the exchange behind it) is the first to cut")
    return make_match(steps + hot, time_effect(waits, "waiting at barriers"), where=where)


def _data_reuse(f: Facts) -> Match | None:
    waits = stall_quote(f, NCU_SHARED, ATT_SHARED)
    if not is_editable(f) or waits is None or waits.pct < SHARED_WAIT_PCT:
        return None
    what = "LDS or scalar-memory (lgkmcnt)" if f.att is not None else "shared-memory or special-function (MUFU)"
    steps = [Step(
        evidence=waits.text,
        inference=f"waves wait on {what} results: round trips through on-chip memory, or bank conflicts",
        action="keep reused values in registers, widen LDS/shared accesses (128-bit), pad or swizzle the layout "
        "against bank conflicts, hoist scalar loads out of the loop",
    )]  # fmt: skip
    hot, where = hot_step(f, NCU_SHARED, ATT_SHARED, "start with the accesses this wait covers")
    return make_match(steps + hot, time_effect(waits, "waiting on on-chip memory"), where=where)


def _spills(k: KernelCode) -> str | None:
    """Registers spilled to memory, as the code object states them (AMD metadata; NVIDIA local/stack
    bytes and the LDL/STL instructions in the mix)."""
    if k.vendor == "amd":
        n = (k.vgpr_spill or 0) + (k.sgpr_spill or 0)
        return f"{n} registers spilled to {k.scratch_bytes or 0} B of scratch per work-item" if n else None
    ldl, stl = k.mix.get("ldl_spill", 0), k.mix.get("stl_spill", 0)
    if not (k.local_bytes or k.stack_bytes or ldl or stl):
        return None
    return f"{k.local_bytes or 0} B local, {k.stack_bytes or 0} B stack per thread, {ldl} LDL / {stl} STL instructions"


def _occupancy(f: Facts) -> Match | None:
    bound = roof_bound(f)
    if not is_editable(f) or (bound is not None and bound.pct >= NEAR_ROOF_PCT):
        return None
    steps = []
    k = f.code
    o = k.occupancy if k is not None else None
    if k is not None and o is not None and o.limiter in REGISTER_LIMITERS and o.pct < LOW_OCCUPANCY_PCT:
        steps.append(Step(
            evidence=f"isa {k.arch}: {o.per_unit} ({o.pct:.0f}% of {o.max_per_unit}) at {o.block_size} threads per "
            f"block, limited by {o.limiter}",
            inference="few resident warps/waves: little to switch to while one waits",
            action=f"cut {o.limiter} per thread or block: fewer live values, smaller tiles, a launch bound "
            "(__launch_bounds__ / maxnreg, amdgpu waves-per-eu)",
        ))  # fmt: skip
    spill = _spills(k) if k is not None else None
    if k is not None and spill is not None:
        steps.append(Step(
            evidence=f"isa {k.arch}: {spill}",
            inference="values live in memory instead of registers: extra traffic, often in the inner loop",
            action="cut register pressure until the spills are gone (smaller tiles, fewer live values)",
        ))  # fmt: skip
    occ = ncu_occupancy(f)
    h = f.ncu.headline if f.ncu else None
    achieved = h.achieved_occupancy_pct if h else None
    if occ is not None and occ.limiter in REGISTER_LIMITERS and achieved is not None and achieved < LOW_OCCUPANCY_PCT:
        steps.append(Step(
            evidence=f"ncu: {occ.per_unit} at most with {f.launch.registers if f.launch else '?'} registers/thread "
            f"and {occ.block_size}-thread blocks, limited by {occ.limiter}{ncu_achieved(f)}",
            inference="the register or shared-memory budget per block caps the resident warps",
            action=f"cut {occ.limiter} per block so more blocks fit on an SM",
        ))  # fmt: skip
    a = f.att
    main = att_kernel(a) if a is not None else None
    regs = main.registers if main is not None else None
    if a is not None and regs is not None and vgpr_limited(a, regs.waves_per_simd):
        steps.append(Step(
            evidence=f"{att_name(a)}: at most {a.measured_waves_per_simd} wave(s) per SIMD resident; its "
            f"{regs.vgpr_alloc} VGPRs allow {regs.waves_per_simd} of {regs.max_waves_per_simd}",
            inference="the VGPR allocation caps the waves per SIMD",
            action="fewer VGPRs per wave: smaller tiles, fewer live values, a waves-per-eu bound",
        ))  # fmt: skip
    if not steps:
        return None
    return make_match(steps, headroom_effect(bound), stalled_effect(f))


def _launch_config(f: Facts) -> Match | None:
    if not is_editable(f):
        return None
    steps = []
    k = f.code
    o = k.occupancy if k is not None else None
    if k is not None and o is not None and o.limiter in BLOCK_LIMITERS and o.pct < 100:
        steps.append(Step(
            evidence=f"isa {k.arch}: {o.block_size}-thread blocks reach the limit of {o.blocks_per_cu} {o.limiter} "
            f"per unit first: {o.per_unit} ({o.pct:.0f}% of {o.max_per_unit})",
            inference=f"blocks this small leave {100 - o.pct:.0f}% of the warp slots empty",
            action="more threads per block (num_warps, blockDim) sharing the block's work, or more work per block",
        ))  # fmt: skip
    occ = ncu_occupancy(f)
    if occ is not None and occ.limiter in BLOCK_LIMITERS and occ.pct < 100:
        steps.append(Step(
            evidence=f"ncu: {occ.block_size}-thread blocks; {f.device.arch if f.device else ''} holds at most "
            f"{occ.blocks_per_cu} blocks per SM: {occ.per_unit} of {occ.max_per_unit} ({occ.pct:.0f}%)"
            + ncu_achieved(f),
            inference=f"blocks this small hit the per-SM block limit first and leave {100 - occ.pct:.0f}% of the warp "
            "slots empty",
            action="more warps per block (num_warps / blockDim) splitting the same work, or several rows per block",
        ))  # fmt: skip
    if not steps:
        return None
    return make_match(steps, headroom_effect(roof_bound(f)), stalled_effect(f))


def _tile_shape(f: Facts) -> Match | None:
    launch, device = f.launch, f.device
    if not is_editable(f) or launch is None or launch.grid_blocks is None or device is None:
        return None
    blocks, units = launch.grid_blocks.total, device.compute_units
    if not units or blocks >= units:
        return None
    steps = [Step(
        evidence=f"ncu: a grid of {blocks:,} blocks on {units} SMs",
        inference=f"{units - blocks} SMs get no block at all",
        action="smaller tiles (more blocks), split the reduction dimension (split-K), or a persistent schedule",
    )]  # fmt: skip
    return make_match(steps, (1 - blocks / units, f"{units - blocks} of {units} SMs idle"))


def _instruction_selection(f: Facts) -> Match | None:
    if not is_editable(f) or not is_matmul(f):
        return None
    bound = roof_bound(f)
    if bound is not None and bound.kind == "memory":
        return None
    steps = []
    k, s = f.code, f.sass
    if k is not None and k.instructions and not k.mix.get("matrix"):
        steps.append(Step(
            evidence=f"isa {k.arch}: none of the {k.instructions:,} instructions use the matrix units",
            inference=f"a {f.identity.category} kernel computing on the vector units",
            action="route the inner product through the matrix units (tl.dot, MFMA/WMMA, WGMMA/MMA) with a "
            "supported dtype and tiles of at least 16 along each dimension",
        ))  # fmt: skip
    if s is not None and s.executed and not s.matrix:
        steps.append(Step(
            evidence=f"ncu: none of the {s.executed:,} executed warp instructions are tensor-core MMAs",
            inference=f"a {f.identity.category} kernel computing on the FP32/FP16 pipes",
            action="use tensor-core MMAs (tl.dot, WGMMA/MMA) with a supported dtype and tile sizes",
        ))  # fmt: skip
    if not steps:
        return None
    return make_match(steps, headroom_effect(bound) if bound is not None and bound.kind == "compute" else None)


def _fusion(f: Facts) -> Match | None:
    row, bound = f.row, roof_bound(f)
    if row is None or f.identity.category not in FUSABLE:
        return None
    steps = []
    if bound is not None and bound.kind == "memory" and bound.pct >= NEAR_ROOF_PCT:
        steps.append(Step(
            evidence=bound.text,
            inference="at the memory roof already: this kernel only gets faster by moving fewer bytes",
            action="fuse it into its producer or consumer so its input or output never goes through DRAM "
            "(torch.compile, a fused Triton kernel, a GEMM epilogue)",
        ))  # fmt: skip
    if row.avg_us < TINY_US and row.calls >= TINY_CALLS:
        steps.append(Step(
            evidence=f"gap: {row.calls:,} calls averaging {row.avg_us:.1f} µs",
            inference="launches this short are dominated by launch and ramp-up cost",
            action="fuse it with its neighbours, or capture the sequence in a CUDA/HIP graph",
        ))  # fmt: skip
    if not steps:
        return None
    t = f.totals
    if t is not None and t.wall_time_us and t.idle_time_us and 100 * t.idle_time_us / t.wall_time_us >= IDLE_PCT:
        steps.append(Step(
            evidence=f"gap: the GPU idles {100 * t.idle_time_us / t.wall_time_us:.0f}% of the "
            f"{t.wall_time_us:,.0f} µs wall time",
            inference="gaps between launches are a visible part of the run",
            action="fewer, larger kernels also shrink those gaps",
        ))  # fmt: skip
    return make_match(steps, (1.0, "its whole time, if fusion removes all of its DRAM traffic and its launch"))


def _precision(f: Facts) -> Match | None:
    bound = roof_bound(f)
    if bound is None or bound.kind != "memory" or f.data_dtype is None or f.data_dtype[0] not in WIDE_DTYPES:
        return None
    dtype, where = f.data_dtype
    size = WIDE_DTYPES[dtype]
    steps = [
        Step(evidence=bound.text, inference="a memory-bound kernel's time scales with its bytes",
             action="move fewer bytes per element"),
        Step(evidence=f"{where}: {dtype} data ({size} B per element)",
             inference=f"2-byte storage would move {100 * (1 - 2 / size):.0f}% fewer bytes",
             action="store in bf16/fp16 (or fp8) where accuracy allows, computing in fp32"),
    ]  # fmt: skip
    return make_match(steps, (1 - 2 / size, f"{100 * (1 - 2 / size):.0f}% fewer bytes at 2 B per element"))


def _library_choice(f: Facts) -> Match | None:
    bound = roof_bound(f)
    if is_editable(f) or bound is None or bound.pct >= NEAR_ROOF_PCT:
        return None
    i = f.identity
    steps = [
        Step(evidence=bound.text, inference=f"{100 - bound.pct:.0f}% below its roof",
             action="compare other implementations of the op on the same shapes"),
        Step(evidence=f"identity: {i.kind} {i.category} kernel {i.function}",
             inference="prebuilt library code: its source is not yours to change",
             action="try another algorithm of the library (cuBLASLt/hipBLASLt autotuning), torch.compile "
             "(mode='max-autotune'), or Triton/CUTLASS/CK kernels"),
    ]  # fmt: skip
    return make_match(steps, headroom_effect(bound))


def _share_step(f: Facts) -> Step | None:
    """The kernel's share of the GPU time when it is worth a tuning run, else None."""
    if f.row is None or f.share is None or f.share < TUNE_SHARE:
        return None
    return Step(
        evidence=f"gap: {100 * f.share:.1f}% of the GPU time, {f.row.calls:,} calls averaging {f.row.avg_us:.1f} µs",
        inference="enough time that a tuning run (minutes, no code change) pays before anything harder",
        action="tune first, then judge what is left against the roof",
    )


def _library_tuning(f: Facts) -> Match | None:
    share = _share_step(f)
    if share is None or f.identity.kind not in GEMM_LIBRARIES or not is_matmul(f) or roof_bound(f) is not None:
        return None
    steps = [share, Step(
        evidence=f"identity: {f.identity.kind} {f.identity.category} kernel {f.identity.function}; no roofline, "
        "counters or code object to say how far from its roof it runs",
        inference="the library chose this algorithm by heuristics for these shapes; another of its algorithms "
        "may be faster, and which is a measurement",
        action="time every algorithm the library has for each GEMM shape and keep the fastest: "
        "`kscope tune --tunableop -- CMD` (PyTorch TunableOp), or hipBLASLt/cuBLASLt offline tuning; a trace "
        "recorded with shapes (or --ncu) then places it on the roofline",
    )]  # fmt: skip
    return make_match(steps, None)


def _config_tuning(f: Facts) -> Match | None:
    share = _share_step(f)
    if share is None or f.identity.kind not in TUNABLE_SOURCE:
        return None
    steps = [share, Step(
        evidence=f"identity: a {f.identity.kind} kernel ({f.identity.function})",
        inference="its block sizes, warps and stages are launch-time choices: the best differ by GPU and shape",
        action="search its configs on the workload's shapes before editing it: `kscope tune FILE.py:KERNEL "
        "--launch FILE.py:LAUNCH --from-trace PROFILE` (every GPU of the host, results kept)",
    )]  # fmt: skip
    return make_match(steps, None)


RULES: tuple[Rule, ...] = (
    Rule("memory-latency", "memory_access", 0.9,
         Risk(level="low", why="changes how data is loaded, not what is computed; check masked tails and alignment"),
         f"memory-bound below {NEAR_ROOF_PCT:.0f}% of the roof (or bound unknown), with >= {MEMORY_WAIT_PCT:.0f}% of "
         f"stalls on global memory or >= {NARROW_PCT:.0f}% of global loads narrower than {VECTOR_BITS} bits",
         _memory_access),
    Rule("repeated-passes", "algorithm", 0.8,
         Risk(level="medium", why="a new decomposition: numerics (e.g. online rescaling) and edge cases change"),
         f"not a matrix kernel; global loads at >= 2 source lines request >= {REREAD}x the bytes DRAM delivered",
         _algorithm),
    Rule("matrix-memory-waits", "pipelining", 0.7,
         Risk(level="medium", why="more stages hold more registers and LDS/shared memory: occupancy can drop"),
         f"a matrix kernel (gemm, attention, conv) with >= {MEMORY_WAIT_PCT:.0f}% of stalls on global memory, "
         f"below {NEAR_ROOF_PCT:.0f}% of its roof", _pipelining),
    Rule("barrier-stalls", "synchronization", 0.7,
         Risk(level="medium", why="a missing barrier is a race: the correctness gate must cover varied shapes"),
         f">= {BARRIER_PCT:.0f}% of stall samples/cycles at barriers", _synchronization),
    Rule("on-chip-memory-waits", "data_reuse", 0.6,
         Risk(level="medium", why="layout changes (padding, swizzles) cost LDS/shared memory and index math"),
         f">= {SHARED_WAIT_PCT:.0f}% of stalls on LDS/shared memory (ncu short scoreboard + MIO throttle, ATT "
         "lds_smem_wait)", _data_reuse),
    Rule("register-limited", "occupancy", 0.6,
         Risk(level="medium", why="fewer registers can mean smaller tiles (less reuse) or new spills"),
         f"below {NEAR_ROOF_PCT:.0f}% of the roof; occupancy under {LOW_OCCUPANCY_PCT:.0f}% limited by registers "
         "or LDS/shared memory, or register spills", _occupancy),
    Rule("small-blocks", "launch_config", 0.6,
         Risk(level="low", why="launch parameters only; the work per block must still be split correctly"),
         "the per-SM/CU block limit, not registers or memory, caps occupancy below 100%", _launch_config),
    Rule("small-grid", "tile_shape", 0.6,
         Risk(level="medium", why="smaller tiles trade reuse for parallelism and need re-tuning per shape"),
         "fewer blocks in the grid than SMs", _tile_shape),
    Rule("no-matrix-units", "instruction_selection", 0.8,
         Risk(level="medium", why="matrix units need supported dtypes and tile sizes; accumulation order changes"),
         "a gemm/attention/conv kernel, not memory-bound, without matrix-unit instructions", _instruction_selection),
    Rule("bandwidth-bound-or-tiny", "fusion", 0.5,
         Risk(level="medium", why="changes kernel boundaries; the fused kernel holds more live values"),
         f"an elementwise/norm/copy/reduce/softmax kernel in the trace at >= {NEAR_ROOF_PCT:.0f}% of the memory roof, "
         f"or averaging < {TINY_US:.0f} µs over >= {TINY_CALLS} calls", _fusion),
    Rule("wide-data", "precision", 0.3,
         Risk(level="high", why="changes results: needs an accuracy tolerance agreed with the model's owner"),
         "memory-bound on fp32/fp64 data", _precision),
    Rule("untuned-library-gemm", "library_choice", 0.3,
         Risk(level="low", why="the library's own algorithms for the same GEMM; split-K ones change summation order"),
         f"a cuBLAS/hipBLASLt GEMM with >= {100 * TUNE_SHARE:.0f}% of the GPU time and nothing to place it on a roof",
         _library_tuning),
    Rule("untuned-configs", "tile_shape", 0.3,
         Risk(level="low", why="configs change the decomposition only; the result must match within tolerance"),
         f"a Triton kernel with >= {100 * TUNE_SHARE:.0f}% of the GPU time", _config_tuning),
    Rule("library-below-roof", "library_choice", 0.4,
         Risk(level="low", why="the same math from another implementation; summation order may differ"),
         f"a library kernel (cuBLAS, cuDNN, Tensile, aten, ...) below {NEAR_ROOF_PCT:.0f}% of its roof",
         _library_choice),
)  # fmt: skip
