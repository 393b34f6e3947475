"""``kscope report`` and ``kscope suggest`` on the ingest benchmark's trace: this tree against a base tree.

Each input should be decoded once (issue #13): before, ``report`` and ``suggest`` streamed the Kineto
trace as columns for the gap table and then decoded the whole file again for the op shapes. Each command
runs as ``api.report``/``api.suggest`` (``--gpu H100 SXM``: no GPU query) in a fresh ``python`` whose
working directory and ``PYTHONPATH`` are the tree, so the base tree's ``kernelscope`` is the one imported;
runs alternate base, this, base, this... and the best time and highest peak RSS of ``--runs`` are kept.
The base tree is a plain copy (``git archive BASE | tar -x -C DIR``).

Usage: ``python bench/report_once.py --base DIR [--trace bench/_work/.../trace.json] [--runs 2] [--no-results]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

from _common import ROOT, machine, publish

CHILD = """
import json, resource, sys, time
from kernelscope import api
t = time.perf_counter()
getattr(api, sys.argv[1])([sys.argv[2]], gpu="H100 SXM")
peak = max(resource.getrusage(w).ru_maxrss for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
print(json.dumps({"s": time.perf_counter() - t, "mb": peak / 1024}))
"""


def run(tree: Path, command: str, trace: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", CHILD, command, str(trace)], cwd=tree, env=env,
                         capture_output=True, text=True, check=True)  # fmt: skip
    return dict(json.loads(out.stdout.splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", type=Path, required=True, help="a copy of the base commit's tree")
    ap.add_argument("--base-label", default="base")
    ap.add_argument("--trace", type=Path, default=None, help="default: the newest bench/_work/**/*.json")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--no-results", action="store_true")
    a = ap.parse_args()
    trace = a.trace or max((ROOT / "bench" / "_work").rglob("*.json"), key=lambda p: p.stat().st_mtime)
    trace = trace.resolve()
    best: dict[tuple[str, str], dict[str, float]] = {}
    for _ in range(a.runs):
        for command in ("report", "suggest"):
            for label, tree in ((a.base_label, a.base.resolve()), ("this tree", ROOT)):
                got = run(tree, command, trace)
                old = best.get((command, label))
                best[(command, label)] = (
                    got if old is None else {"s": min(old["s"], got["s"]), "mb": max(old["mb"], got["mb"])}
                )
    m = machine(["msgspec", "numpy"])
    lines = [
        f"## report/suggest: each input decoded once ({trace.parent.name}, {datetime.date.today()})",
        "",
        f"`python bench/report_once.py --base DIR --runs {a.runs}` (method: its docstring).",
        "",
        f"- machine: {m['cpus']} CPUs ({m['cpu']}), {m['ram']} RAM, {m['os']}; Python {m['python']}; {m['packages']}",
        f"- trace: {trace.stat().st_size / 1e6:.1f} MB, load average {os.getloadavg()[0]:.2f} at the end",
        "",
        "| command | tree | seconds | peak RSS MB |",
        "|---|---|---:|---:|",
    ]
    for (command, label), r in best.items():
        lines.append(f"| `{command}` | {label} | {r['s']:.2f} | {r['mb']:.0f} |")
    publish(lines, lines[0], not a.no_results)


if __name__ == "__main__":
    main()
