"""How often two independent labellers agree, and the classifier against each and against both.

A labelled set is one labeller's reading. Where two labellers, neither of whom saw the other's labels or
the classifier, labelled the same names, their agreement is the ceiling any classifier can be measured
against with one of them as truth; the names they agree on are the labels least likely to be one
reader's convention. Both files are JSONL with ``name`` and the label fields; names are matched by value.
Usage: ``python bench/identity_agreement.py A.jsonl B.jsonl [--title T] [--results]``.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from _common import jsonl, publish

from kernelscope.identity import classify

FIELDS = ("kind", "category", "dtype", "function")


def _rows(path: Path) -> dict[str, dict[str, object]]:
    return {r["name"]: r for r in jsonl(path)}


def _pct(k: int, n: int) -> str:
    return f"{k}/{n} ({k / n:.1%})" if n else "0/0"


def agreement(a: Path, b: Path) -> list[str]:
    """Markdown lines: the agreement table, then the category pairs the labellers disagree on."""
    ra, rb = _rows(a), _rows(b)
    names = sorted(ra.keys() & rb.keys())
    got = {n: g for n, g in zip(names, classify(names), strict=True)}
    lines = [
        f"Names labelled by both: {len(names)} (A: `{a.name}`, {len(ra)}; B: `{b.name}`, {len(rb)}).",
        "",
        "| field | A = B | classifier = A | classifier = B | classifier on names where A = B |",
        "|---|---:|---:|---:|---:|",
    ]
    for f in FIELDS:
        same = [n for n in names if ra[n][f] == rb[n][f]]
        mine = {n: getattr(got[n], f) for n in names}
        lines.append(
            f"| {f} | {_pct(len(same), len(names))} | "
            f"{_pct(sum(mine[n] == ra[n][f] for n in names), len(names))} | "
            f"{_pct(sum(mine[n] == rb[n][f] for n in names), len(names))} | "
            f"{_pct(sum(mine[n] == ra[n][f] for n in same), len(same))} |"
        )
    pairs = Counter(
        (str(ra[n]["category"]), str(rb[n]["category"])) for n in names if ra[n]["category"] != rb[n]["category"]
    )
    if pairs:
        lines += [
            "",
            "Category disagreements (A → B: names): "
            + "; ".join(f"{x} → {y}: {k}" for (x, y), k in pairs.most_common())
            + ".",
        ]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--title", default="labellers A and B")
    ap.add_argument("--results", action="store_true", help="write the section into bench/RESULTS.md")
    ap.add_argument("--note", action="append", help="a line to record with the results")
    args = ap.parse_args()
    heading = f"## Kernel identity: agreement of two independent labellers, {args.title}"
    lines = [heading, "", *agreement(args.a, args.b), *(["", *args.note] if args.note else [])]
    publish(lines, heading, write=args.results)


if __name__ == "__main__":
    main()
