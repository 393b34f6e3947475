"""Profiling overhead of ``kscope profile`` on a real PyTorch workload (run on the GPU machine).

Method: the same command (``examples/workloads/transformer.py``) runs plain, under ``kscope profile`` with
its default step window (torch tracer, wait=5 warmup=2 active=5), and under ``kscope profile --step-fn
none`` (the whole run traced, as for a program without steps), interleaved A B C A B C ... so drift hits all
alike. Wall time is the whole process from the outside, including interpreter start, CUDA init, trace export
and, for kscope, its gap analysis of the trace. The ratio of medians to plain is the overhead. Writes
``$OUT/profile_overhead.json`` and prints a table.
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
    kscope = [sys.executable, "-m", "kernelscope", "profile", "--json"]
    arms = {
        "plain": WORKLOAD,
        "windowed": [*kscope, "--out", "/tmp/kscope-ovh-w", "--", *WORKLOAD],
        "whole_run": [*kscope, "--out", "/tmp/kscope-ovh-a", "--step-fn", "none", "--", *WORKLOAD],
    }
    timed(WORKLOAD)  # warm the file cache and the CUDA/Triton caches for all
    walls: dict[str, list[float]] = {a: [] for a in arms}
    for _ in range(REPEATS):
        for arm, argv in arms.items():
            walls[arm].append(timed(argv))
    med = {a: statistics.median(w) for a, w in walls.items()}
    traces = sorted(Path("/tmp/kscope-ovh-a").glob("trace_*.json.gz"))
    res = {
        "workload": " ".join(WORKLOAD[1:]),
        "walls_s": walls,
        "median_s": med,
        "ratio": {a: med[a] / med["plain"] for a in arms if a != "plain"},
        "whole_run_trace_bytes": traces[-1].stat().st_size if traces else None,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "profile_overhead.json").write_text(json.dumps(res, indent=2))
    for arm, w in walls.items():
        ratio = f"  ratio {res['ratio'][arm]:.3f}" if arm in res["ratio"] else ""
        print(f"{arm:10s} {' '.join(f'{t:6.2f}' for t in w)}  median {med[arm]:.2f} s{ratio}")


if __name__ == "__main__":
    main()
