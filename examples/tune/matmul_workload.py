"""A workload that uses the autotuned matmul (examples/tune/matmul.py) at two shapes, as a model would:
``kscope profile --step-fn none --out DIR -- python examples/tune/matmul_workload.py`` records its Triton
launches (the launch ledger), and ``kscope tune examples/tune/matmul.py:matmul_kernel --from-trace DIR``
tunes the shapes it really ran. ``--configs N`` keeps the first N autotune configs (a quicker autotune)."""

import argparse

import matmul
import torch

p = argparse.ArgumentParser()
p.add_argument("--configs", type=int, default=8)
p.add_argument("--calls", type=int, default=5)
a = p.parse_args()
matmul.matmul_kernel.configs = matmul.matmul_kernel.configs[: a.configs]
for shape in ({"M": 4096, "N": 4096, "K": 4096}, {"M": 16, "N": 8192, "K": 4096}):
    spec = matmul.launch(shape)
    for _ in range(a.calls):
        matmul.matmul_kernel[spec["grid"]](*spec["args"])
torch.cuda.synchronize()
