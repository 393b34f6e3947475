"""``kscope suggest`` presenters: the ranking as a table, then each experiment's argument (rich, Markdown);
JSON (kernelscope.suggest.v1)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from kernelscope.errors import one_line
from kernelscope.model.suggest import Experiment, SuggestResult
from kernelscope.presenters.base import Column, Presenter, Table, note_text, render_json, render_markdown, rich_table

COLUMNS = [
    Column("rank", "#"),
    Column("lever", "Lever", justify="left"),
    Column("kernel", "Kernel", justify="left"),
    Column("share", "Share %", 1),
    Column("score", "Score", 3),
    Column("saves", "Saves ≤ % (kernel / total)", justify="left", short="Saves ≤ %"),
    Column("risk", "Risk", justify="left"),
    Column("demoted", "Demoted by", justify="left"),
]


def _saves(e: Experiment) -> str:
    x = e.expected
    if x.kernel_pct is None:
        return "not bounded"
    return f"{x.kernel_pct:.0f}" + (f" / {x.total_pct:.1f}" if x.total_pct is not None else "")


def table(experiments: list[Experiment], title: str = "Ranked experiments") -> Table:
    """The ranking, one row per experiment (the report's Candidates table too)."""
    rows = [
        {
            "rank": e.rank,
            "lever": e.lever,
            "kernel": e.kernel.function,  # the full name is in the details and the JSON
            "share": e.kernel.share_pct,
            "score": e.score,
            "saves": _saves(e),
            "risk": e.risk.level,
            "demoted": ", ".join(f"{d.task} {d.status} x{d.factor:g}" for d in e.demoted_by),
        }
        for e in experiments
    ]
    return Table(title, COLUMNS, rows)


def details(e: Experiment) -> list[tuple[str, str]]:
    """An experiment's argument as (label, text) lines, in reading order."""
    share = "unknown" if e.kernel.share_pct is None else f"{e.kernel.share_pct:.1f}%"
    lines = [("kernel", f"{e.kernel.name} ({e.kernel.identity}); share {share} ({e.kernel.share_source})")]
    for n, s in enumerate(e.rationale, 1):
        lines += [(f"evidence {n}", s.evidence), ("  inference", s.inference), ("  action", s.action)]
    lines += [
        ("expected", e.expected.basis),
        ("risk", f"{e.risk.level}: {e.risk.why}"),
        ("files", ", ".join(e.files) or "(give --repo to name them)"),
    ]
    if e.hotspots:
        lines.append(("hotspots", ", ".join(e.hotspots)))
    c = e.contract
    lines += [
        ("eval contract", f"{c.metric}, {c.direction} is better; measure: {c.measure}; correctness: {c.correctness}"),
        ("start", c.command),
    ]
    lines += [(f"demoted by {d.id}", f"task {d.task}, {d.status} at {d.time}: x{d.factor:g}") for d in e.demoted_by]
    return lines


def _title(e: Experiment) -> str:
    return f"#{e.rank} {e.lever} on {e.kernel.function} (score {e.score:.3f}, rule {e.rule})"


def rich_renderable(r: SuggestResult) -> Group:
    used = "; ".join(f"{kind}: {', '.join(paths)}" for kind, paths in r.evidence_used.items())
    parts: list[RenderableType] = [Text(f"evidence: {used}", style="dim")]
    if r.experiments:
        parts.append(rich_table(table(r.experiments)))
    else:
        parts.append(Text("no experiment: no rule fired on this evidence (docs/suggest.md lists the rules)"))
    for e in r.experiments:
        parts.append(Text(f"\n{_title(e)}", style="bold"))
        parts += [Text(f"  {label}: {text}") for label, text in details(e)]
    parts += [note_text(n) for n in r.notes]
    return Group(*parts)


def _markdown(r: SuggestResult) -> str:
    used = "".join(
        f"- **{kind}**: {', '.join(f'`{one_line(p)}`' for p in paths)}\n" for kind, paths in r.evidence_used.items()
    )
    out = [f"# kscope suggest\n\n{used}", render_markdown([table(r.experiments)])]
    for e in r.experiments:
        out.append(f"### {_title(e)}\n")
        out += [
            f"{label[: len(label) - len(label.lstrip())]}- **{label.strip()}**: {text}" for label, text in details(e)
        ]
        out.append("")
    out += [f"> {one_line(n)}\n" for n in r.notes]  # notes name kernels: escaped like every table cell
    return "\n".join(out)


PRESENTERS: dict[str, Presenter] = {
    "json": Presenter("json", ".json", False, render_json),
    "markdown": Presenter("markdown", ".md", False, _markdown),
}
