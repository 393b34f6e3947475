"""Source-finder benchmark: kscope's index + lookup vs per-name ripgrep (Magpie's method), same run.

Method
------
Names: ``bench/data/find_names.txt``, real kernel names as profilers printed them (origins in
``find_names.sources.txt``), looked up in real checkouts of vllm, triton, aiter, composable_kernel,
pytorch and flash-attention (``--repos``; never committed).

1. cold index: a fresh SQLite file, ``SourceIndex.index(repos)`` — list, parse (all cores), test refs.
2. warm re-index: the same call again; nothing changed, so it only lists and stats files.
3. warm lookup: ``Finder(index).find(names)`` for all names — classification (one ``c++filt`` batch),
   queries, path checks, tests. Best of ``--runs``.
4. ripgrep: for each name, one ``rg -n -w -F FUNCTION REPOS...`` process (Magpie's per-name search),
   with the same function name kscope searches for (so the peer is not charged for naming), names whose
   kernels have no source skipped as kscope skips them. Page cache warm (the index just read every file).

Checks: for every name kscope resolves, ripgrep must find the symbol in the resolved file.
Usage: ``python bench/find.py --repos /work/repos/* [--runs 3] [--no-results]``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

from _common import ROOT, machine, publish

from kernelscope.sources.find import NO_SOURCE, Finder
from kernelscope.sources.index import SourceIndex

NAMES = ROOT / "bench" / "data" / "find_names.txt"
HEADING = "## Source finder: index, lookup and per-name ripgrep"


def ripgrep(rg: str, functions: list[str], repos: list[Path]) -> tuple[float, dict[str, set[str]]]:
    """Seconds for one rg process per function, and the files each found."""
    hits: dict[str, set[str]] = {}
    t0 = time.perf_counter()
    for fn in functions:
        proc = subprocess.run(
            [rg, "-n", "-w", "-F", "--no-messages", fn, *map(str, repos)], check=False, capture_output=True, text=True
        )
        hits[fn] = {line.split(":", 1)[0] for line in proc.stdout.splitlines()}
    return time.perf_counter() - t0, hits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repos", nargs="+", type=Path, required=True)
    ap.add_argument("--names", type=Path, default=NAMES)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-results", action="store_true")
    ap.add_argument("--note", action="append", help="a line to record with the results (e.g. checkout provenance)")
    args = ap.parse_args()
    rg = shutil.which("rg")
    if rg is None:
        raise SystemExit("ripgrep (rg) is required: apt install ripgrep")
    repos = [r.resolve() for r in args.repos]
    names = [n for n in args.names.read_text().splitlines() if n.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        index = SourceIndex(Path(tmp) / "bench.sqlite")
        t0 = time.perf_counter()
        summaries = index.index(repos)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        index.index(repos)
        reindex = time.perf_counter() - t0
        warm = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            matches = Finder(index).find(names)  # a fresh Finder: no classification cache carried over
            warm.append(time.perf_counter() - t0)
        db_mb = (Path(tmp) / "bench.sqlite").stat().st_size / 1e6
    searched = list(dict.fromkeys(m.function for m in matches if m.kind not in NO_SOURCE))
    rg_s, hits = ripgrep(rg, searched, repos)
    rg_found = sum(bool(h) for h in hits.values())
    status = Counter(m.status for m in matches)
    resolved = [m for m in matches if m.status == "resolved" and m.location]
    # independent check: the resolved file really contains the symbol (rg reads it; not timed)
    disagree = [
        m
        for m in resolved
        if subprocess.run(
            [rg, "-q", "-w", "-F", m.location.symbol, str(Path(m.location.root, m.location.path))],  # type: ignore[union-attr]
            check=False,
        ).returncode
    ]
    agree = len(resolved) - len(disagree)
    binary = sum(m.location.path.endswith(".co") for m in disagree)  # type: ignore[union-attr]
    with_tests = sum(bool(m.tests) for m in resolved)
    best = min(warm)
    mach = machine(("msgspec", "numpy"))
    rg_version = subprocess.run([rg, "--version"], check=True, capture_output=True, text=True).stdout.splitlines()[0]
    per_name_rg = rg_s / max(len(searched), 1)
    lines = [
        HEADING,
        "",
        f"Date {time.strftime('%Y-%m-%d')}; machine: {mach['cpus']} CPUs ({mach['cpu']}), {mach['ram']}, "
        f"Python {mach['python']}, {mach['os']}; {rg_version}. Command: "
        f"`python bench/find.py --repos {' '.join(r.name for r in repos)} --runs {args.runs}`.",
        "",
        "| repository | commit | files | kernel definitions | test files | cold seconds |",
        "|---|---|---:|---:|---:|---:|",
        *(
            f"| {s.name} | {(s.commit or '')[:12]} | {s.files:,} | {s.definitions:,} | {s.test_files:,} "
            f"| {s.seconds:.1f} |"
            for s in summaries
        ),
        "",
        f"| measure | {len(names)} real names |",
        "|---|---:|",
        f"| cold index, all repositories (target ≤ 60 s on 2 cores) | {cold:.1f} s |",
        f"| warm re-index (nothing changed) | {reindex:.2f} s |",
        f"| warm lookup, all names (best of {args.runs}; target ≤ 1 s) | {best:.3f} s |",
        f"| ripgrep, one `rg -w -F` per name over all repositories ({len(searched)} names with source) "
        f"| {rg_s:.1f} s |",
        f"| speed-up of warm lookup over per-name ripgrep (target at least 20 x) | {rg_s / best:.0f} x |",
        f"| ripgrep per name | {per_name_rg:.2f} s |",
        f"| index size | {db_mb:.1f} MB |",
        "",
        "Answers: "
        + ", ".join(f"{k} {status[k]}" for k in ("resolved", "ambiguous", "no_source", "not_found"))
        + f". Of the {len(resolved)} resolved, ripgrep finds the symbol in the resolved file for {agree}"
        + (f" ({binary} more are code objects, which ripgrep skips as binary)" if binary else "")
        + f"; {with_tests} come with at least one test. Per-name ripgrep finds the word somewhere for "
        f"{rg_found} of the {len(searched)} names it searched (a hit list to read, not a definition).",
        *(["", *args.note] if args.note else []),
    ]
    publish(lines, HEADING, write=not args.no_results)


if __name__ == "__main__":
    main()
