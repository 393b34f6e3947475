"""Ingest benchmark: kscope's kernel table vs a bare typed JSON decode vs HolisticTraceAnalysis.

Method
------
1. Trace. A Kineto trace of ``--events`` kernel events (default 1.5M) is generated once and cached under
   ``--workdir`` (keyed by event count, seed and args profile). Every event is a REAL kernel event of
   the H100 trace ``tests/data/kineto/h100_transformer_compile.json.gz`` (108 kernels, 12 names, copied
   there from the shared corpus; bench time never reads the corpus): the source kernels are replayed in
   order, pass after pass, with their real names, durations, grid/block and args, and the real
   end-to-start gaps between them. What changes: timestamps are shifted (each pass follows the last),
   correlation ids are fresh (unique, increasing), and about 20% of the kernels (seeded RNG) move to a
   second stream (tid/stream 20) where they start inside the then-running stream-7 kernel, so the two
   streams overlap. Only kernel events are written (no CPU ops, no runtime events, no ProfilerStep:
   HTA then filters nothing). The document keeps Kineto's shape: the source header keys before and
   after ``traceEvents``, ``deviceProperties``, ``"distributedInfo": {"rank": 0}`` with the space HTA's
   rank regex needs, compact separators, one event per line.
   Args profiles (``--args``): ``full`` keeps all 13 real kernel args (about 418 B/event, 630 MB at
   1.5M); ``lean`` (default) keeps the five args the floor decodes and HTA uses (device, stream,
   correlation, grid, block) and drops ``External id``, ``queued``, ``context``, ``registers per
   thread``, ``shared memory``, ``blocks per SM``, ``warps per SM`` and ``est. achieved occupancy %``
   (about 255 B/event, ~380 MB), the closest honest match to the ~350 MB the issue targets.
2. Tools, each in a fresh ``python`` subprocess (this file with ``--child``), on a warm page cache
   (the driver reads the file once before the first run):
   floor  -- ``msgspec.json.decode(open(f).read(), type=Trace)``, a Struct of exactly
             ph/cat/name/pid/tid/ts/dur/args(device, stream, correlation, grid, block); after the timed
             part it sums ``dur`` of ``cat == "kernel"`` events (math.fsum) as the independent check;
   floor-nogc -- the same with ``gc.disable()`` first: one decode that keeps millions of GC-tracked
             objects alive makes CPython's cycle collector re-scan them over and over (about 5x the decode
             itself here), so this is the true cost of the decode and the stricter floor;
   kscope -- ``kernelscope.api.gap_report([path])``, what ``kscope gap`` runs: sniff, streamed columnar
             read (one worker process per CPU on byte ranges of the plain file), aggregation, end to end;
   hta    -- ``TraceAnalysis(trace_dir=dir)`` (parse) + ``get_gpu_kernel_breakdown(visualize=False)``,
             on a directory that holds only the trace, with ``HTA_DISABLE_NS_ROUNDING=1``: by default HTA
             rounds every ``ts`` up and every end down to a whole microsecond (two per-row Python lambdas),
             which costs it time and shifts per-kernel sums by up to 1 us per launch (6.5% here), so
             with it on no exact comparison is possible; off, HTA does strictly less work, which makes
             the kscope-vs-HTA ratio conservative. ``--hta-rounding`` times HTA's default instead.
   Seconds are the child's own ``perf_counter`` around the work (imports excluded, reported apart);
   peak RSS is the child's ``getrusage(RUSAGE_SELF).ru_maxrss`` (its high-water mark, so the whole
   interpreter is included), plus ``RUSAGE_CHILDREN`` should a tool fork. With ``--runs N`` the best
   time and the highest RSS of the N runs are kept.
3. Checks: kscope's total kernel time equals the floor's independent sum to 1e-6 relative; kscope's
   per-kernel sums equal HTA's for every HTA row that is not folded into ``others``.

Usage: ``python bench/ingest.py [--events 1500000] [--workdir bench/_work] [--runs 1] [--args lean|full]``;
``--tools floor,kscope`` runs a subset, ``--no-results`` leaves bench/RESULTS.md alone.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import itertools
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
from _common import RESULTS, ROOT, machine, write_results

SOURCE_NAME = "h100_transformer_compile.json.gz"
SOURCE = ROOT / "tests" / "data" / "kineto" / SOURCE_NAME
CORPUS = Path("/work/shared/corpus/traces") / SOURCE_NAME  # only to seed tests/data once
DATE = "2026-11-22"
SIDE_STREAM = 20
SIDE_SHARE = 0.2
LEAN_ARGS = ("device", "stream", "correlation", "grid", "block")
TOOLS = ("floor", "floor-nogc", "kscope", "hta")
TARGET_HTA_SPEEDUP = 30.0
TARGET_FLOOR_RATIO = 1.3


# --------------------------------------------------------------------------------------------- trace


def _source_path() -> Path:
    """The real H100 trace: the package's bundled copy if the lead added one, else tests/data (seeded once)."""
    for cand in (ROOT / "kernelscope" / "data" / SOURCE_NAME, ROOT / "kernelscope" / "data" / "kineto" / SOURCE_NAME):
        if cand.exists():
            return cand
    if not SOURCE.exists():
        if not CORPUS.exists():
            sys.exit(f"{SOURCE} is missing and {CORPUS} is not there to copy it from")
        SOURCE.parent.mkdir(parents=True, exist_ok=True)
        SOURCE.write_bytes(CORPUS.read_bytes())
    return SOURCE


