import torch
from torch.testing._internal.common_utils import TestCase


class TestBinaryUfuncs(TestCase):
    def test_mul(self):
        self.assertEqual(torch.mul(torch.ones(2), 2), torch.full((2,), 2.0))
