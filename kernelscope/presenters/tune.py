"""Presenters of ``kscope tune``: the winners per shape, every candidate, and the store (rich, JSON, CSV,
Parquet, Markdown)."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text

from kernelscope.analyses.tune import busy_share
from kernelscope.model.tunableop import TunableOpResult
from kernelscope.model.tune import Best, Outcome, TuneResult, label
from kernelscope.presenters.base import (
    Column,
    Presenter,
    Table,
    note_text,
    render_csv,
    render_json,
    render_markdown,
    render_parquet,
    rich_table,
)

BEST_COLUMNS = [
    Column("shape", "Shape", justify="left"),
    Column("config", "Best config", justify="left"),
    Column("median_us", "Median µs", 3),
    Column("ci", "95% CI µs", justify="left"),
    Column("verdict", "Verdict", justify="left"),
    Column("runner_up", "Runner-up", justify="left"),
    Column("runner_up_ratio", "Runner-up / best", 3, short="RU/best"),
    Column("speedup", "Speedup vs incumbent", 3, short="vs incumbent"),
    Column("rounds", "Stage-2 rounds", short="Rounds"),
]
CANDIDATE_COLUMNS = [
    Column("shape", "Shape", justify="left"),
    Column("config", "Config", justify="left"),
    Column("status", "Status", justify="left"),
    Column("median_us", "Median µs", 3),
    Column("ci_lo", "CI low µs", 3, short="CI low"),
    Column("ci_hi", "CI high µs", 3, short="CI high"),
    Column("samples", "Samples"),
    Column("registers", "Registers", short="Regs"),
    Column("shared_bytes", "Shared bytes", short="Shared"),
    Column("attempts", "Attempts", short="Tries"),
    Column("seconds", "Seconds", 2, short="s"),
    Column("reused", "Reused", justify="left"),
    Column("device", "Device", justify="left"),
    Column("detail", "Detail", justify="left"),
]
STYLE = {
    "ok": "green",
    "skipped": "dim",
    "pruned": "dim",
    "mismatch": "red",
    "crash": "bold red",
    "timeout": "bold red",
}


def _ci(ci: list[float] | None) -> str:
    return f"{ci[0]:.3f}-{ci[1]:.3f}" if ci else ""


def _best_row(b: Best) -> dict[str, Any]:
    verdict = "winner" if not b.tie else f"tie of {len(b.tie)}"
    if not b.rounds:
        verdict = "only candidate" if b.runner_up is None else verdict
    return {
        "shape": label(b.shape),
        "config": label(b.config),
        "median_us": b.median_us,
        "ci": _ci(b.ci_us),
        "verdict": verdict,
        "runner_up": label(b.runner_up) if b.runner_up else None,
        "runner_up_ratio": b.runner_up_ratio[0] if b.runner_up_ratio else None,
        "speedup": b.speedup,
        "rounds": b.rounds,
    }


def _candidate_row(o: Outcome) -> dict[str, Any]:
    lo, hi = o.ci_us if o.ci_us else (None, None)
    row = {c.key: getattr(o, c.key, None) for c in CANDIDATE_COLUMNS}
    row.update(shape=label(o.shape), config=label(o.config), ci_lo=lo, ci_hi=hi, reused="yes" if o.reused else "")
    return row


def best_table(r: TuneResult) -> Table:
    counts = ", ".join(f"{n} {s}" for s, n in r.counts().items())
    summary = [
        ("target", r.target),
        ("candidates", f"{len(r.candidates)} ({counts}); {r.reused} from the store"),
        ("workers", f"{len(r.workers)} ({r.executor})"),
        ("wall time", f"{r.wall_s:.1f} s"),
    ]
    busy = _busy(r)
    if busy:
        summary.append(("devices busy", busy))
    return Table(
        f"kscope tune {r.target}: the best config per shape",
        BEST_COLUMNS,
        [_best_row(b) for b in r.best],
        summary,
        r.notes,
    )


def _busy(r: TuneResult) -> str:
    use = busy_share(r)
    if use is None or not any(u.items for u in r.usage):
        return ""
    return (
        f"{use['busy']:.0%} from start-up ({use['ready_s']:.1f} s) to the end; of that set-up (compile, load, "
        f"check) {use['setup']:.0%}, stage 2 {use['stage2']:.0%}; the last stage-1 result {use['tail_s']:.1f} s "
        f"before the end (stopping the workers {use['stop_s']:.1f} s)"
    )


def candidates_table(r: TuneResult | list[Outcome], title: str = "Candidates") -> Table:
    rows = r.candidates if isinstance(r, TuneResult) else r
    return Table(title, CANDIDATE_COLUMNS, [_candidate_row(o) for o in rows])


def _status_line(r: TuneResult) -> Text:
    line = Text(f"{len(r.candidates)} candidates: ")
    for i, (status, n) in enumerate(r.counts().items()):
        line.append(("" if i == 0 else ", ") + f"{n} {status}", style=STYLE.get(status, "yellow"))
    line.append(f"; {r.reused} reused from the store; {r.wall_s:.1f} s on {len(r.workers)} worker(s) ({r.executor})")
    return line


_FAILED = ("compile_error", "mismatch", "oom", "crash", "timeout")


SCREEN_COLUMNS = [
    Column("shape", "Shape", justify="left"),
    Column("config", "Config", justify="left"),
    Column("verdict", "Verdict", justify="left"),
    Column("registers", "Registers", short="Regs"),
    Column("shared_bytes", "Shared bytes", short="Shared"),
    Column("occupancy", "Occupancy", justify="left"),
    Column("detail", "Why not kept", justify="left"),
]


def screen_table(r: TuneResult) -> Table:
    rows = [
        {
            **{c.key: getattr(s, c.key, None) for c in SCREEN_COLUMNS},
            "shape": label(s.shape),
            "config": label(s.config),
            "verdict": "kept" if s.kept else s.status,
        }
        for s in r.screen
    ]
    return Table(f"Screen for {r.screen_arch}: code objects compiled offline", SCREEN_COLUMNS, rows)


def _screen_line(r: TuneResult) -> Text:
    kept = sum(s.kept for s in r.screen)
    by: dict[str, int] = {}
    for s in r.screen:
        if not s.kept:
            by[s.status] = by.get(s.status, 0) + 1
    dropped = ", ".join(f"{n} {k}" for k, n in by.items()) or "none dropped"
    return Text(f"screen ({r.screen_arch}): {len(r.screen)} candidates compiled, {kept} kept, {dropped}")


def rich_renderable(r: TuneResult, all_candidates: bool = False) -> Group:
    if not r.best and not r.candidates and r.screen:  # --screen-only
        return Group(rich_table(screen_table(r)), _screen_line(r))
    parts: list[Any] = [rich_table(best_table(r)), _status_line(r)]
    if busy := _busy(r):
        parts.append(Text(f"devices busy: {busy}"))
    if r.screen:
        parts.append(_screen_line(r))
    shown = r.candidates if all_candidates else [o for o in r.candidates if o.status in _FAILED]
    if shown:
        title = "Candidates" if all_candidates else "Failed candidates (kept out of the search; --all shows every one)"
        hidden = ("ci_lo", "ci_hi", "samples", "device") + (() if all_candidates else ("median_us", "reused"))
        parts.append(rich_table(candidates_table(shown, title), hidden=hidden))
    parts += [note_text(n) for n in r.notes]
    return Group(*parts)


PRESENTERS: dict[str, Presenter] = {
    "json": Presenter("json", ".json", False, render_json),
    "csv": Presenter("csv", ".csv", False, lambda r: render_csv([candidates_table(r)])),
    "parquet": Presenter("parquet", ".parquet", True, lambda r: render_parquet([candidates_table(r)])),
    "markdown": Presenter("markdown", ".md", False, lambda r: render_markdown([best_table(r), candidates_table(r)])),
}


def tunableop_renderable(r: TunableOpResult) -> Group:
    rows = [
        {
            "op": g.gemm.op,
            "params": g.gemm.params,
            "solution": g.solution or "not tuned",
            "time_ms": g.time_ms,
            "alternatives": "yes" if g.alternatives else "no",
            "worker": g.worker,
        }
        for g in r.gemms
    ]
    cols = [
        Column("op", "Op", justify="left"),
        Column("params", "GEMM", justify="left"),
        Column("solution", "Solution", justify="left"),
        Column("time_ms", "ms", 4),
        Column("alternatives", "Had alternatives", justify="left"),
        Column("worker", "Worker", justify="left"),
    ]
    parts: list[Any] = [rich_table(Table(f"TunableOp: {len(r.gemms)} GEMMs of {' '.join(r.command)}", cols, rows))]
    if r.ab is not None and r.ab.comparison is not None and r.ab.comparison.ratio is not None:
        c = r.ab.comparison
        parts.append(Text(f"A/B ({r.ab.metric}): tuned / baseline = {c.ratio:.4f}, significant: {c.significant}"))
    elif r.ab is not None and r.ab.skipped:
        parts.append(Text(f"A/B not run: {r.ab.skipped}"))
    if r.results_path:
        parts.append(Text(f"results: {r.results_path}  (use: {' '.join(f'{k}={v}' for k, v in r.env.items())})"))
    parts += [note_text(n) for n in r.notes]
    return Group(*parts)


TUNABLEOP_PRESENTERS: dict[str, Presenter] = {"json": Presenter("json", ".json", False, render_json)}
STORE_PRESENTERS: dict[str, Presenter] = {
    "json": Presenter("json", ".json", False, render_json),
    "csv": Presenter("csv", ".csv", False, lambda rows: render_csv([candidates_table(rows)])),
    "parquet": Presenter("parquet", ".parquet", True, lambda rows: render_parquet([candidates_table(rows)])),
}