def _us(ns: int) -> str:
    """Kineto's microsecond float with nanosecond fraction, written exactly from integer ns."""
    return f"{ns // 1000}.{ns % 1000:03d}"


def generate(path: Path, events: int, seed: int, args_profile: str) -> None:
    """Write the synthetic trace (see the module docstring) to ``path`` atomically."""
    import random

    doc = json.loads(gzip.decompress(_source_path().read_bytes()))
    kernels = sorted((e for e in doc["traceEvents"] if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    if not kernels:
        sys.exit("the source trace has no kernel events")
    dur_ns = [round(e["dur"] * 1000) for e in kernels]
    gaps = [max(0, round((b["ts"] - a["ts"] - a["dur"]) * 1000)) for a, b in itertools.pairwise(kernels)]
    gaps.append(sorted(gaps)[len(gaps) // 2] if gaps else 1000)  # between passes: the median real gap
    sep = (",", ":")
    # per source kernel: the JSON text before "ts" and the args text after "correlation" (both constant)
    heads, tails = [], []
    for e in kernels:
        a = e.get("args", {})
        if args_profile == "lean":
            a = {k: a[k] for k in LEAN_ARGS if k in a}
        rest = {k: v for k, v in a.items() if k not in ("stream", "correlation", "External id")}
        heads.append('{"ph":"X","cat":"kernel","name":' + json.dumps(e["name"]) + ',"pid":' + json.dumps(e["pid"]))
        tails.append(("," + json.dumps(rest, separators=sep)[1:]) if rest else "}")
    full_ext = args_profile == "full"
    rng = random.Random(seed)
    t0 = round(kernels[0]["ts"] * 1000)
    main_t, side_end, last_main = t0, 0, (t0, 1)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write("{\n")
        for key, value in doc.items():
            if key == "traceEvents":
                f.write('"distributedInfo": {"rank": 0},\n"traceEvents":[\n')
                buf: list[str] = []
                for i in range(events):
                    j = i % len(kernels)
                    d = dur_ns[j]
                    if rng.random() < SIDE_SHARE:  # side stream: start inside the running main kernel
                        stream = SIDE_STREAM
                        start = max(side_end, last_main[0] + rng.randrange(last_main[1]))
                        side_end = start + d
                    else:
                        stream = 7
                        start = main_t
                        last_main = (start, max(d, 1))
                        main_t = start + d + gaps[j]
                    corr = 1000 + 2 * i
                    ext = f'"External id":{i + 1},' if full_ext else ""
                    buf.append(
                        f'{heads[j]},"tid":{stream},"ts":{_us(start)},"dur":{_us(d)},"args":{{{ext}'
                        f'"stream":{stream},"correlation":{corr}{tails[j]}}}'
                    )
                    if len(buf) == 10000:
                        f.write(",\n".join(buf) + (",\n" if i + 1 < events else "\n"))
                        buf = []
                if buf:
                    f.write(",\n".join(buf) + "\n")
                f.write("],\n")
            else:
                f.write(json.dumps(key) + ":" + json.dumps(value, separators=sep) + ",\n")
        f.write('"generator":"kernelscope bench/ingest.py"\n}\n')
    tmp.replace(path)


def trace_for(workdir: Path, events: int, seed: int, args_profile: str) -> Path:
    """The cached trace, alone in its own directory (HTA loads every .json/.gz of ``trace_dir``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    ignore = workdir / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")
    d = workdir / f"kineto_{events}_s{seed}_{args_profile}"
    d.mkdir(exist_ok=True)
    path = d / "trace.json"
    if not path.exists():
        t = time.perf_counter()
        print(f"generating {path} ({events} kernel events, args={args_profile}) ...", flush=True)
        generate(path, events, seed, args_profile)
        print(f"  {path.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - t:.1f} s", flush=True)
    return path


# --------------------------------------------------------------------------------------------- children


def _rss_mb() -> tuple[float, float]:
    """(self, children) peak RSS in MB; Linux reports ru_maxrss in KiB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, kids


Scalar = int | float | str | None


class FloorArgs(msgspec.Struct):
    device: Scalar = None
    stream: Scalar = None
    correlation: Scalar = None
    grid: list[int] | None = None
    block: list[int] | None = None


class FloorEvent(msgspec.Struct):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: Scalar = None
    tid: Scalar = None
    ts: float = 0.0
    dur: float = 0.0
    args: FloorArgs | None = None


class Trace(msgspec.Struct):
    """The floor's schema: the whole document, only the fields a kernel table needs."""

    traceEvents: list[FloorEvent]


def child_floor(path: Path, nogc: bool = False) -> dict[str, Any]:
    t_imp = time.perf_counter()
    if nogc:
        gc.disable()
    t0 = time.perf_counter()
    data = path.read_bytes()
    trace = msgspec.json.decode(data, type=Trace)
    t1 = time.perf_counter()
    kernels = [e for e in trace.traceEvents if e.cat == "kernel"]
    return {
        "seconds": t1 - t0,
        "import_s": t0 - t_imp,
        "events": len(trace.traceEvents),
        "kernels": len(kernels),
        "kernel_time_us": math.fsum(e.dur for e in kernels),
        "summary": f"{len(trace.traceEvents)} events decoded, {len(kernels)} kernels",
    }


def child_kscope(path: Path) -> dict[str, Any]:
    t_imp = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    from kernelscope.api import gap_report

    t0 = time.perf_counter()
    res = gap_report([path])
    t1 = time.perf_counter()
    top, tot = res.kernels[0], res.totals
    return {
        "seconds": t1 - t0,
        "import_s": t0 - t_imp,
        "kernel_time_us": tot.kernel_time_us,
        "launches": tot.launches,
        "per_kernel_us": {r.name: r.total_us for r in res.kernels},
        "summary": (
            f"top: {top.name[:60]} calls={top.calls} total={top.total_us:.1f}us ({top.pct:.1f}%); "
            f"totals: launches={tot.launches} kernels={tot.kernels} kernel={tot.kernel_time_us:.1f}us "
            f"busy={tot.busy_time_us:.1f}us wall={tot.wall_time_us:.1f}us devices={tot.devices}"
        ),
    }


def child_hta(path: Path) -> dict[str, Any]:
    t_imp = time.perf_counter()
    from hta.trace_analysis import TraceAnalysis

    t0 = time.perf_counter()
    analyzer = TraceAnalysis(trace_dir=str(path.parent))
    t1 = time.perf_counter()
    kernel_type_df, kernel_metrics_df = analyzer.get_gpu_kernel_breakdown(visualize=False)
    t2 = time.perf_counter()
    rows = {str(n): float(s) for n, s in zip(kernel_metrics_df["name"], kernel_metrics_df["sum (us)"], strict=True)}
    types = {str(n): float(s) for n, s in zip(kernel_type_df["kernel_type"], kernel_type_df["sum"], strict=True)}
    return {
        "seconds": t2 - t0,
        "import_s": t0 - t_imp,
        "parse_s": t1 - t0,
        "breakdown_s": t2 - t1,
        "per_kernel_us": rows,
        "summary": f"{len(rows)} kernel rows ({', '.join(f'{k}={v:.1f}us' for k, v in types.items())})",
    }


def run_child(tool: str, path: Path) -> None:
    out = {
        "floor": child_floor,
        "floor-nogc": lambda p: child_floor(p, nogc=True),
        "kscope": child_kscope,
        "hta": child_hta,
    }[tool](path)
    out["rss_mb"], out["rss_children_mb"] = _rss_mb()
    print("RESULT " + json.dumps(out), flush=True)


# --------------------------------------------------------------------------------------------- driver


def spawn(tool: str, path: Path, log: Path, hta_rounding: bool = False) -> dict[str, Any]:
    """Run one tool in a fresh interpreter; its stderr (HTA logs a lot) goes to ``log``."""
    env = dict(os.environ)
    if tool == "hta" and not hta_rounding:
        env["HTA_DISABLE_NS_ROUNDING"] = "1"
    t = time.perf_counter()
    with log.open("a") as err:
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child", tool, str(path)],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            cwd=ROOT,
            env=env,
            check=False,
        )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        sys.exit(f"{tool} failed (exit {proc.returncode}); see {log}")
    res: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    res["process_s"] = time.perf_counter() - t
    return res


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def checks(res: dict[str, dict[str, Any]]) -> list[str]:
    out = []
    ks = res.get("kscope")
    if ks and "floor" in res:
        fl = res["floor"]
        r = _rel(ks["kernel_time_us"], fl["kernel_time_us"])
        ok = r <= 1e-6 and ks["launches"] == fl["kernels"]
        out.append(
            f"kernel time: kscope {ks['kernel_time_us']:.3f} us vs independent sum of dur "
            f"{fl['kernel_time_us']:.3f} us (rel diff {r:.1e}); launches {ks['launches']} vs {fl['kernels']} "
            f"kernel events -> {'OK' if ok else 'FAIL'}"
        )
    if ks and "hta" in res:
        hta_rows = {k: v for k, v in res["hta"]["per_kernel_us"].items() if k != "others"}
        worst, missing = 0.0, []
        for name, us in hta_rows.items():
            if name in ks["per_kernel_us"]:
                worst = max(worst, _rel(us, ks["per_kernel_us"][name]))
            else:
                missing.append(name)
        folded = len(ks["per_kernel_us"]) - len(hta_rows)
        ok = not missing and worst <= 1e-6
        out.append(
            f"per-kernel sums: {len(hta_rows)} HTA rows compared ({folded} kscope kernels folded into HTA's "
            f"'others'), worst rel diff {worst:.1e}, {len(missing)} HTA names unknown to kscope -> "
            f"{'OK' if ok else 'FAIL'}"
        )
    return out


def verdicts(res: dict[str, dict[str, Any]], size_mb: float) -> list[str]:
    out = []
    ks = res.get("kscope")
    if not ks:
        return out
    if "hta" in res:
        x = res["hta"]["seconds"] / ks["seconds"]
        verdict = "holds" if x >= TARGET_HTA_SPEEDUP else "MISSED"
        out.append(f"kscope >= {TARGET_HTA_SPEEDUP:g}x faster than HTA: {x:.1f}x -> {verdict}")
    if "floor" in res:
        x = ks["seconds"] / res["floor"]["seconds"]
        verdict = "holds" if x <= TARGET_FLOOR_RATIO else "MISSED"
        out.append(f"kscope <= {TARGET_FLOOR_RATIO}x the bare decode: {x:.2f}x -> {verdict}")
    if "floor-nogc" in res:
        x = ks["seconds"] / res["floor-nogc"]["seconds"]
        verdict = "holds" if x <= TARGET_FLOOR_RATIO else "MISSED"
        out.append(f"kscope <= {TARGET_FLOOR_RATIO}x the bare decode with the cycle GC off: {x:.2f}x -> {verdict}")
    rss = ks["rss_mb"] + ks["rss_children_mb"]
    verdict = "holds" if rss <= size_mb else "MISSED"
    out.append(f"kscope peak RSS <= file size: {rss:.0f} MB vs {size_mb:.0f} MB -> {verdict}")
    return out


def table(res: dict[str, dict[str, Any]]) -> list[str]:
    ks = res.get("kscope", {}).get("seconds")
    lines = [
        "| tool | seconds | peak RSS MB | ratio vs kscope | imports s | process s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    labels = {
        "floor": "floor (msgspec typed decode)",
        "floor-nogc": "floor, cycle GC off",
        "kscope": "kscope gap_report()",
        "hta": "HTA 0.5.0 breakdown",
    }
    for tool, r in res.items():
        ratio = f"{r['seconds'] / ks:.2f}x" if ks else "-"
        rss = r["rss_mb"] + r["rss_children_mb"]
        extra = f" (parse {r['parse_s']:.1f} + breakdown {r['breakdown_s']:.1f})" if tool == "hta" else ""
        lines.append(
            f"| {labels[tool]} | {r['seconds']:.2f}{extra} | {rss:.0f} | {ratio} | {r['import_s']:.2f} "
            f"| {r['process_s']:.1f} |"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    ap.add_argument("--events", type=int, default=1_500_000)
    ap.add_argument("--workdir", type=Path, default=ROOT / "bench" / "_work")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--args", choices=("lean", "full"), default="lean", dest="args_profile")
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset of floor,kscope,hta")
    ap.add_argument(
        "--hta-rounding", action="store_true", help="let HTA round ts/end to whole us (its default; see docstring)"
    )
    ap.add_argument("--no-results", action="store_true", help="do not write bench/RESULTS.md")
    ap.add_argument("--child", nargs=2, metavar=("TOOL", "PATH"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        run_child(a.child[0], Path(a.child[1]))
        return
    tools = [t for t in TOOLS if t in a.tools.split(",")]
    path = trace_for(a.workdir.resolve(), a.events, a.seed, a.args_profile)
    size_mb = path.stat().st_size / 1e6
    with path.open("rb") as f:  # warm the page cache so no tool pays for the disk
        while f.read(64 << 20):
            pass
    load = os.getloadavg()
    log = a.workdir.resolve() / "children.log"
    results: dict[str, dict[str, Any]] = {}
    for run in range(a.runs):
        for tool in tools:
            print(f"run {run + 1}/{a.runs}: {tool} ...", flush=True)
            r = spawn(tool, path, log, a.hta_rounding)
            print(f"  {r['seconds']:.2f} s, peak RSS {r['rss_mb']:.0f} MB; {r['summary']}", flush=True)
            best = results.get(tool)
            if best is None or r["seconds"] < best["seconds"]:
                if best is not None:
                    r["rss_mb"] = max(r["rss_mb"], best["rss_mb"])
                results[tool] = r
            else:
                best["rss_mb"] = max(best["rss_mb"], r["rss_mb"])
    events = results["floor"]["events"] if "floor" in results else a.events
    lines = table(results)
    chk, verd = checks(results), verdicts(results, size_mb)
    print()
    print(f"trace: {path} ({size_mb:.1f} MB, {events} events, {a.events} kernels, args={a.args_profile})")
    print("\n".join(lines))
    if "kscope" in results:
        for ln in results["kscope"]["summary"].split("; "):
            print("kscope " + ln)
    print("\n".join(chk + verd))
    if a.no_results:
        return
    m = machine(("msgspec", "numpy", "psutil", "pandas", "HolisticTraceAnalysis"))
    heading = f"## Ingest: {a.events} kernel events, args={a.args_profile} ({DATE})"
    section = "\n".join(
        [
            heading,
            "",
            f"`python bench/ingest.py --events {a.events} --runs {a.runs} --args {a.args_profile}` "
            "(method: docstring of bench/ingest.py).",
            "",
            f"- machine: {m['cpus']} CPUs ({m['cpu']}), {m['ram']} RAM, {m['os']}; Python {m['python']}",
            f"- packages: {m['packages']}",
            f"- trace: {size_mb:.1f} MB uncompressed Kineto JSON, {events} events ({a.events} kernels, 2 streams), "
            f"built from the real kernels of `tests/data/kineto/{SOURCE_NAME}`",
            f"- best of {a.runs} run(s), each tool in a fresh subprocess, warm page cache; seconds exclude imports; "
            f"load average {load[0]:.2f} at start (other work on the machine inflates all tools alike)",
            "- HTA "
            + (
                "with its default ns rounding"
                if a.hta_rounding
                else "with HTA_DISABLE_NS_ROUNDING=1 (less work than its default)"
            ),
            "",
            *lines,
            "",
            *(f"- {ln}" for ln in chk + verd),
            "",
        ]
    )
    write_results(section, heading)
    print(f"\nwrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
