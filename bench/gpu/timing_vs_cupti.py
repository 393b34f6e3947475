"""kernelscope.bench against CUPTI (the PyTorch profiler's kernel durations) and triton's do_bench.

Same process, same inputs, same GPU. For each kernel: kscope's cold-cache median (device events, L2
flushed before every call), the median of the same kernel's CUPTI durations under the same flush,
and do_bench's median and mean (it flushes L2 too). Goal: kscope's median within 2 % of CUPTI's for
kernels of 20 µs or more. A microsecond kernel is also timed in graph mode (hot) against CUPTI hot.

    python bench/gpu/timing_vs_cupti.py --out results.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import triton
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "softmax"))

import softmax as example

from kernelscope.timing import _flush_buffer, bench

N = 200


def cases() -> dict[str, Callable[[], object]]:
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    src = torch.empty(64 * 2**20, device="cuda", dtype=torch.float32)  # 256 MiB
    dst = torch.empty_like(src)
    small = torch.randn(2**18, device="cuda")
    return {
        "softmax_slow_8192x4096": example.make(block=128, warps=1),
        "softmax_fast_8192x4096": example.make(block=0, warps=8),
        "matmul_bf16_4096": lambda: torch.matmul(a, b),
        "copy_256MiB": lambda: dst.copy_(src),
        "softmax_fast_1024x1024": example.make(rows=1024, cols=1024, block=0, warps=4),
        "add_256K": lambda: small.add_(1.0),
    }


def cupti_median(fn: Callable[[], object], flush: torch.Tensor | None) -> tuple[float, int]:
    """Median over calls of the summed CUPTI durations (µs) of fn's kernels; the flush's excluded."""
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(N):
            if flush is not None:
                flush.zero_()
            fn()
        torch.cuda.synchronize()
    durs = [
        e.time_range.elapsed_us()
        for e in sorted(prof.events(), key=lambda e: e.time_range.start)
        if e.device_type == torch.autograd.DeviceType.CUDA and "FillFunctor<int>" not in e.name
    ]
    per = len(durs) // N  # kernels per call (one stream: in launch order)
    if per * N != len(durs):
        raise SystemExit(f"{len(durs)} kernels for {N} calls: not a whole number per call")
    return statistics.median(sum(durs[i : i + per]) for i in range(0, len(durs), per)), per


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    flush = _flush_buffer(torch)
    rows = []
    for name, fn in cases().items():
        m = bench(fn, label=name, mode="cold", min_time_ms=500)
        mk = bench(fn, label=name, mode="cold", min_time_ms=500, timer="cupti")
        cupti, n_kernels = cupti_median(fn, flush)
        db_med = triton.testing.do_bench(fn, return_mode="median") * 1e3
        db_mean = triton.testing.do_bench(fn, return_mode="mean") * 1e3
        row = {
            "kernel": name,
            "kscope_cold_median_us": m.summary.median,
            "kscope_ci95": [m.median_ci.low, m.median_ci.high],
            "kscope_iqr_pct": 100 * m.summary.iqr / m.summary.median,
            "samples": m.summary.n,
            "cupti_cold_median_us": cupti,
            "kernels_per_call": n_kernels,
            "kscope_over_cupti": m.summary.median / cupti,
            "kscope_cupti_timer_median_us": mk.summary.median,
            "kscope_cupti_timer_over_cupti": mk.summary.median / cupti,
            "do_bench_median_us": db_med,
            "do_bench_mean_us": db_mean,
            "kscope_over_do_bench_median": m.summary.median / db_med,
        }
        if m.summary.median < 20:
            g = bench(fn, label=name, mode="hot", graph=True, min_time_ms=300)
            hot = bench(fn, label=name, mode="hot", min_time_ms=300)
            cupti_hot, _ = cupti_median(fn, None)
            row |= {
                "kscope_hot_graph_median_us": g.summary.median,
                "kscope_hot_events_median_us": hot.summary.median,
                "cupti_hot_median_us": cupti_hot,
                "graph_over_cupti_hot": g.summary.median / cupti_hot,
            }
        rows.append(row)
        print(json.dumps(row), flush=True)
    doc = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "l2_bytes": torch.cuda.get_device_properties(0).L2_cache_size,
        "rows": rows,
    }
    args.out.write_text(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
