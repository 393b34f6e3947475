"""The workload-level experiment: the GPU waits for the host (``host_overhead``).

When the device idles because the next kernel had not been launched yet (``totals.idle_breakdown``), no
kernel change can win back that time; the host's Python, framework dispatch and launches must shrink
(CUDA/HIP graphs, ``torch.compile(mode="reduce-overhead")``, static caches, fewer host syncs). Its score is
the share of the wall time spent waiting for the host, on the same scale as a kernel experiment's share of
the time; when the host wait exceeds the GPU's busy time, the host dominates and the experiment goes first.
"""

from __future__ import annotations

import shlex

from kernelscope.analyses.suggest.evidence import Evidence
from kernelscope.analyses.suggest.thresholds import HOST_WAIT_PCT
from kernelscope.model.suggest import Contract, Effect, Experiment, KernelRef, Risk, Step

HOST = "(host)"  # the experiment's kernel name: it is about the workload, not a kernel


def host_experiment(ev: Evidence) -> tuple[Experiment, bool] | None:
    """The experiment, and whether the host dominates (it then ranks first); None when the trace links no
    launches or the host wait is under ``HOST_WAIT_PCT`` of the wall time."""
    t = ev.gap.totals if ev.gap is not None else None
    if t is None or t.idle_breakdown is None or not t.wall_time_us or t.busy_time_us is None:
        return None
    wait, wall, busy = t.idle_breakdown.host_wait_us, t.wall_time_us, t.busy_time_us
    devices = max(t.devices, 1)  # busy and host wait are sums over devices; wall is one device's span
    pct = 100 * wait / devices / wall  # of one device's wall time
    if pct < HOST_WAIT_PCT:
        return None
    gpu_pct = 100 * busy / devices / wall
    delay = f"; launch to start median {t.launch_delay_us.median_us:,.1f} µs" if t.launch_delay_us else ""
    if ev.gap is not None and ev.gap.host_activity:  # what the host was doing meanwhile, innermost first
        under = ", ".join(f"{h.name} {h.idle_us:,.0f} µs" for h in ev.gap.host_activity[:3])
        delay += f"; the waits fell under {under}"
    steps = [
        Step(
            evidence=f"gap: the GPU waited for the host {wait / devices:,.0f} µs of {wall:,.0f} µs wall time "
            f"({pct:.0f}%): the next kernel was launched after the device went idle{delay}",
            inference=f"kernels run {gpu_pct:.0f}% of the wall time: making them faster saves at most that; the "
            "host (Python, framework dispatch, launches, syncs) sets the pace",
            action="capture the steady loop in a CUDA/HIP graph (torch.cuda.graphs, torch.compile "
            'mode="reduce-overhead"), keep caches static, remove host syncs (.item(), .cpu(), printing tensors) '
            "from the loop, or give each launch more work (larger batches)",
        )
    ]
    argv = ["kscope", "task", "new", "host-overhead", "-w", ev.workspace or "WS", "--repo", ev.repo or "REPO",
            "--baseline-ref", ev.baseline or "REF", "--allowed", "GLOB", "--eval-command", "CMD",
            "--metric", "step_ms", "--direction", "lower", "--timeout", "600", "--correctness", "CHECK",
            "--lever", "host_overhead"]  # fmt: skip
    experiment = Experiment(
        rank=0,
        score=round(pct / 100, 4),
        lever="host_overhead",
        rule="host-wait",
        kernel=KernelRef(
            name=HOST,
            function=HOST,
            identity="the workload's host side: Python, framework dispatch, kernel launches, syncs",
            share_pct=round(pct, 2),
            share_source="gap: host wait / wall time",
        ),
        files=[],
        hotspots=[],
        rationale=steps,
        risk=Risk(level="medium", why="graphs need static shapes and addresses; removing a sync can change results"),
        expected=Effect(
            kernel_pct=None,
            total_pct=round(pct, 2),
            basis=f"saves at most the host wait: {pct:.0f}% of the wall time",
        ),
        contract=Contract(
            metric="step_ms",
            direction="lower",
            measure="CMD prints KSCOPE_METRIC step_ms=<wall time of one iteration of the real loop>",
            correctness="CHECK: the workload's outputs match the baseline's",
            command=" ".join(shlex.quote(a) for a in argv),
        ),
    )
    return experiment, wait > busy
