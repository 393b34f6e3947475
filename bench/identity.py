"""Classifier accuracy on hand-labeled real names, and its throughput.

Sets (``tests/data/names``): ``corpus.jsonl`` (the shared corpus), ``heldout.jsonl`` (collected and
labeled separately from other public traces; used for one round of rule fixes, numbers before and
after are in RESULTS.md), ``blind.jsonl`` when present (collected after the rules were frozen, never
used to tune them); then the fresh sets of issue 16 (``bench/data/identity_fresh_names*.jsonl``, each
labelled independently; their first measurements, taken before any fix made for them, are in RESULTS.md,
and this table shows them now). Throughput: all names of the ``tests/data/names`` sets (as before the fresh
sets joined, so runs compare), repeated to ``--names`` distinct strings
(a numeric suffix keeps them distinct, so nothing is served from a cache), one ``classify`` call.
Usage: ``python bench/identity.py [--names 20000] [--no-results]``.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from _common import ROOT, jsonl, machine, publish

from kernelscope.identity import classify

SETS = ROOT / "tests" / "data" / "names"
FRESH = ROOT / "bench" / "data"
HEADING = "## Kernel identity: accuracy on labeled real names, throughput"
FIELDS = ("kind", "category", "function", "dtype")


def score(path: Path) -> dict[str, float]:
    rows = jsonl(path)
    got = classify([r["name"] for r in rows])
    return {
        "n": len(rows),
        **{f: sum(r[f] == getattr(g, f) for r, g in zip(rows, got, strict=True)) / len(rows) for f in FIELDS},
    }


def _set_number(path: Path) -> int:
    """``identity_fresh_names_12`` is set 12; the first set has no number."""
    m = re.search(r"_(\d+)$", path.stem)
    return int(m[1]) if m else 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--names", type=int, default=20000)
    ap.add_argument("--no-results", action="store_true")
    ap.add_argument("--note", action="append", help="a line to record with the results")
    args = ap.parse_args()
    named = sorted(SETS.glob("*.jsonl"))
    sets = [*named, *sorted(FRESH.glob("identity_fresh_names*.jsonl"), key=_set_number)]
    scores = {p.name: score(p) for p in sets}
    base = [r["name"] for p in named for r in jsonl(p)]
    # distinct strings: a suffix on bare names, a different template argument count on C++ ones
    names = [
        f"{n}_{i}" if "<" not in n else n.replace("<", f"<{i}, ", 1)
        for i in range(args.names // len(base) + 1)
        for n in base
    ][: args.names]
    t0 = time.perf_counter()
    classify(names)
    seconds = time.perf_counter() - t0
    mach = machine(("msgspec", "pyyaml"))
    lines = [
        HEADING,
        "",
        f"Date {time.strftime('%Y-%m-%d')}; {mach['cpus']} CPUs ({mach['cpu']}), Python {mach['python']}. "
        "Command: `python bench/identity.py`. Targets: kind at least 95 %, category at least 90 %.",
        "",
        "| set | names | kind | category | function | dtype |",
        "|---|---:|---:|---:|---:|---:|",
        *(
            f"| {name} | {s['n']:.0f} | " + " | ".join(f"{s[f]:.1%}" for f in FIELDS) + " |"
            for name, s in scores.items()
        ),
        "",
        f"Throughput: {len(names):,} distinct names in {seconds:.2f} s ({len(names) / seconds:,.0f} names/s, "
        "one batched c++filt call included).",
        *(["", *args.note] if args.note else []),
    ]
    publish(lines, HEADING, write=not args.no_results)


if __name__ == "__main__":
    main()
