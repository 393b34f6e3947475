"""A small bf16 MLP forward (three Linear GEMM shapes), for ``kscope tune --tunableop -- python
examples/tune/gemm_workload.py``: TunableOp records its GEMMs, kscope tunes them and A/Bs this program."""

import time

import torch

torch.manual_seed(0)
x = torch.randn(512, 4096, device="cuda", dtype=torch.bfloat16)
up = torch.nn.Linear(4096, 11008, bias=False, device="cuda", dtype=torch.bfloat16)
down = torch.nn.Linear(11008, 4096, bias=False, device="cuda", dtype=torch.bfloat16)
qkv = torch.nn.Linear(4096, 3 * 4096, bias=False, device="cuda", dtype=torch.bfloat16)
for _ in range(3):  # warm-up
    down(torch.relu(up(x))) + qkv(x)[:, :4096]
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(50):
    y = down(torch.relu(up(x))) + qkv(x)[:, :4096]
torch.cuda.synchronize()
print(f"KSCOPE_METRIC mlp_ms={(time.perf_counter() - t0) * 1e3 / 50:.4f}")
