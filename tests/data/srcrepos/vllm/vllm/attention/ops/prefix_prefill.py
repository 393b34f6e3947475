import triton
import triton.language as tl


@triton.jit
def _fwd_kernel(Q, K, V, Out, BLOCK_M: tl.constexpr):
    cur_batch = tl.program_id(0)


def context_attention_fwd(q, k, v, o):
    _fwd_kernel[(1,)](q, k, v, o, BLOCK_M=64)
