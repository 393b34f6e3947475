"""Profiling overhead of ``kscope profile`` on a real PyTorch workload (run on the GPU machine).

Method: the same command (``examples/workloads/transformer.py``) runs plain and under
``kscope profile`` (torch tracer, default step window wait=5 warmup=2 active=5), interleaved
A B A B ... so drift hits both alike. Wall time is the whole process from the outside, including
interpreter start, CUDA init, trace export and, for kscope, its gap analysis of the trace. The
ratio of medians is the overhead. Writes ``$OUT/profile_overhead.json`` and prints a table.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPEATS = int(os.environ.get("REPEATS", "3"))
WORKLOAD = [sys.executable, "examples/workloads/transformer.py", "--train-steps", "60", "--decode-steps", "16"]
OUT = Path(os.environ.get("OUT", "/tmp/out"))


def timed(argv: list[str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{argv} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall


def main() -> None:
    kscope = [sys.executable, "-m", "kernelscope", "profile", "--out", "/tmp/kscope-ovh", "--json", "--"]
    timed(WORKLOAD)  # warm the file cache and the CUDA/Triton caches for both
    plain, profiled = [], []
    for _ in range(REPEATS):
        plain.append(timed(WORKLOAD))
        profiled.append(timed(kscope + WORKLOAD))
    res = {
        "workload": " ".join(WORKLOAD[1:]),
        "plain_s": plain,
        "profiled_s": profiled,
        "median_plain_s": statistics.median(plain),
        "median_profiled_s": statistics.median(profiled),
        "ratio": statistics.median(profiled) / statistics.median(plain),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "profile_overhead.json").write_text(json.dumps(res, indent=2))
    print(f"plain    {' '.join(f'{t:6.2f}' for t in plain)}  median {res['median_plain_s']:.2f} s")
    print(f"profiled {' '.join(f'{t:6.2f}' for t in profiled)}  median {res['median_profiled_s']:.2f} s")
    print(f"overhead ratio (median profiled / median plain): {res['ratio']:.3f}")


if __name__ == "__main__":
    main()
