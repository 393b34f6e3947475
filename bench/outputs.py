"""Byte-for-byte output check: every command on the bundled data and test fixtures, before and after a change.

A refactor that claims "no behaviour change" proves it here: ``python bench/outputs.py snapshot DIR`` at the
old commit, ``python bench/outputs.py compare DIR`` at the new one. Each case runs ``kscope`` in a fresh
process (terminal width fixed, colour off) and keeps its exit code, stdout, stderr and any files it wrote
(``report`` folders); the only things scrubbed are the report's creation time and the temporary folder's path.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = "kernelscope/data/demo"
MI = f"{DEMO}/mi350x"
K_EAGER = "tests/data/kineto/h100_transformer_eager.json.gz"
K_COMPILE = "tests/data/kineto/h100_transformer_compile.json.gz"
K_PREFILL = f"{DEMO}/h100_prefill_decode.json.gz"
K_TRAIN = f"{DEMO}/h100_train_steps.json.gz"
NCU = "tests/data/ncu"
CO = "tests/data/codeobj"
ATT = "tests/data/att"
NSYS = "tests/data/nsys/h100_transformer_eager.sqlite"


def _files(folder: str, pattern: str) -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / folder).rglob(pattern))


# name -> argv after `kscope`; "{out}" is a fresh empty folder of the case's own
CASES: dict[str, list[str]] = {
    "gap-eager": ["gap", K_EAGER, "--top", "0"],
    "gap-eager-json": ["gap", K_EAGER, "--json"],
    "gap-compile-csv": ["gap", K_COMPILE, "--csv"],
    "gap-prefill-md": ["gap", K_PREFILL, "--markdown", "--phase-by", "prefill|decode"],
    "gap-train-window": ["gap", K_TRAIN, "--window", "2", "--json", "--include-memory"],
    "gap-train-function": ["gap", K_TRAIN, "--group-by", "function", "--json"],
    "gap-train-category": ["gap", K_TRAIN, "--group-by", "category"],
    "gap-ranks-per-rank": ["gap", K_EAGER, K_COMPILE, "--per-rank", "--json"],
    "gap-nsys": ["gap", NSYS, "--json"],
    "gap-ncu-csv": ["gap", f"{NCU}/h100_gemm_softmax_ln_details.csv.gz", "--json"],
    "gap-ncu-rep": ["gap", f"{NCU}/h100_softmax_fast.ncu-rep", "--json"],
    "gap-rocprof-trace": ["gap", *_files(f"{MI}/rmsnorm", "*kernel_trace.csv"), "--json"],
    "gap-rocprof-stats": ["gap", *_files(f"{MI}/rmsnorm", "*kernel_stats.csv"), "--json"],
    "gap-rocpd": ["gap", *_files("tests/data/rocpd", "*.db"), "--json"],
    "gap-rocprof-json": ["gap", *_files("tests/data/rocprof_json", "*.json"), "--json"],
    "gap-missing": ["gap", "no/such/file.json"],
    "diff": ["diff", K_EAGER, K_COMPILE, "--json"],
    "diff-table": ["diff", K_EAGER, K_COMPILE, "--top", "0"],
    "diff-md": ["diff", K_TRAIN, K_TRAIN, "--markdown"],
    "classify": ["classify", "nvjet_tst_192x8_64x8_4x1_v_bz_TNT", "_ZN5aiter19fmha_fwd_hd128_bf16E", "--json"],
    "classify-file": ["classify", "--file", "tests/data/names/heldout.jsonl", "--json"],
    "isa": ["isa", CO, "--json"],
    "isa-table": ["isa", CO],
    "isa-csv": ["isa", CO, "--csv"],
    "fit": ["fit", f"{CO}/mm_gfx942.hsaco", f"{CO}/mm_sm90.cubin", "--json"],
    "fit-table": ["fit", f"{CO}/softmax_gfx942.hsaco", f"{CO}/h100_triton_mm_k_sm90a.cubin"],
    "att": ["att", f"{ATT}/rmsnorm", "--json"],
    "att-all-md": ["att", ATT, "--markdown"],
    "att-table": ["att", f"{ATT}/flash_attn_func"],
    "att-code-only": ["att", ATT, "--code-only", "--json"],
    "ncu-rep": ["ncu", f"{NCU}/h100_triton_softmax_mm.ncu-rep", "--json"],
    "ncu-rep-table": ["ncu", f"{NCU}/h100_softmax_slow.ncu-rep"],
    "ncu-csv-md": ["ncu", f"{NCU}/h100_triton_source_sass.csv.gz", "--markdown"],
    "hw": ["hw", "--json"],
    "hw-h100": ["hw", "H100 SXM"],
    "roofline-trace": ["roofline", K_EAGER, "--json"],
    "roofline-given": ["roofline", "--gpu", "H100 SXM", "--flops", "2*M*N*K", "--bytes", "2*(M*K+K*N+M*N)",
                       "--var", "M=4096", "--var", "N=4096", "--var", "K=4096", "--time-us", "200", "--json"],
    "shapes": ["shapes", K_EAGER, "--json"],
    "replay-list": ["replay", K_EAGER, "--list", "--json"],
    "replay-script": ["replay", K_EAGER, "--op", "aten::addmm", "-o", "-"],
    "suggest": ["suggest", K_EAGER, "--json"],
    "suggest-all": ["suggest", K_PREFILL, "--ncu", f"{NCU}/h100_triton_softmax_mm.ncu-rep", "--att", f"{ATT}/rmsnorm",
                    "--isa", CO, "--markdown"],
    "report": ["report", K_EAGER, "--code", CO, "--ncu", f"{NCU}/h100_softmax_slow.ncu-rep", "--att", f"{ATT}/rmsnorm",
               "-o", "{out}/r", "--json"],
    "report-gap-only": ["report", K_TRAIN, "-o", "{out}/r"],
    "demo": ["demo", "--json"],
    "replay-kernel": ["replay", K_EAGER, "--kernel", "softmax", "-o", "-"],
    "task-from-gap": ["init", "{out}/ws", "&&", "git", "init", "-q", "{out}/repo", "&&",
                      "git", "-C", "{out}/repo", "-c", "user.name=k", "-c", "user.email=k@k", "commit", "-q",
                      "--allow-empty", "-m", "base", "&&",
                      "task", "new", "t1", "--from-gap", K_EAGER, "-w", "{out}/ws", "--repo", "{out}/repo",
                      "--baseline-ref", "HEAD", "--eval-command", "true", "--allowed", "src/*", "--timeout", "60",
                      "--direction", "lower", "--metric", "time_us", "--json"],
    "memory": ["init", "{out}/ws", "&&", "memory", "init", "-w", "{out}/ws", "&&",
               "memory", "new", "-w", "{out}/ws", "--category", "tile_shape", "--author", "a", "--title", "t", "&&",
               "memory", "new", "-w", "{out}/ws", "--category", "fusion", "--author", "b", "--task", "t1", "--json",
               "&&", "memory", "set", "1", "-w", "{out}/ws", "--add-evidence", "e", "i", "a", "evidence[-1].source=s",
               'performance={"metric": "time_us", "direction": "lower", "status": "improved", "speedup": 1.5}',
               "isa_metrics.after.vgpr=88", "pitfalls+=p", 'search_log+={"what": "w", "result": "r"}', "--json", "&&",
               "memory", "mask", "2", "-w", "{out}/ws", "--by", "c", "--reason", "noise", "&&",
               "memory", "list", "-w", "{out}/ws", "&&", "memory", "summary", "-w", "{out}/ws", "&&",
               "memory", "unmask", "2", "-w", "{out}/ws", "--by", "c", "--json", "&&",
               "memory", "list", "-w", "{out}/ws", "--include-masked", "--json", "&&",
               "memory", "summary", "-w", "{out}/ws", "--json", "&&", "memory", "show", "v1", "-w", "{out}/ws", "&&",
               "memory", "latest", "-w", "{out}/ws", "--category", "fusion", "--json", "&&",
               "memory", "init", "-w", "{out}/ws"],
    "memory-errors": ["init", "{out}/ws", "&&", "memory", "new", "-w", "{out}/ws", "--category", "other",
                      "--author", "a", "&&", "memory", "set", "1", "-w", "{out}/ws", "performance.speedup=fast", "&&",
                      "memory", "set", "1", "-w", "{out}/ws", "performance.speedup=2", "&&",
                      "memory", "set", "1", "-w", "{out}/ws", "evidence+={}", "&&",
                      "memory", "set", "1", "-w", "{out}/ws", "category=faster", "&&",
                      "memory", "set", "1", "-w", "{out}/ws", "commit=main", "&&",
                      "memory", "set", "1", "-w", "{out}/ws", "title= ", "&&",
                      "memory", "set", "1", "-w", "{out}/ws", "notes=x", "&&",
                      "memory", "set", "1", "-w", "{out}/ws", "version=3", "&&",
                      "memory", "set", "1", "-w", "{out}/ws",
                      'quality_gate={"passed": true, "checks": [{"name": "n", "passed": false}]}', "&&",
                      "memory", "mask", "1", "-w", "{out}/ws", "--by", "b", "--reason", " ", "&&",
                      "memory", "new", "-w", "{out}/ws", "--category", "faster", "--author", "a", "&&",
                      "memory", "show", "9", "-w", "{out}/ws", "&&",
                      "memory", "list", "-w", "{out}/ws", "--category", "x"],
    "gap-bad-group-by": ["gap", K_TRAIN, "--group-by", "size"],
    "diff-bad-group-by": ["diff", K_TRAIN, K_TRAIN, "--group-by", "size"],
    "help-gap": ["gap", "--help"],
    "help-diff": ["diff", "--help"],
    "help-memory-new": ["memory", "new", "--help"],
    "help-profile": ["profile", "--help"],
    "help-task-new": ["task", "new", "--help"],
    "profile-bad": ["gap", "tests/data/names/heldout.jsonl", "--format", "profile-json"],
}

_SCRUB = [
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC"), "<created>"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d"), "<time>"),  # kscope memory list
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"\b[0-9a-f]{40}\b"), "<sha>"),
    (re.compile(r"\(commit `[0-9a-f]+`"), "(commit `<sha>`"),
]


def _scrub(text: str, out: str) -> str:
    text = text.replace(out, "<out>").replace(f'"PYTHONPATH": "{ROOT}"', '"PYTHONPATH": "<root>"')
    text = text.replace(sys.prefix, "<venv>").replace(str(ROOT / "kernelscope"), "<pkg>")
    for pat, rep in _SCRUB:
        text = pat.sub(rep, text)
    return text


def run_case(name: str, argv: list[str]) -> dict[str, str]:
    with tempfile.TemporaryDirectory(prefix="kscope-out-") as out:
        args = [a.replace("{out}", out) for a in argv]
        # a fixed environment: `task new` records it, and checkouts differ in paths only
        env = {"PATH": os.environ["PATH"], "HOME": out, "LANG": "C.UTF-8", "COLUMNS": "160", "NO_COLOR": "1",
               "TERM": "dumb", "KSCOPE_INDEX": f"{out}/index.db"}  # fmt: skip
        env["PYTHONPATH"] = str(ROOT)  # this script's own checkout is measured (a base commit's copy too)
        got = {"rc": "", "stdout": "", "stderr": ""}
        while args:  # "&&" separates steps; "git" steps run git, the others kscope
            step, args = (args[: args.index("&&")], args[args.index("&&") + 1 :]) if "&&" in args else (args, [])
            cmd = step if step[0] == "git" else [sys.executable, "-m", "kernelscope", *step]
            p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
            got["rc"] += f"{p.returncode}\n"
            got["stdout"] += _scrub(p.stdout, out)
            got["stderr"] += _scrub(p.stderr, out)
        for f in sorted(Path(out).rglob("*")):
            if f.is_file() and f.name != "index.db" and not any(p.startswith(".") for p in f.relative_to(out).parts):
                data = f.read_bytes()
                body = data.decode("utf-8", "replace") if f.suffix != ".png" else f"<png {len(data) > 0}>"
                got[f"file:{f.relative_to(out)}"] = _scrub(body, out)
    return got


def _save(root: Path, name: str, got: dict[str, str]) -> None:
    d = root / name
    shutil.rmtree(d, ignore_errors=True)
    for key, text in got.items():
        f = d / key.replace("/", "__").replace(":", "_")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)


def _load(root: Path, name: str) -> dict[str, str]:
    d = root / name
    return {f.name: f.read_text() for f in sorted(d.iterdir())} if d.is_dir() else {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["snapshot", "compare"])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--only", default="", help="regex on case names")
    args = ap.parse_args()
    differ = 0
    for name, argv in CASES.items():
        if args.only and not re.search(args.only, name):
            continue
        got = run_case(name, argv)
        if args.mode == "snapshot":
            _save(args.dir, name, got)
            print(f"{name}: rc {got['rc']}, {sum(len(v) for v in got.values())} chars")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            _save(Path(tmp), name, got)
            new = _load(Path(tmp), name)
        old = _load(args.dir, name)
        if new == old:
            print(f"{name}: same")
            continue
        differ += 1
        print(f"{name}: DIFFERS")
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                lines = difflib.unified_diff(old.get(key, "").splitlines(), new.get(key, "").splitlines(),
                                             f"old/{key}", f"new/{key}", lineterm="", n=1)  # fmt: skip
                print("\n".join(list(lines)[:40]))
    if args.mode == "compare":
        print(f"{differ} case(s) differ" if differ else "all cases byte-identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
