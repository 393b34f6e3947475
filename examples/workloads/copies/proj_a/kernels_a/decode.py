"""Project A's copy of a split-KV reduction kernel (stands in for vLLM's, SGLang's and aiter's copies of one
decode kernel: same name, drifted parameters)."""

import torch
import triton
import triton.language as tl


@triton.jit
def _reduce_stage2(Mid, Out, stride_b, N: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(Mid + pid * stride_b + offs, mask=offs < N, other=float("-inf"))
    m = tl.max(x, 0)
    e = tl.exp(x - m)
    s = tl.sum(e, 0)
    tl.store(Out + pid, m + tl.log(s))


def reduce_stage2(mid: torch.Tensor) -> torch.Tensor:
    out = torch.empty(mid.shape[0], device=mid.device, dtype=torch.float32)
    n = mid.shape[1]
    _reduce_stage2[(mid.shape[0],)](mid, out, mid.stride(0), N=n, BLOCK=triton.next_power_of_2(n))
    return out
