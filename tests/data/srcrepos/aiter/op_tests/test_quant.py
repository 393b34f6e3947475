import aiter
from aiter.test_common import checkAllclose


def test_dynamic_per_group_scaled_quant():
    aiter.dynamic_per_group_scaled_quant(None, None, None)
