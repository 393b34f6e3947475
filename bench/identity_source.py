"""Kind and category of labelled Triton kernel names: from the name alone (``kscope classify``) against from the name
and the kernel's source (``kscope find``, which reads a resolved Triton definition: identity/source.py).

The sources are the released packages the names were collected from (unpacked wheels: ``pip download --no-deps
vllm==0.33.0`` and ``unzip``), indexed into a scratch index. Only names the labels call ``triton`` are counted
(the source rules read Python definitions). The last column checks the finder itself: each name against the file
its set drew it from (its label's ``source``), found by a scan of the package independent of the finder. Usage:
``python bench/identity_source.py --repo DIR [--repo DIR ...] --labels SET.jsonl [--labels ...] [--results]``.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from _common import jsonl, publish

from kernelscope.identity import classify
from kernelscope.identity.source import SOURCE_RULE
from kernelscope.model.source import SourceMatch
from kernelscope.sources.find import Finder
from kernelscope.sources.index import SourceIndex


def _where(row: dict[str, Any], found: SourceMatch) -> str:
    """Where the finder put a name against the file it was drawn from (the label's ``source``, ``pkg==v:path``):
    ``drawn`` (resolved there or to a copy listed with it), ``elsewhere`` (resolved to another file: confidently
    wrong), ``ambiguous``, ``not found``."""
    drawn = re.sub(r":\d+$", "", row.get("source", "").partition(":")[2])
    if found.status == "resolved" and found.location is not None:
        paths = [d.path for d in (found.location, *found.copies)]
        return "drawn" if any(drawn.endswith(p) or p.endswith(drawn) for p in paths) else "elsewhere"
    return "ambiguous" if found.status == "ambiguous" else "not found"


def _pct(k: int, n: int) -> str:
    return f"{k}/{n} ({k / n:.1%})" if n else "0/0"


def measure(repos: list[Path], label_files: list[Path]) -> list[str]:
    """Markdown lines: per labelled file, kind and category from the name and from name plus source, then what
    changed."""
    with tempfile.TemporaryDirectory() as tmp:
        index = SourceIndex(Path(tmp) / "index.sqlite")
        index.index(repos)
        finder = Finder(index, repos)
        lines = [
            f"Sources indexed: {', '.join(f'`{r.name}`' for r in repos)}.",
            "",
            "| labels | Triton names | resolved | kind, name only | kind, name and source | category, name only | "
            "category, name and source | category decided by the source: right / wrong | "
            "found where drawn / elsewhere (confidently wrong) / ambiguous / not found |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        changes: Counter[tuple[str, str, str]] = Counter()
        for path in label_files:
            rows = [r for r in jsonl(path) if r["kind"] == "triton"]
            names = [r["name"] for r in rows]
            named = classify(names)
            found = finder.find(names)
            by_source = [(r, f) for r, f in zip(rows, found, strict=True) if f.category_rule.startswith(SOURCE_RULE)]
            right = sum(f.category == r["category"] for r, f in by_source)
            cells = [
                _pct(sum(getattr(got, field) == r[field] for r, got in zip(rows, answers, strict=True)), len(rows))
                for field in ("kind", "category")
                for answers in (named, found)
            ]
            where = Counter(_where(r, f) for r, f in zip(rows, found, strict=True))
            lines.append(
                f"| `{path.name}` | {len(rows)} | {sum(f.status == 'resolved' for f in found)} | "
                f"{' | '.join(cells)} | {right} / {len(by_source) - right} | "
                f"{' / '.join(str(where[w]) for w in ('drawn', 'elsewhere', 'ambiguous', 'not found'))} |"
            )
            for (r, f), n in zip(zip(rows, found, strict=True), named, strict=True):
                if f.category != n.category:
                    label = r["category"]
                    verdict = "fixed" if f.category == label else "broke" if n.category == label else "other"
                    changes[(verdict, f.category_rule, f"{n.category}→{f.category}")] += 1
        index.close()
    if changes:
        lines += ["", "Changed by the source (verdict against the label, rule, name → source: names):"]
        lines += [f"- {v}, `{rule}`, {move}: {k}" for (v, rule, move), k in sorted(changes.items())]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, action="append", required=True, help="an unpacked source package")
    ap.add_argument("--labels", type=Path, action="append", required=True, help="a labelled JSONL set")
    ap.add_argument("--title", default="Identity from the kernel's source")
    ap.add_argument("--results", action="store_true", help="append to bench/RESULTS.md")
    a = ap.parse_args()
    publish(measure(a.repo, a.labels), a.title, a.results)


if __name__ == "__main__":
    main()
