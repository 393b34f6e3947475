import triton
import triton.language as tl


@triton.jit
def _fwd_kernel(Q, K, V, Out, BLOCK_M: tl.constexpr):
    pid = tl.program_id(0)
