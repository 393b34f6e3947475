"""Source-finder truth: kscope's answers against independently labelled definitions (issue 16 deliverable 1).

Names and labels: ``bench/data/find_labelled.jsonl`` — real kernel names copied from public profiler outputs,
each with the file(s) that define it in the checkouts named in ``find_labelled.README.md`` (or none), labelled
by a helper that never read kernelscope's code nor ran it. Checkouts: ``--repos`` (never committed), named by
folder as the labels name them.

Each name's outcome:

- **correct** — ``resolved`` to a labelled file, or not resolved (``not_found``/``no_source``) where the label
  says no checkout defines it;
- **ambiguous** — ``ambiguous`` (a labelled file among the candidates or not: both counted);
- **missed** — ``not_found``/``no_source`` although a checkout defines it;
- **confidently wrong** — ``resolved`` to a file the label does not list (the goal is 0).

Usage: ``python bench/find_truth.py --repos /work/repos/* [--db FILE] [--show wrong,missed,ambiguous]``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from _common import ROOT

from kernelscope.sources.find import Finder
from kernelscope.sources.index import SourceIndex

LABELS = ROOT / "bench" / "data" / "find_labelled.jsonl"


def outcome(status: str, path: str | None, repo: str | None, expected: list[dict[str, object]]) -> str:
    want = {(str(e["repo"]), str(e["path"])) for e in expected}
    if status == "resolved":
        return "correct" if (repo, path) in want else "confidently wrong"
    if status == "ambiguous":
        return "ambiguous"
    return "correct" if not want else "missed"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repos", nargs="+", type=Path, required=True)
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--db", type=Path, default=Path("/tmp/find_truth.sqlite"), help="index file (kept: re-runs)")
    ap.add_argument("--show", default="confidently wrong,missed,ambiguous", help="outcomes to list name by name")
    args = ap.parse_args()
    rows = [json.loads(line) for line in args.labels.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("expected") is not None]  # undecided labels are left out (README)
    repos = {p.resolve().name: p.resolve() for p in args.repos}
    index = SourceIndex(args.db)
    t0 = time.perf_counter()
    index.index(list(repos.values()))
    print(f"indexed {len(repos)} checkouts in {time.perf_counter() - t0:.0f} s")
    matches = Finder(index).find([r["name"] for r in rows])
    counts: Counter[str] = Counter()
    shown = set(args.show.split(","))
    for r, m in zip(rows, matches, strict=True):
        loc = m.location
        repo = Path(loc.root).name if loc is not None else None
        got = outcome(m.status, loc.path if loc is not None else None, repo, r["expected"])
        counts[got] += 1
        if got in shown:
            where = f"{repo}:{loc.path}:{loc.line}" if loc is not None else m.reason
            want = ", ".join(f"{e['repo']}:{e['path']}" for e in r["expected"]) or "none"
            print(f"[{got}] {r['name'][:100]}\n    kscope {m.status}: {where}\n    label: {want}")
    total = sum(counts.values())
    print("\n| outcome | names | share |\n|---|---:|---:|")
    for k in ("correct", "ambiguous", "missed", "confidently wrong"):
        print(f"| {k} | {counts[k]} | {counts[k] / total:.1%} |")
    print(f"| all | {total} | |")


if __name__ == "__main__":
    main()
