"""Replay every fresh identity set's first measurement from git, and test a learned fallback against it.

Each fresh set (``bench/data/identity_fresh_names*.jsonl``) was scored once before any rule was changed
for it. ``FIRST`` names the commit whose classifier took that measurement (the commit that added the set
when it carried no rule change, else its parent). The replay checks each such commit out (``git worktree``),
scores the set with that classifier in a subprocess, and prints kind/category: it re-derives the first
measurements recorded in RESULTS.md from the code history instead of trusting the prose.

``--learned`` then asks whether a model trained on names could have done better than the rules did on
unseen names. For set N it trains a TF-IDF (word and character 3-5-gram) logistic regression on every name
labelled before N (``tests/data/names`` and the earlier fresh sets), and scores two policies over the
historical rule outputs: *fallback* (the model's category where the rules said ``other``/``unknown`` and
the model's probability reaches the threshold) and *override* (also where it disagrees with a rule at
probability ≥ max(threshold, 0.8)). Needs scikit-learn (``pip install scikit-learn``; not a kernelscope
dependency).
Usage: ``python bench/identity_history.py [--learned] [--results]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from _common import ROOT, jsonl, publish
from identity import FRESH, SETS

HEADING = "## Kernel identity: first measurements replayed from git, and a learned fallback (issue 16)"

# set -> the commit whose classifier took its first measurement (RESULTS.md names 18-27's; the rest are the
# parent of the commit that added the set together with its fixes, or the adding commit when it had none)
FIRST = {
    1: "e791436",
    2: "3f16f72~1",
    3: "3e20926~1",
    4: "1f58128~1",
    5: "1f58128~1",
    6: "f5c023e~1",
    7: "728b433~1",
    8: "0d137ba~1",
    9: "e088caa~1",
    10: "bb436a0~1",
    11: "307d118~1",
    12: "3edaca9~1",
    13: "3edaca9~1",
    14: "680b3b0~1",
    15: "e2b6bdb~1",
    16: "61a5353~1",
    17: "b4d5172~1",
    18: "3db2801",
    19: "58c0e20",
    20: "a1f51bd",
    21: "210963e",
    22: "cbefe98",
    23: "c9332ad",
    24: "2335f49",
    25: "d94791c",
    26: "e6612f3",
    27: "255c935",
    28: "b21f9ea",
    29: "dd3954d",
    30: "3a73d8e",
    31: "8f4a2a5",
    32: "6385653",
    33: "7478391",
    34: "0f97f08",
    35: "7e53804",
    36: "4576c2b",
    37: "a3e595a",
    38: "3da50c9",
    39: "97cc8ff",
    40: "184b079",
    41: "0ac396f",
    42: "75b5723",
    43: "cf544e0",
    44: "038fab4",
    45: "0d8145d",
    46: "7f01128",
    47: "87a6ac7",
    48: "4e5b484",
    49: "9d4f70f",
    50: "5826d3d",
    51: "e01ae9e",
    52: "ed4b69d",
    53: "f716ae0",
    54: "ca5aa3b",
    55: "9778b4a",
    56: "4127a8a",
    57: "5cb4d7e",
    58: "2ae85ba",
    59: "15eda8e",
    60: "637999a",
    61: "5b35853",
    62: "3bffb0b",
    63: "ce06835",
    64: "7a4f7ff",
    65: "5635a64",
    66: "2f9caa0",
    67: "3f2f4ab",
    68: "903cd2e",
    69: "00c5509",
    70: "abbd69a",
    71: "9e1c0bb",
    72: "bf9d671",
    73: "afb9112",
    74: "f9c55d0",
    75: "665a289",
    76: "91e638d",
    77: "075156a",
    78: "8b36236",
    79: "49bab6c",
}
# sets labelled together: the second was not "before" the first
TOGETHER = {5: 4, 13: 12}
UNKNOWN = ("other", "unknown")
TIMEOUT_S = 600  # a checkout or one set's scoring takes seconds; never let one hang the run

_SCORE = """
import json, sys
from kernelscope.identity import classify
rows = [json.loads(x) for x in open(sys.argv[1]) if x.strip()]
for g in classify([r["name"] for r in rows]):
    print(json.dumps([g.kind, g.category]))
"""


def set_path(n: int) -> Path:
    return FRESH / ("identity_fresh_names.jsonl" if n == 1 else f"identity_fresh_names_{n}.jsonl")


def replay(n: int, tmp: Path) -> list[tuple[str, str]]:
    """(kind, category) of set n's names by the classifier of its first-measurement commit."""
    tree = tmp / FIRST[n].replace("~", "_")  # one worktree per commit (sets 4 and 5, 12 and 13 share one)
    if not tree.exists():
        git = ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), FIRST[n]]
        subprocess.run(git, check=True, timeout=TIMEOUT_S)
    # cwd outside the repository, so the checked-out package, not the installed one, is imported
    out = subprocess.run(
        [sys.executable, "-c", _SCORE, str(set_path(n))],
        cwd=tmp,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
        timeout=TIMEOUT_S,
    ).stdout
    return [tuple(json.loads(x)) for x in out.splitlines()]  # type: ignore[misc]


