"""A workload that uses the autotuned matmul (examples/tune/matmul.py) at two shapes, as a model would:
``kscope profile --step-fn none --out DIR -- python examples/tune/matmul_workload.py`` records its Triton
launches (the launch ledger), and ``kscope tune examples/tune/matmul.py:matmul_kernel --from-trace DIR``
tunes the shapes it really ran. ``--configs N`` keeps the first N autotune configs (a quicker autotune);
``--plain-bench`` times them with a loop that flushes no cache (a hand-written tuner's way)."""

import argparse

import matmul
import torch
import triton

p = argparse.ArgumentParser()
p.add_argument("--configs", type=int, default=8)
p.add_argument("--calls", type=int, default=5)
p.add_argument("--plain-bench", action="store_true", help="autotune with a timing loop that clears no cache")
a = p.parse_args()
kernel = matmul.matmul_kernel
kernel.configs = kernel.configs[: a.configs]
if a.plain_bench:  # as many hand-written tuners time: back-to-back calls, no L2 flush between them

    def plain_bench(fn, quantiles=None, reps=20):
        fn()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end) / reps
        return [ms, ms, ms] if quantiles else ms

    kernel = triton.autotune(configs=kernel.configs, key=["M", "N", "K"], do_bench=plain_bench)(matmul._matmul)
for shape in ({"M": 4096, "N": 4096, "K": 4096}, {"M": 16, "N": 8192, "K": 4096}):
    spec = matmul.launch(shape)
    for _ in range(a.calls):
        kernel[spec["grid"]](*spec["args"])
torch.cuda.synchronize()
