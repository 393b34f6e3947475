"""The thresholds and factors of ``kscope suggest`` (``docs/suggest.md`` says why each)."""

from __future__ import annotations

from kernelscope.model.task import Status

# --- thresholds (docs/suggest.md says why each) ------------------------------------------------------------
MEMORY_WAIT_PCT = 30.0  # of stall samples/cycles waiting on global memory: memory latency is the wait
NARROW_PCT = 50.0  # of global loads narrower than VECTOR_BITS per thread
VECTOR_BITS = 128  # the widest per-thread global load (LDG.E.128, global_load_dwordx4)
NEAR_ROOF_PCT = 80.0  # at this % of its roof a kernel only gets faster by doing less
REREAD = 1.5  # bytes requested by global loads / bytes read from DRAM: each byte loaded this often
BARRIER_PCT = 10.0  # of stall samples/cycles at barriers
SHARED_WAIT_PCT = 20.0  # of stall samples/cycles waiting on LDS/shared memory (or SMEM, MUFU)
LOW_OCCUPANCY_PCT = 50.0  # resident warps/waves of the maximum
TINY_US = 5.0  # average kernel time that launch and ramp-up costs dominate ...
TINY_CALLS = 10  # ... when launched at least this often
IDLE_PCT = 20.0  # GPU idle share of the wall time worth quoting with fusion
HOST_WAIT_PCT = 20.0  # of the wall time the GPU waited for the host: worth an experiment on the host side
UNBOUNDED = 0.5  # the effect a rule scores with when the evidence bounds nothing
TUNE_SHARE = 0.02  # of the GPU time: a kernel worth a tuning run before anything harder
SILENT_SHARE = 0.05  # of the GPU time: a kernel no rule spoke about that is worth saying so
TOP_LINES = 10  # source lines and hotspots read per ncu kernel

MATMUL = frozenset({"gemm", "moe_gemm", "attention", "conv"})
FUSABLE = frozenset({"elementwise", "norm", "copy", "reduce", "softmax", "quant", "position"})
# prebuilt library code: what runs can change (library_choice), its inputs (precision), what surrounds it
# (fusion), not its source
LIBRARY_KINDS = frozenset({"cublas", "cudnn", "tensile", "aten", "cub", "memory", "comm"})
GEMM_LIBRARIES = frozenset({"cublas", "tensile"})  # cuBLAS(Lt), hipBLASLt/rocBLAS: TunableOp picks their algorithm
TUNABLE_SOURCE = frozenset({"triton"})  # a kernel with configs of its own (@triton.autotune): kscope tune searches them
REGISTER_LIMITERS = frozenset({"vgpr", "sgpr", "registers", "lds", "shared"})
BLOCK_LIMITERS = frozenset({"blocks", "workgroups"})
WIDE_DTYPES = {"fp32": 4, "fp64": 8}

NCU_MEMORY = ("long_scoreboard", "lg_throttle")
NCU_BARRIER = ("barrier", "membar")
NCU_SHARED = ("short_scoreboard", "mio_throttle")
ATT_MEMORY = ("vmem_wait",)
ATT_BARRIER = ("barrier",)
ATT_SHARED = ("lds_smem_wait",)

# A ledger record of the same lever on the same kernel multiplies the score by this. improved (it worked),
# unstable (noise decided), needs_baseline (the baseline broke) and violation (nothing ran) say nothing
# against the lever; a crash or a hang may be the attempt's fault rather than the lever's, hence weaker.
DEMOTION: dict[Status, float] = {"regressed": 0.4, "neutral": 0.6, "failed": 0.7, "timeout": 0.8}
