"""CLI start-up: wall time of short ``kscope`` commands, at this checkout and at an older one, same run.

Method: each command runs as its own process (``python -c "...main()"`` with the checkout first on
``sys.path``, so both checkouts use the same interpreter and packages), interleaved, median of
``--repeats``. ``python -c pass`` is the floor. The older checkout is ``git worktree add`` of ``--base``
(default: the commit before the lazy API and CLI), removed afterwards.

Usage: ``python bench/startup.py [--base REV] [--repeats 9] [--no-results]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, machine, publish

HEADING = "## CLI start-up: `kscope` commands before and after lazy loading"
ATT = "tests/data/att/fused_rope_cache/big/ui_output_agent_4253_dispatch_8781"
COMMANDS = [
    ["--help"],
    ["classify", "nvjet_tst_192x8_64x8_4x1_v_bz_TNT", "--json"],
    ["hw", "H100 SXM", "--json"],
    ["att", ATT, "--code-only", "--json"],
    ["att", ATT, "--json"],
    ["gap", "kernelscope/data/demo/mi350x/rmsnorm/discover_kernel_trace.csv", "--json"],
]


def wall_s(root: Path, args: list[str]) -> float:
    code = f"import sys; sys.path.insert(0, {str(root)!r}); sys.argv = ['kscope', *{args!r}]; "
    code += "from kernelscope.cli import main; main()"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="3d1c175", help="older revision to compare with")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--no-results", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(base), args.base], cwd=ROOT, check=True)
        try:
            floor = statistics.median([_python_s() for _ in range(args.repeats)])
            rows = []
            for cmd in COMMANDS:
                before, after = [], []
                for _ in range(args.repeats):
                    before.append(wall_s(base, cmd))
                    after.append(wall_s(ROOT, cmd))
                b, a = statistics.median(before), statistics.median(after)
                rows.append(f"| `kscope {' '.join(cmd)}` | {b:.2f} | {a:.2f} | {b / a:.2f} x |")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    mach = machine(("typer", "rich", "numpy", "msgspec", "pydantic"))
    lines = [
        HEADING,
        "",
        f"Date {time.strftime('%Y-%m-%d')}; machine: {mach['cpus']}-core CPU box ({mach['cpu']}), {mach['ram']}, "
        f"Python {mach['python']}, {mach['packages']}. Command: `python bench/startup.py --base {args.base} "
        f"--repeats {args.repeats}`; before = {args.base}, after = {head.stdout.strip()} (plus uncommitted changes, if "
        "any). Method: the docstring of bench/startup.py. Median wall seconds per command, one process each.",
        "",
        "| command | before s | after s | before / after |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        f"Floor: `python -c pass` {floor:.2f} s. What a command still loads: typer and rich (typer 0.29 also "
        "imports pydantic), numpy and msgspec where the command reads data, and the modules of that command.",
    ]
    publish(lines, HEADING, write=not args.no_results)


def _python_s() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
