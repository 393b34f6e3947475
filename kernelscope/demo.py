"""``kscope demo``: the main job on bundled real data, no GPU needed.

Ranks the kernels of a real H100 training trace (last 2 profiler steps) and its prefill/decode
phases, and of the real MI350X rocprofv3 captures, checking each MI350X table against rocprofv3's own
``kernel_stats.csv`` of the same run. Writes a report folder (Markdown, JSON, CSV per dataset).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernelscope import readers
from kernelscope.api import gap_report
from kernelscope.data import demo_file
from kernelscope.model.gap import GapResult
from kernelscope.presenters.base import render_csv, render_json, render_markdown
from kernelscope.presenters.gap import tables

MI350X = ("rmsnorm", "flash_attn_func", "pa_mqa_logits_fp4", "blockscale_preshuffle_gemm")


@dataclass(frozen=True)
class DemoItem:
    key: str
    title: str
    result: GapResult
    check: str | None = None  # the ground-truth comparison, said in words


def stats_check(result: GapResult, stats_csv: Path) -> str:
    """Compare a gap table with rocprofv3's own statistics: Calls and TotalDurationNs must match exactly."""
    truth = {s.name: s for s in readers.read(stats_csv).stats}
    rows = {r.name: r for r in result.kernels}
    same = [
        n
        for n, s in truth.items()
        if n in rows and rows[n].calls == s.calls and round(rows[n].total_us * 1000) == round(s.total_ns)
    ]
    verdict = "matches" if len(same) == len(truth) == len(rows) else "DIFFERS FROM"
    return f"{verdict} rocprofv3's own kernel_stats.csv: {len(same)}/{len(truth)} kernels with equal calls and total ns"


def run_demo() -> list[DemoItem]:
    trace = demo_file("h100_train_steps.json.gz")
    items = [
        DemoItem(
            "h100_train", "H100 bf16 transformer training, last 2 of 3 profiled steps", gap_report([trace], window="2")
        ),
        DemoItem(
            "h100_phases",
            "H100 prefill vs decode (record_function ranges)",
            gap_report([demo_file("h100_prefill_decode.json.gz")], phase_by="prefill|decode"),
        ),
    ]
    for k in MI350X:
        res = gap_report([demo_file("mi350x", k, "discover_kernel_trace.csv")])
        check = stats_check(res, demo_file("mi350x", k, "discover_kernel_stats.csv"))
        items.append(DemoItem(f"mi350x_{k}", f"MI350X rocprofv3 capture: {k}", res, check))
    return items


def write_report(items: list[DemoItem], out: Path) -> Path:
    """One folder: REPORT.md indexing every dataset, plus gap JSON/CSV/Markdown per dataset."""
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        "# kernelscope demo report",
        "",
        "Real profiler outputs bundled with kernelscope; see each file for the full table.",
        "",
    ]
    for it in items:
        (out / f"{it.key}.gap.json").write_text(render_json(it.result))
        (out / f"{it.key}.gap.csv").write_text(render_csv(tables(it.result)))
        (out / f"{it.key}.gap.md").write_text(render_markdown(tables(it.result)))
        t = it.result.totals
        top = it.result.kernels[0] if it.result.kernels else None
        lines += [
            f"## {it.title}",
            "",
            f"- kernel time {t.kernel_time_us:,.1f} us, GPU busy {t.busy_time_us or 0:,.1f} us, "
            f"{t.launches:,} launches of {t.kernels} kernels",
        ]
        if top is not None:
            lines.append(f"- top kernel: `{top.name[:120]}` ({top.pct:.1f}% of kernel time, {top.calls} calls)")
        if it.check:
            lines.append(f"- ground truth: {it.check}")
        lines += [f"- tables: [{it.key}.gap.md]({it.key}.gap.md), `.json`, `.csv`", ""]
    report = out / "REPORT.md"
    report.write_text("\n".join(lines))
    return report
