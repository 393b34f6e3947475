import pytest
import torch

from aiter.ops.triton.gemm_a16w16 import gemm_a16w16


def generate_gemm_a16w16_inputs(M, N, K):
    return torch.randn(M, K), torch.randn(N, K)


@pytest.mark.parametrize("M, N, K", [(1, 1280, 8192)])
def test_gemm_a16_w16(M: int, N: int, K: int) -> None:
    x, w = generate_gemm_a16w16_inputs(M, N, K)
    gemm_a16w16(x, w)