def learned(
    history: dict[int, list[tuple[str, str]]], fresh: dict[int, list[dict[str, str]]], thresholds: list[float]
) -> list[str]:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_union

    from kernelscope.identity.classify import words
    from kernelscope.identity.demangle import demangle_all

    base = [r for p in sorted(SETS.glob("*.jsonl")) for r in jsonl(p)]
    names = [r["name"] for r in base] + [r["name"] for s in fresh.values() for r in s]
    text = {k: words(v.text) for k, v in demangle_all(names).items()}
    wins: Counter[tuple[str, float]] = Counter()
    lines = ["| set | names | rules (first) | " + " | ".join(f"fallback ≥{t} / override" for t in thresholds) + " |"]
    lines.append("|---|---:|---:|" + "---:|" * len(thresholds))
    for n, got in history.items():
        train = base + [r for m in FIRST if m < TOGETHER.get(n, n) for r in fresh[m]]
        vec = make_union(
            TfidfVectorizer(token_pattern=r"[a-z][a-z0-9]+", sublinear_tf=True),
            TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True, min_df=2),
        )
        model = LogisticRegression(C=10, max_iter=3000)
        model.fit(vec.fit_transform([text[r["name"]] for r in train]), [r["category"] for r in train])
        prob = model.predict_proba(vec.transform([text[r["name"]] for r in fresh[n]]))
        cells = []
        truth = [r["category"] for r in fresh[n]]
        rule = [c for _, c in got]
        right = sum(a == b for a, b in zip(rule, truth, strict=True))
        wins["rules", 0] += right
        for t in thresholds:
            fb = ov = 0
            for p, r, y in zip(prob, rule, truth, strict=True):
                guess, conf = model.classes_[p.argmax()], p.max()
                fall = guess if r in UNKNOWN and conf >= t else r
                fb += fall == y
                ov += (guess if conf >= max(t, 0.8) else fall) == y
            wins["fallback", t] += fb
            wins["override", t] += ov
            cells.append(f"{fb} / {ov}")
        lines.append(f"| {n} | {len(truth)} | {right} | " + " | ".join(cells) + " |")
    total = sum(len(fresh[n]) for n in history)

    def pct(k: int) -> str:
        return f"{k} ({k / total:.1%})"

    lines.append(
        f"| all | {total} | {pct(wins['rules', 0])} | "
        + " | ".join(f"{pct(wins['fallback', t])} / {pct(wins['override', t])}" for t in thresholds)
        + " |"
    )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--learned", action="store_true", help="also score the learned fallback (needs scikit-learn)")
    ap.add_argument("--results", action="store_true", help="record the section in RESULTS.md")
    args = ap.parse_args()
    history: dict[int, list[tuple[str, str]]] = {}
    fresh = {n: jsonl(set_path(n)) for n in FIRST}
    kind = cat = total = 0
    lines = [
        HEADING,
        "",
        f"Date {time.strftime('%Y-%m-%d')}. "
        f"Command: `python bench/identity_history.py{' --learned' if args.learned else ''}`. "
        "Each set scored by the classifier of the commit that took its first measurement (a git worktree of it), "
        "against the set's labels as they are now.",
        "",
        "| set | commit | names | kind | category |",
        "|---|---|---:|---:|---:|",
    ]
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            for n, commit in FIRST.items():
                got = history[n] = replay(n, tmp)
                truth = fresh[n]
                k = sum(g[0] == r["kind"] for g, r in zip(got, truth, strict=True))
                c = sum(g[1] == r["category"] for g, r in zip(got, truth, strict=True))
                kind, cat, total = kind + k, cat + c, total + len(truth)
                lines.append(f"| {n} | {commit} | {len(truth)} | {k / len(truth):.1%} | {c / len(truth):.1%} |")
                print(lines[-1], file=sys.stderr)  # progress: a worktree and a scoring run per set
    finally:  # the worktrees' folders are gone with the temporary directory; forget them
        subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], check=False, timeout=TIMEOUT_S)
    lines.append(f"| all | | {total} | {kind / total:.1%} | {cat / total:.1%} |")
    if args.learned:
        lines += [
            "",
            "Learned fallback (scikit-learn TF-IDF + logistic regression, trained for each set on the names labelled "
            "before it), categories right of each set's names: rules alone at their first measurement; *fallback*, the "
            "model where the rules said other/unknown at probability ≥ t; *override*, also against a rule at "
            "≥ max(t, 0.8).",
            "",
            *learned(history, fresh, [0.0, 0.3, 0.5, 0.7]),
        ]
    publish(lines, HEADING, args.results)


if __name__ == "__main__":
    main()
