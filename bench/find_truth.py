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

Two measurements: the **names alone** (``kscope find NAME``), and the names with the **context their source
records** (``find_labelled.context.jsonl``, one line per source: the GPU it ran on and the Python packages or
modules it ran, from the source itself — a Kineto trace's header and Python frames as kscope reads them, or
what the source states: "H100", "an SGLang pull request"), as ``kscope gap --find-sources`` takes them from
a trace or ``--arch``/``--module`` from the user. A source without such a line is looked up by name alone.

A second label set made the same way, ``find_labelled_2.jsonl`` with ``find_labelled_2.context.jsonl`` (the
names of the identity sets 11-13), is scored with ``--labels`` and ``--context``; so are sets 3-5
(``find_labelled_3/4/5``, each README naming its checkouts).

Usage: ``python bench/find_truth.py --repos /work/repos/* [--labels F --context F] [--db FILE]
[--show "confidently wrong,missed,ambiguous"]``.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from _common import ROOT, jsonl

from kernelscope.model.source import SourceMatch
from kernelscope.sources.find import Finder
from kernelscope.sources.index import SourceIndex

LABELS = ROOT / "bench" / "data" / "find_labelled.jsonl"
CONTEXT = ROOT / "bench" / "data" / "find_labelled.context.jsonl"


def outcome(status: str, path: str | None, repo: str | None, expected: list[dict[str, object]]) -> str:
    want = {(str(e["repo"]), str(e["path"])) for e in expected}
    if status == "resolved":
        return "correct" if (repo, path) in want else "confidently wrong"
    if status == "ambiguous":
        return "ambiguous"
    return "correct" if not want else "missed"


def context_of(source: str, contexts: list[dict[str, Any]]) -> tuple[str | None, tuple[str, ...]]:
    """The GPU and Python modules a label's source records (the longest matching source prefix)."""
    fits = [c for c in contexts if source.startswith(c["source"])]
    best = max(fits, key=lambda c: len(c["source"]), default=None)
    return (best["arch"], tuple(best["modules"])) if best is not None else (None, ())


def score(title: str, rows: list[dict[str, Any]], matches: list[SourceMatch], shown: set[str]) -> None:
    print(f"\n## {title}\n")
    counts: Counter[str] = Counter()
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repos", nargs="+", type=Path, required=True)
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--context", type=Path, default=CONTEXT, help="each source's GPU and Python modules")
    ap.add_argument("--db", type=Path, default=Path("/tmp/find_truth.sqlite"), help="index file (kept: re-runs)")
    ap.add_argument("--show", default="confidently wrong,missed,ambiguous", help="outcomes to list name by name")
    args = ap.parse_args()
    rows = jsonl(args.labels)
    rows = [r for r in rows if r.get("expected") is not None]  # undecided labels are left out (README)
    contexts = jsonl(args.context)
    repos = {p.resolve().name: p.resolve() for p in args.repos}
    index = SourceIndex(args.db)
    t0 = time.perf_counter()
    index.index(list(repos.values()))
    print(f"indexed {len(repos)} checkouts in {time.perf_counter() - t0:.0f} s")
    shown = set(args.show.split(","))
    score("names alone", rows, Finder(index).find([r["name"] for r in rows]), shown)
    # the same names, each looked up with what its source records (one finder per context)
    context = [context_of(r["source"], contexts) for r in rows]
    by_context: dict[tuple[str | None, tuple[str, ...]], list[int]] = defaultdict(list)
    for i, c in enumerate(context):
        by_context[c].append(i)
    matches: dict[int, SourceMatch] = {}
    for (arch, modules), idx in by_context.items():
        found = Finder(index, arch=arch, modules=modules).find([rows[i]["name"] for i in idx])
        matches.update(zip(idx, found, strict=True))
    with_context = sum(1 for arch, modules in context if arch or modules)
    title = f"names with their source's context ({with_context} of {len(rows)} names have some)"
    score(title, rows, [matches[i] for i in range(len(rows))], shown)


if __name__ == "__main__":
    main()
