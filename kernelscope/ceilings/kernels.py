"""kscope's own Triton streaming kernels for the bandwidth ceilings (imported only on a GPU)."""

import triton
import triton.language as tl


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    data = tl.load(src + offs, mask=mask, eviction_policy="evict_first")
    tl.store(dst + offs, data, mask=mask, cache_modifier=".cs")


@triton.jit
def read_kernel(src, out, n, BLOCK: tl.constexpr, PER: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * BLOCK * PER
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in tl.static_range(PER):
        offs = base + i * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(src + offs, mask=offs < n, eviction_policy="evict_first").to(tl.float32)
    tl.store(out + tl.program_id(0), tl.sum(acc, 0))
