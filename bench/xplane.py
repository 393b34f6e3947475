"""Reading a JAX XPlane: kscope's reader against XLA's own converter (xprof's trace viewer), same file, same run.

Method: each side runs in a fresh interpreter (its own process, so imports and peak memory are its own), one
after the other, ``--repeats`` times; the table gives the median wall seconds of the read and the peak RSS.
kscope: ``readers.read(path)`` (the records every command starts from). Peer: what TraceLens and TensorBoard do
with a capture, ``xprof.convert.raw_to_tool_data.xspace_to_tool_data([path], "trace_viewer@^", {})`` and the
JSON it returns decoded; its kernels are the events on the GPU processes' ``Stream #`` threads that are not
copies (``memcpy_details``/``Memset_details``). xprof caches a
conversion beside the capture (``<name>.SSTABLE``): it is deleted before each run, so each run converts. Both
sides must count the same kernels and the same total kernel time, or the run fails. xprof lives in its own venv
(``--peer-python``: ``pip install xprof``), as HolisticTraceAnalysis does for bench/ingest.py.

Usage: ``python bench/xplane.py FILE.xplane.pb [--peer-python PY] [--repeats 3] [--no-results]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import ROOT, machine, publish

HEADING = "## Reading a JAX XPlane: kscope against XLA's own converter (xprof)"

KSCOPE = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
t0 = time.perf_counter()
from kernelscope import readers
prof = readers.read(sys.argv[1])
s = time.perf_counter() - t0
print(json.dumps({"s": s, "kernels": len(prof.launches), "kernel_ns": sum(k.duration_ns for k in prof.launches),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
PEER = """
import json, resource, sys, time
t0 = time.perf_counter()
from xprof.convert import raw_to_tool_data as convert
data, _ = convert.xspace_to_tool_data([sys.argv[1]], "trace_viewer@^", {})
events = json.loads(data)["traceEvents"]
s = time.perf_counter() - t0
gpus = {e["pid"] for e in events if e.get("name") == "process_name" and "/device:GPU" in e["args"]["name"]}
streams = {(e["pid"], e["tid"]) for e in events if e.get("name") == "thread_name" and e["pid"] in gpus
           and e["args"]["name"].startswith("Stream #")}
copy = ("memcpy_details", "memset_details")
kernels = [e for e in events if e.get("ph") == "X" and (e.get("pid"), e.get("tid")) in streams
           and not any(k.lower() in copy for k in e.get("args") or {})]
print(json.dumps({"s": s, "kernels": len(kernels), "kernel_ns": round(sum(e["dur"] for e in kernels) * 1000),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _run(python: str, code: str, path: Path) -> dict[str, float]:
    out = subprocess.run([python, "-c", code, str(path), str(ROOT)], capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("xplane", type=Path)
    ap.add_argument("--peer-python", default=sys.executable, help="a Python with xprof installed")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-results", action="store_true")
    args = ap.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"kscope": [], "xprof": []}
    t0 = time.perf_counter()
    cache = args.xplane.with_name(args.xplane.name.removesuffix(".xplane.pb") + ".SSTABLE")
    for _ in range(args.repeats):
        runs["kscope"].append(_run(sys.executable, KSCOPE, args.xplane))
        cache.unlink(missing_ok=True)  # xprof caches its conversion beside the capture: time the conversion
        runs["xprof"].append(_run(args.peer_python, PEER, args.xplane))
    cache.unlink(missing_ok=True)
    ours, peer = runs["kscope"][0], runs["xprof"][0]
    # the durations agree to XLA's rounding: its trace viewer prints microseconds with 3 decimals
    if ours["kernels"] != peer["kernels"] or abs(ours["kernel_ns"] - peer["kernel_ns"]) > ours["kernels"]:
        raise SystemExit(f"the two readings disagree: kscope {ours}, xprof {peer}")
    peer_version = subprocess.run(
        [args.peer_python, "-c", "import importlib.metadata as m; print(m.version('xprof'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    m = machine(["msgspec", "numpy", "protobuf"])
    med = {k: statistics.median(r["s"] for r in v) for k, v in runs.items()}
    rss = {k: max(r["rss_mb"] for r in v) for k, v in runs.items()}
    size_mb = args.xplane.stat().st_size / 1e6
    lines = [
        HEADING,
        "",
        f"{time.strftime('%Y-%m-%d')}, {m['cpus']} CPUs ({m['cpu']}), {m['ram']}, Python {m['python']}, {m['os']};"
        f" {m['packages']}; xprof {peer_version} in its own venv.",
        f"Command: `python bench/xplane.py {args.xplane.name} --repeats {args.repeats}`;"
        f" {time.perf_counter() - t0:.0f} s wall. Input: {args.xplane.name}, {size_mb:.1f} MB,"
        f" {ours['kernels']:,} kernels ({ours['kernel_ns'] / 1e6:,.1f} ms of kernel time; both sides count the same).",
        "",
        "| reader | median s | peak RSS MB | vs xprof |",
        "|---|---:|---:|---:|",
    ]
    for name in ("kscope", "xprof"):
        lines.append(f"| {name} | {med[name]:.2f} | {rss[name]:,.0f} | {med['xprof'] / med[name]:.1f}x |")
    publish(lines, HEADING, not args.no_results)


if __name__ == "__main__":
    main()
