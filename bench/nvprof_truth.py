"""nvprof's files read by kscope, against nvprof itself (``nvprof -i``, which reads a database back without a GPU).

nvprof is in Debian's non-free ``nvidia-profiler`` package (CUDA 11.8); ``nvprof -i FILE`` runs on a machine with
no GPU once its libraries (``libcupti11.8``, ``libaccinj64-11.8``, ``libcuinj64-11.8``) are on LD_LIBRARY_PATH.

    python bench/nvprof_truth.py --nvprof /path/to/nvprof DB.nvvp ... [--summaries LOG ...] [--traces CSV ...]

For each database: every kernel launch, copy and fill (name, duration, device, stream, correlation id) of
``readers/nvprof`` against nvprof's ``--print-gpu-trace`` (that CSV, and the printed trace, read back by
``readers/nvprof_trace``), and
``readers/nvprof_summary`` over nvprof's printed ``--print-gpu-summary`` against the launches (calls and totals per
kernel). For printed summaries found in the wild (no database beside them): nvprof's own arithmetic, calls x Avg = Time
and Min <= Avg <= Max per kernel, to the digits printed. For CSV traces found in the wild: every row of the table with a
time read as a kernel, copy or fill.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from kernelscope.model import numbers
from kernelscope.readers import detect, nvprof, nvprof_summary, nvprof_trace


def _nvprof(tool: str, db: Path, *args: str, csv_out: bool = True) -> str:
    cmd = [tool, "-i", str(db), "--demangling", "off", *(("-u", "ns", "--csv") if csv_out else ()), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True).stderr


def _trace(text: str) -> list[dict[str, str]]:
    rows = list(csv.DictReader(line for line in text.splitlines() if not line.startswith("==")))
    return rows[1:]  # units


def check_db(tool: str, db: Path) -> str:
    prof = nvprof.read(db)
    text = _nvprof(tool, db, "--print-gpu-trace")
    rows = _trace(text)
    if rows and "Duration" not in rows[0]:
        return f"| {db.name} | {len(prof.launches)} | metrics run: nvprof prints no durations | - | - | - | - |"
    ours = Counter((k.name, k.duration_ns, k.device, k.stream, k.correlation_id) for k in prof.launches)
    ours += Counter((m.name, m.duration_ns, m.device, m.stream, m.correlation_id) for m in prof.memory_ops)
    theirs = Counter(
        (
            r["Name"],
            round(float(r["Duration"])),
            int(r["Device"].rsplit("(", 1)[1].rstrip(")")),
            int(r["Stream"]),
            int(r["Correlation_ID"]),
        )
        for r in rows
    )
    with tempfile.TemporaryDirectory() as tmp:
        csv_trace = Path(tmp) / "trace.csv"
        csv_trace.write_text(text)
        back = nvprof_trace.read(csv_trace)
        again = Counter((k.name, k.duration_ns, k.device, k.stream, k.correlation_id) for k in back.launches)
        again += Counter((m.name, m.duration_ns, m.device, m.stream, m.correlation_id) for m in back.memory_ops)
        printed = Path(tmp) / "trace.txt"
        printed.write_text(_nvprof(tool, db, "--print-gpu-trace", csv_out=False))
        shown = nvprof_trace.read(printed)  # five significant digits, no GPU ordinal: launches matched by their ids
        ids = Counter((k.name, k.stream, k.correlation_id, k.grid_blocks, k.registers) for k in shown.launches)
        want = Counter((k.name, k.stream, k.correlation_id, k.grid_blocks, k.registers) for k in prof.launches)
        log = Path(tmp) / "summary.csv"
        log.write_text(_nvprof(tool, db, "--print-gpu-summary"))
        assert detect(log) == "nvprof-summary"
        printed = {s.name: (s.calls, round(s.total_ns)) for s in nvprof_summary.read(log).stats}
    per: dict[str, list[int]] = {}
    for k in prof.launches:
        per.setdefault(k.name, []).append(k.duration_ns)
    launched = {n: (len(d), sum(d)) for n, d in per.items()}
    same = sum(printed.get(n) == v for n, v in launched.items())
    return (
        f"| {db.name} | {len(prof.launches)} | {sum((ours & theirs).values())} of {sum(theirs.values())} records equal"
        f" | {sum((again & ours).values())} of {sum(ours.values())} equal"
        f" | {sum((ids & want).values())} of {sum(want.values())} launches"
        f" | {same} of {len(launched)} kernels equal | {len(prof.devices)} |"
    )


def check_summary(path: Path) -> str:
    stats = nvprof_summary.read(path).stats
    ok = sum(
        s.avg_ns is not None
        and abs(s.calls * s.avg_ns - s.total_ns) <= 1e-3 * s.total_ns + s.calls * 1.0
        and (s.min_ns or 0) <= s.avg_ns * (1 + 1e-4)
        and s.avg_ns <= (s.max_ns or 0) * (1 + 1e-4)
        for s in stats
    )
    return f"| {path.name} | {detect(path)} | {len(stats)} | {ok} of {len(stats)} |"


def check_trace(path: Path) -> str:
    prof = nvprof_trace.read(path)
    text = path.read_text(errors="replace").splitlines()
    at = next(i for i, line in enumerate(text) if nvprof_trace.looks_like(line.encode()))
    timed = sum(1 for row in csv.reader(text[at + 2 :]) if row and numbers.to_float(row[0]) is not None)
    got = len(prof.launches) + len(prof.memory_ops)
    return f"| {path.name} | {detect(path)} | {len(prof.launches)} | {len(prof.memory_ops)} | {got} of {timed} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nvprof", required=True, help="nvprof binary (nvidia-toolkit's bin/nvprof)")
    ap.add_argument("dbs", nargs="*", type=Path)
    ap.add_argument("--summaries", nargs="*", type=Path, default=[])
    ap.add_argument("--traces", nargs="*", type=Path, default=[])
    args = ap.parse_args()
    print("| database | launches | kernels, copies, fills vs --print-gpu-trace | that CSV read back", end="")
    print(" | the printed trace read back | --print-gpu-summary vs launches | GPUs |")
    print("|---|---:|---|---|---|---|---:|")
    for db in args.dbs:
        print(check_db(args.nvprof, db))
    if args.summaries:
        print("\n| printed summary | sniffed as | kernels | calls x Avg = Time, Min <= Avg <= Max |")
        print("|---|---|---:|---|")
        for path in args.summaries:
            print(check_summary(path))
    if args.traces:
        print("\n| CSV trace | sniffed as | kernels | copies, fills | rows read of rows with a time |")
        print("|---|---|---:|---:|---|")
        for path in args.traces:
            print(check_trace(path))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
