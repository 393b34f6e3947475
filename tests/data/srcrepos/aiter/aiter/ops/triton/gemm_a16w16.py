from aiter.ops.triton._triton_kernels.gemm_a16w16 import _gemm_a16_w16_kernel


def gemm_a16w16(x, w, dtype=None, y=None):
    _gemm_a16_w16_kernel[(1,)](x, w, y, 1, 1, 1)
    return y
