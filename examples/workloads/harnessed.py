"""A small bf16 MLP block (``silu(x @ w1) @ w2``) run ``--calls`` times, after or inside the benchmarking
a user puts around it (``--harness``), so a profile holds both: the case where a profiler must tell the
workload from the harness (kernelscope issue 15).

- ``none``: the workload alone (the ground truth for the others);
- ``do_bench``: ``triton.testing.do_bench`` times one call first (L2 flushes between timed calls);
- ``timer``: ``torch.utils.benchmark.Timer(...).blocked_autorange()`` times it first (no flushes);
- ``tunableop``: PyTorch TunableOp tunes each GEMM shape on its first call (``--tunableop-results FILE``,
  written at exit; with ``--tuned`` the file is read and nothing is tuned: the cached twin);
- ``graphed``: ``torch.cuda.make_graphed_callables`` (warm-up and capture), then the calls replay the graph;
- ``compile``: ``torch.compile(mode="max-autotune-no-cudagraphs")``, whose Inductor benchmarks its GEMM
  choices on the first call.

``kscope profile --step-fn none --out DIR -- python examples/workloads/harnessed.py --harness do_bench``
"""

import argparse

import torch

p = argparse.ArgumentParser()
p.add_argument("--harness", choices=["none", "do_bench", "timer", "tunableop", "graphed", "compile"], default="none")
p.add_argument("--calls", type=int, default=21)
p.add_argument("--tokens", type=int, default=2048)
p.add_argument("--tunableop-results", default="tunableop_results.csv")
p.add_argument("--tuned", action="store_true", help="with --harness tunableop: read the results, tune nothing")
a = p.parse_args()

if a.harness == "tunableop":  # before the first GEMM
    torch.cuda.tunable.enable(True)
    torch.cuda.tunable.tuning_enable(not a.tuned)
    torch.cuda.tunable.set_filename(a.tunableop_results)
    if a.tuned:
        torch.cuda.tunable.read_file(a.tunableop_results)

gen = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(a.tokens, 4096, device="cuda", dtype=torch.bfloat16, generator=gen)
w1 = torch.randn(4096, 8192, device="cuda", dtype=torch.bfloat16, generator=gen) / 64
w2 = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16, generator=gen) / 90


def block(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.silu(x @ w1) @ w2


step = block
if a.harness == "do_bench":
    import triton.testing

    print(f"do_bench: {triton.testing.do_bench(lambda: block(x)):.3f} ms")
elif a.harness == "timer":
    from torch.utils import benchmark

    m = benchmark.Timer(stmt="block(x)", globals={"block": block, "x": x}).blocked_autorange(min_run_time=0.2)
    print(f"Timer: {m.median * 1e3:.3f} ms over {len(m.times)} blocks")
elif a.harness == "graphed":
    step = torch.cuda.make_graphed_callables(block, (x,))
elif a.harness == "compile":
    step = torch.compile(block, mode="max-autotune-no-cudagraphs")

for _ in range(a.calls):
    y = step(x)
torch.cuda.synchronize()  # TunableOp writes its results file at exit
print(f"{a.harness}: {a.calls} calls, |y| = {y.float().norm():.1f}")
