"""A deliberately slow Triton row softmax, the workload of kernelscope's end-to-end example.

``softmax_kernel`` walks each row three times (max, sum, write) in ``BLOCK``-wide chunks with one warp:
narrow loads, three reads of the row from memory, and a grid of one small program per row. The
candidate an engineer (or agent) should find keeps the row in registers and reads it once:
``--block 0`` picks the whole row as one block with more warps (edit ``BLOCK``/``WARPS`` below, or pass
``--block``/``--warps``).

Prints ``KSCOPE_METRIC time_us=...`` (median of ``--iters`` CUDA-event-timed launches) and fails with
exit code 1 when the result differs from ``torch.softmax``.

    python examples/softmax/softmax.py --rows 8192 --cols 4096
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable

import torch
import triton
import triton.language as tl

BLOCK = 128  # columns per chunk; 0 = the whole row (next power of two)
WARPS = 1


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr, ONE_PASS: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride
    y_row = y_ptr + row * stride
    if ONE_PASS:
        cols = tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(y_row + cols, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=cols < n_cols)
    else:
        m = tl.full((), -float("inf"), tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            m = tl.maximum(m, tl.max(tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")), axis=0))
        s = tl.zeros((), tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
            s += tl.sum(tl.exp(x - m), axis=0)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
            tl.store(y_row + cols, (tl.exp(x - m) / s).to(y_ptr.dtype.element_ty), mask=cols < n_cols)


def softmax(x: torch.Tensor, block: int, warps: int) -> torch.Tensor:
    y = torch.empty_like(x)
    one_pass = block == 0
    b = triton.next_power_of_2(x.shape[1]) if one_pass else block
    softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=b, ONE_PASS=one_pass, num_warps=warps)
    return y


def make(
    rows: int = 8192, cols: int = 4096, block: int = BLOCK, warps: int = WARPS, dtype: str = "bfloat16"
) -> Callable[[], torch.Tensor]:
    """``kscope bench examples/softmax/softmax.py:make``: the input allocated, the kernel compiled."""
    x = torch.randn(rows, cols, device="cuda", dtype=getattr(torch, dtype))
    softmax(x, block, warps)
    return lambda: softmax(x, block, warps)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--block", type=int, default=BLOCK)
    ap.add_argument("--warps", type=int, default=WARPS)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--dtype", default="bfloat16")
    a = ap.parse_args()
    x = torch.randn(a.rows, a.cols, device="cuda", dtype=getattr(torch, a.dtype))
    y = softmax(x, a.block, a.warps)
    if not torch.allclose(y.float(), torch.softmax(x.float(), dim=1), atol=1e-2, rtol=1e-2):
        print("KSCOPE_ERROR softmax differs from torch.softmax", file=sys.stderr)
        return 1
    times = []
    for _ in range(a.iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        softmax(x, a.block, a.warps)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    print(f"KSCOPE_METRIC time_us={statistics.median(times):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
