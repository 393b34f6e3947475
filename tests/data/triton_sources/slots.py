"""Slot bookkeeping for a paged cache."""
import triton
import triton.language as tl


@triton.jit
def _online_softmax(acc, q, k):
    s = tl.dot(q, k)
    m = tl.max(s, 1)
    return acc + tl.exp2(s - m[:, None])


@triton.autotune(configs=[], key=["n"])
@triton.jit
def _move_rows_kernel(slot_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(slot_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def _rms_norm_slots_kernel(x_ptr, w_ptr, y_ptr, slot_mapping_ptr, eps, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(y_ptr + tl.arange(0, BLOCK), x * tl.rsqrt(tl.sum(x * x, 0) / BLOCK + eps))


@triton.jit
def _fill_tiles_kernel(q_ptr, k_ptr, o_ptr, BLOCK: tl.constexpr):
    q = tl.load(q_ptr + tl.arange(0, BLOCK))
    k = tl.load(k_ptr + tl.arange(0, BLOCK))
    tl.store(o_ptr + tl.arange(0, BLOCK), _online_softmax(q, q, k))
