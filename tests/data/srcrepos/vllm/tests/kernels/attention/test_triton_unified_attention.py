import pytest

from vllm.attention.ops.triton_unified_attention import unified_attention


class TestUnifiedAttention:
    @pytest.mark.parametrize("block_size", [16, 32])
    def test_varlen_with_paged_kv(self, block_size: int) -> None:
        unified_attention(None, None, None, None)
