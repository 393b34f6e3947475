"""The tables torch.profiler prints (``prof.key_averages().table(...)``), the form people paste into issues, beside
the Chrome trace of the same profile: ground truth for kscope's reading of the tables' kernel rows.

One training step and two decode steps of the project's small transformer (``examples/workloads``) and three calls of
a ``torch.compile``d function, inside a ``record_function`` range, under ``torch.profiler.profile(activities=[CPU,
CUDA])``; then, into ``$OUT``: ``trace.json.gz`` (``export_chrome_trace``)
and the table sorted and cut the ways people print it (default width, a wide name column, ``row_limit``, grouped by
input shape), and a log with the table printed among other output. Usage (repository root, on the GPU machine):
``OUT=/some/folder python3 bench/gpu/torch_table.py``.
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "workloads"))
from transformer import Model

OUT = Path(os.environ["OUT"])


def workload() -> None:
    torch.manual_seed(0)
    dev = torch.device("cuda")
    vocab, dim = 4096, 512
    model = Model(vocab, dim, 8, 2).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    tokens = torch.randint(0, vocab, (4, 256), device=dev)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = nn.functional.cross_entropy(model(tokens[:, :-1]).reshape(-1, vocab).float(), tokens[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        nxt = tokens[:1, :1]
        for _ in range(2):
            nxt = model(torch.cat([tokens[:1, :63], nxt], 1))[:, -1].argmax(-1, keepdim=True)
    torch.cuda.synchronize()


@torch.compile
def fused(x: torch.Tensor) -> torch.Tensor:
    """Inductor's Triton kernels: each launched from a CPU op of the kernel's own name."""
    return torch.nn.functional.silu(x) * x.float().pow(2).mean(-1, keepdim=True).rsqrt()


def main() -> None:
    x = torch.randn(64, 4096, device="cuda")
    workload()  # warm-up: autotuning, compilation and module loads stay out of the profile
    fused(x)
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts, record_shapes=True) as prof:
        with torch.profiler.record_function("pipeline_forward"):  # a user range: a CPU row and a GPU row
            workload()
            for _ in range(3):
                fused(x)
        torch.cuda.synchronize()
    trace = OUT / "trace.json"
    prof.export_chrome_trace(str(trace))
    with trace.open("rb") as src, gzip.open(OUT / "trace.json.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    trace.unlink()
    averages = prof.key_averages()
    tables = {
        "table_default.txt": averages.table(sort_by="cuda_time_total", row_limit=-1),
        "table_wide.txt": averages.table(sort_by="self_cuda_time_total", row_limit=-1, max_name_column_width=400),
        "table_top15.txt": averages.table(sort_by="self_cuda_time_total", row_limit=15),
        "table_shapes.txt": prof.key_averages(group_by_input_shape=True).table(
            sort_by="cuda_time_total", row_limit=-1, max_name_column_width=120
        ),
    }
    for name, text in tables.items():
        (OUT / name).write_text(text)
    with (OUT / "log_with_table.txt").open("w") as f:
        f.write(f"torch {torch.__version__}, {torch.cuda.get_device_name()}\nstep 0 loss 8.31\n")
        f.write(tables["table_default.txt"] + "\nSaved.\n")
    print(torch.__version__, {n: len(t.splitlines()) for n, t in tables.items()})


if __name__ == "__main__":
    main()
