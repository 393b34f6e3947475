import pytest
import torch

from vllm import _custom_ops as ops


@pytest.mark.parametrize("num_tokens", [7, 83])
def test_rms_norm(num_tokens: int) -> None:
    x = torch.randn(num_tokens, 1024)
    out = torch.empty_like(x)
    ops.rms_norm(out, x, torch.ones(1024), 1e-6)


def test_fused_add_rms_norm() -> None:
    ops.fused_add_rms_norm(None, None, None, 1e-6)
