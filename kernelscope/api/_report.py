"""``kscope report`` and ``kscope suggest``: every input read once, shown or ranked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from kernelscope.analyses.coverage import coverage, runs_from_calls
from kernelscope.analyses.ncu import selector, summarize
from kernelscope.analyses.report import build as build_report
from kernelscope.analyses.roofline import from_calls
from kernelscope.analyses.suggest import Evidence, kernels, rank
from kernelscope.api._code import counters_roofline, gpu_peaks, trace_peaks
from kernelscope.api._gap import gap_report
from kernelscope.api._names import locate_sources
from kernelscope.api._shapes import with_replays
from kernelscope.errors import InputError
from kernelscope.inputs import Input, open_all, open_profile
from kernelscope.inputs import open as open_input
from kernelscope.loop import git as loop_git
from kernelscope.loop import ledger as loop_ledger
from kernelscope.loop import workspace as loop_workspace
from kernelscope.model.ops import NO_SHAPES
from kernelscope.model.report import Report
from kernelscope.model.suggest import SuggestResult
from kernelscope.readers import ncu_source
from kernelscope.readers.shape_ledger import read as read_shape_ledger

REPORT_CANDIDATES = 5  # ranked experiments in a report's headline and Candidates table


def report(
    traces: Sequence[str | Path | Input] = (),
    *,
    code: Sequence[str | Path] = (),
    shapes_file: Path | None = None,
    ncu_report: Path | Input | None = None,
    att_dirs: Sequence[str | Path] = (),
    gpu: str | None = None,
    ceilings_file: Path | None = None,
    window: str | None = None,
    title: str | None = None,
    capture: str | Path | None = None,
) -> Report:
    """``kscope report``: gap, roofline (Kineto traces with shapes; with ``capture``, a trace of the graph
    capture, the graph replays' ops too), code objects, Nsight Compute source counters, shape coverage."""
    if not traces and not code and shapes_file is None and ncu_report is None and not att_dirs:
        raise InputError("nothing to report: give traces, --code, --ncu, --att or --shapes")
    handles = open_all(traces)
    ncu = open_profile(ncu_report) if ncu_report is not None else None
    ev = _evidence(handles, ncu_report=ncu, att_dirs=att_dirs, code=code, gpu=gpu,
                   ceilings_file=ceilings_file, window=window, capture=capture)  # fmt: skip
    runs = read_shape_ledger(shapes_file) if shapes_file is not None else []
    if ev.calls and shapes_file is None:
        kineto = next(h.path for h in handles if h.format == "kineto")
        runs = runs_from_calls(ev.calls, model=kineto.name.split(".")[0], stage=None)
    ranked = rank(ev, top=REPORT_CANDIDATES)
    ncu_summary = summarize(ev.ncu, headline_only=True) if ev.ncu is not None else None
    extra = [p for p in (shapes_file, ncu) if p is not None]
    inputs = [str(p) for p in [*handles, *code, *att_dirs, *extra]]
    return build_report(
        title=title or f"kernelscope report: {Path(inputs[0]).name}",
        created=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        inputs=inputs,
        gap=ev.gap,
        roofline=from_calls(ev.calls, ev.peaks) if ev.calls and ev.peaks else None,
        code=list(ev.code),
        coverage=coverage(runs) if runs else None,
        ncu=ncu_summary,
        att=list(ev.att),
        candidates=ranked.experiments,
        # the evidence's (no roofline: why), the ranking's (hot kernels no rule read), the ncu report's
        notes=[*ranked.notes, *(f"ncu: {n}" for n in (ncu_summary.notes if ncu_summary else []))],
    )


def _evidence(
    traces: Sequence[Input],
    *,
    ncu_report: Input | None,
    att_dirs: Sequence[str | Path],
    code: Sequence[str | Path],
    gpu: str | None,
    ceilings_file: Path | None,
    window: str | None = None,
    capture: str | Path | None = None,
) -> Evidence:
    """Every input decoded once, for ``suggest`` to rank and ``report`` to show: the first Kineto trace's
    ops with shapes (whose decode also gives its rows of the gap table), the gap table, the ncu report's
    source page, launches and roofline (one load of the report), ATT, code objects."""
    formats = [h.format for h in traces]  # every path sniffed before anything is read
    kineto = next((h for h, f in zip(traces, formats, strict=True) if f == "kineto"), None)
    if capture is not None and kineto is None:
        raise InputError("--capture attributes a Kineto trace's graph replays: give that trace too")
    calls, attributed = with_replays(kineto, capture) if kineto is not None else ([], [])
    device = kineto.gpu if kineto is not None else None
    gap = gap_report(traces, window=window) if traces else None
    peaks, why = trace_peaks(gpu, device, ceilings_file) if calls else (None, None)
    notes = [f"gap: {w}" for w in gap.warnings] if gap else []  # what the table's numbers include, and why
    notes += attributed
    if why:
        notes.append(f"no roofline from the trace's shapes: {why}; --gpu NAME picks an entry")
    if kineto is not None and not calls:
        notes.append(f"no roofline or shape coverage: {kineto.path.name}: {NO_SHAPES}")
    source, launches, devices, measured = None, [], [], None
    if ncu_report is not None:
        source = ncu_report.ncu
        if ncu_source.is_report(ncu_report.path):  # the source-page CSV holds no launches or counters
            launches, devices = ncu_report.profile.launches, ncu_report.profile.devices
            try:
                hw = peaks or gpu_peaks(gpu, devices[0].label if devices else None, ceilings_file)
                measured = counters_roofline(launches, hw, None, source)  # matrix work at its SASS's type
            except InputError as exc:  # a GPU missing from the database: ncu's own speed of light stands in
                notes.append(f"no roofline from the ncu counters: {exc}")
    given = (("trace", traces), ("ncu", [ncu_report] if ncu_report else []), ("att", att_dirs), ("isa", code))
    return Evidence(
        inputs={kind: [str(p) for p in paths] for kind, paths in given if paths},
        gap=gap,
        calls=calls,
        peaks=peaks,
        ncu=source,
        ncu_launches=launches,
        ncu_roofline=measured,
        devices=devices,
        att=[c for h in map(open_input, att_dirs) for c in h.att.captures],
        code=[o for h in map(open_input, code) for o in h.code],
        notes=notes,
    )


def suggest(
    traces: Sequence[str | Path | Input] = (),
    *,
    ncu_report: Path | Input | None = None,
    att_dirs: Sequence[str | Path] = (),
    code: Sequence[str | Path] = (),
    kernel: str | None = None,
    workspace: str | Path | None = None,
    repo: str | Path | None = None,
    index_db: Path | None = None,
    gpu: str | None = None,
    ceilings_file: Path | None = None,
    top: int = 10,
    capture: str | Path | None = None,
) -> SuggestResult:
    """``kscope suggest``: ranked experiments (lever, kernel, rationale, risk, expected effect, eval contract)
    from the given evidence; ``workspace``'s ledger demotes levers that already failed on a kernel, ``repo``
    names the source and test files (``docs/suggest.md``)."""
    if not traces and ncu_report is None and not att_dirs and not code:
        raise InputError("nothing to suggest from: give a trace, --ncu, --att or --code")
    if top < 1:
        raise InputError(f"--top {top}: need at least 1")
    selector(kernel)  # a bad pattern fails before anything is read
    ws = loop_workspace.open_workspace(Path(workspace)) if workspace is not None else None
    ncu = open_profile(ncu_report) if ncu_report is not None else None
    handles = open_all(traces)
    ev = _evidence(
        handles, ncu_report=ncu, att_dirs=att_dirs, code=code, gpu=gpu, ceilings_file=ceilings_file, capture=capture
    )
    if ws is not None:
        records, _ = loop_ledger.read(ws.ledger)
        inputs = {**ev.inputs, "ledger": [str(ws.ledger)]}
        ev = replace(ev, inputs=inputs, ledger=records, workspace=str(ws.root))
    if repo is not None and (names := [f.name for f in kernels(ev)[0]]):
        # every kernel's source before ranking: its files and tests, and the kind and category its definition
        # shows where the name said too little (a rule that needs a GEMM then sees a Triton helper built on tl.dot)
        found = {m.name: m for m in locate_sources(names, repos=[repo], db=index_db)}
        root = Path(repo).resolve()
        head = loop_git.resolve(root, "HEAD") if (root / ".git").exists() else None
        ev = replace(ev, inputs={**ev.inputs, "repo": [str(root)]}, sources=found, repo=str(root), baseline=head)
    return rank(ev, kernel=kernel, top=top)
