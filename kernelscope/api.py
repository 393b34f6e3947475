"""The notebook-facing API. Each function here backs one CLI command with the same parameters."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import msgspec

from kernelscope import readers
from kernelscope.analyses.att import analyze as analyze_att
from kernelscope.analyses.coverage import coverage, runs_from_calls
from kernelscope.analyses.diff import DiffOptions, DiffResult
from kernelscope.analyses.diff import diff as diff_profiles
from kernelscope.analyses.fit import FitReport
from kernelscope.analyses.fit import fit as fit_kernel
from kernelscope.analyses.gap import GapAccumulator, GapOptions, GapResult, GroupBy, attach_sources, gap
from kernelscope.analyses.ncu import NcuResult, selector, summarize
from kernelscope.analyses.ncu import cost as ncu_cost
from kernelscope.analyses.occupancy import arch_limits, occupancy
from kernelscope.analyses.replay import candidates as replay_list
from kernelscope.analyses.replay import select as select_replay
from kernelscope.analyses.replay import task_fields as replay_task_fields
from kernelscope.analyses.report import Report
from kernelscope.analyses.report import build as build_report
from kernelscope.analyses.roofline import Cost, Peaks, RooflineResult, from_calls, from_measured, point
from kernelscope.analyses.roofline import evaluate as evaluate_expression
from kernelscope.analyses.seed import GapSeed
from kernelscope.analyses.seed import seed as seed_from_gap
from kernelscope.analyses.stats import ALPHA, MIN_SAMPLES, RESAMPLES
from kernelscope.analyses.suggest import Evidence, rank
from kernelscope.analyses.window import Window, phases, select
from kernelscope.ceilings.measure import CeilingProfile
from kernelscope.ceilings.store import find_profile, load_profile
from kernelscope.codeobj.read import read_code_objects
from kernelscope.errors import FormatError, InputError
from kernelscope.hw.specs import GpuSpec, database, detect, lookup
from kernelscope.identity import classify
from kernelscope.loop import eval as loop_eval
from kernelscope.loop import git as loop_git
from kernelscope.loop import ledger as loop_ledger
from kernelscope.loop import memory as loop_memory
from kernelscope.loop import memory_edit
from kernelscope.loop import task as loop_task
from kernelscope.loop import workspace as loop_workspace
from kernelscope.model import KernelLaunch, Profile
from kernelscope.model.att import AttReport
from kernelscope.model.codeobj import CodeObject
from kernelscope.model.identity import KernelIdentity
from kernelscope.model.levers import LEVERS
from kernelscope.model.measurement import Measurement
from kernelscope.model.memory import MemoryFolder, MemoryList, MemoryRecord, MemorySummary
from kernelscope.model.ncu import NcuSource
from kernelscope.model.replay import Replay, ReplayList
from kernelscope.model.shapes import ShapeRun
from kernelscope.model.source import SourceMatch
from kernelscope.model.suggest import SuggestResult
from kernelscope.model.task import Direction, EvalResult, LedgerView, Task, WorkspaceInfo
from kernelscope.profiling import ProfileConfig, ProfileRun
from kernelscope.profiling import run as run_profiled
from kernelscope.readers import att as att_reader
from kernelscope.readers import ncu_source, ncu_source_csv
from kernelscope.readers._sniff import sniff
from kernelscope.readers.kineto_ops import OpCall, read_op_calls
from kernelscope.readers.shape_ledger import read as read_shape_ledger
from kernelscope.sources.find import Finder
from kernelscope.sources.index import Progress as IndexProgress
from kernelscope.sources.index import RepoSummary, SourceIndex
from kernelscope.timing import bench, load_target

Progress = Callable[[str], None]
REPORT_CANDIDATES = 5  # ranked experiments in a report's headline and Candidates table


def _with_rank(batch: Profile, rank: int) -> Profile:
    batch.launches = [k if k.rank is not None else msgspec.structs.replace(k, rank=rank) for k in batch.launches]
    batch.memory_ops = [m if m.rank is not None else msgspec.structs.replace(m, rank=rank) for m in batch.memory_ops]
    batch.annotations = [a if a.rank is not None else msgspec.structs.replace(a, rank=rank) for a in batch.annotations]
    return batch


def _batches(
    paths: Sequence[Path], fmt: str | None, progress: Progress | None, *, whole: bool = False
) -> Iterator[Profile]:
    """Every file's batches; with several files, a file that names no rank gets its position as rank.

    ``whole`` reads each file at once (``readers.read``): only then are launches linked to API calls
    that come later in the file (``launch_ns``), which step windows and phases need.
    """
    for i, p in enumerate(paths):
        for batch in [readers.read(p, fmt=fmt)] if whole else readers.stream(p, fmt=fmt):
            if progress:
                progress(str(p))
            yield _with_rank(batch, i) if len(paths) > 1 else batch


def _feed(acc: GapAccumulator, paths: Sequence[Path], fmt: str | None, progress: Progress | None) -> None:
    """Stream every file into ``acc``: as columns where the reader decodes to them, else as records."""
    for i, p in enumerate(paths):
        columns = readers.stream_columns(p, fmt=fmt)
        if columns is None:
            for batch in _batches([p], fmt, progress):
                acc.add(_with_rank(batch, i) if len(paths) > 1 else batch)
            continue
        for cols in columns:
            if progress:
                progress(str(p))
            acc.add_columns(replace(cols, rank=i) if len(paths) > 1 and cols.rank is None else cols)


def gap_report(
    paths: Sequence[str | Path],
    *,
    fmt: str | None = None,
    window: str | None = None,
    phase_by: str | None = None,
    group_by: GroupBy = "name",
    per_rank: bool = False,
    include_memory: bool = False,
    find_sources: bool = False,
    repo: Sequence[str | Path] | None = None,
    index_db: Path | None = None,
    progress: Progress | None = None,
) -> GapResult:
    """Rank the kernels of one or more profiler outputs by GPU time.

    Without ``window``/``phase_by`` the files are streamed through the aggregation as columns (memory
    bounded by the reader's batch, no record per launch); with them the profile is materialized as
    records, since selecting steps needs the annotations and the launch correlations of the whole file.
    """
    if not paths:
        raise InputError("no input files given")
    if find_sources and group_by not in ("name", "function"):
        raise InputError("--find-sources needs --group-by name or function (rows must be kernels)")
    result = _gap(paths, fmt, window, phase_by, group_by, per_rank, include_memory, progress)
    if find_sources:
        names = list(dict.fromkeys(r.name for part in [result, *result.phases] for r in part.kernels))
        found = locate_sources(names, repos=repo or (), db=index_db)
        attach_sources(result, {m.name: m for m in found})
    return result


def _gap(
    paths: Sequence[str | Path],
    fmt: str | None,
    window: str | None,
    phase_by: str | None,
    group_by: GroupBy,
    per_rank: bool,
    include_memory: bool,
    progress: Progress | None,
) -> GapResult:
    files = [Path(p) for p in paths]
    for f in files:  # fail on a bad path before reading anything, so no partial work is shown
        if fmt is None:
            readers.detect(f)
    options = GapOptions(include_memory=include_memory, group_by=group_by, per_rank=per_rank)
    if window is None and phase_by is None:
        acc = GapAccumulator(options)
        _feed(acc, files, fmt, progress)
        return acc.result()
    profile = Profile.combine(list(_batches(files, fmt, progress, whole=True)))
    win = Window.parse(window) if window is not None else None
    if win is not None:
        profile = select(profile, win)
    result = gap(profile, options)
    result.window = win.describe() if win else None
    if phase_by is not None:
        parts = []
        for label, sub in phases(profile, phase_by).items():
            r = gap(sub, options)
            r.phase = label
            parts.append(r)
        result.phases = sorted(parts, key=lambda r: -r.totals.kernel_time_us)
    return result


class ProfileResult(msgspec.Struct, kw_only=True):
    """``kscope profile``: the run, the gap table of the traces it produced, and for the per-kernel
    tracers their instruction-level analysis (``ncu``: Nsight Compute source counters; ``att``: ATT)."""

    run: ProfileRun
    gap: GapResult | None
    ncu: NcuResult | None = None
    att: AttReport | None = None
    schema: str = "kernelscope.profile-run.v1"


def profile(
    config: ProfileConfig, *, window: str | None = None, quiet_stdout: bool = False, progress: Progress | None = None
) -> ProfileResult:
    """Run ``config.command`` under the vendor tracer, then rank the kernels of what it traced.

    ``quiet_stdout`` sends the workload's stdout to stderr (for callers that print JSON on stdout).
    """
    done = run_profiled(config, quiet_stdout=quiet_stdout)
    ranked: list[str] = done.traces
    result = ProfileResult(run=done, gap=None)
    if done.tracer == "ncu" and done.traces:
        result.ncu = ncu(done.traces[0])
    if done.tracer == "att":  # the traces are ATT folders; the kernel trace beside them has the timings
        result.att = att(done.traces) if done.traces else None
        ranked = sorted(str(p) for p in Path(done.out_dir).glob("**/*kernel_trace.csv"))
    if ranked:
        result.gap = gap_report(ranked, window=window, phase_by=config.phase_by, progress=progress)
    return result


def read_names(path: Path) -> list[str]:
    """Kernel names from a file: one per line, or JSON lines with a ``name`` key; ``-`` is stdin."""
    text = sys.stdin.read() if str(path) == "-" else Path(path).read_text(errors="replace")
    names = []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("{"):
            try:
                obj = msgspec.json.decode(line)
            except msgspec.DecodeError as exc:
                raise FormatError(f"{path}:{i}", "a JSON object with a name", f"bad JSON ({exc})") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
                raise FormatError(f"{path}:{i}", "a JSON object with a string name", "no name key")
            line = obj["name"]
        names.append(line)
    return names


def classify_names(names: Sequence[str] = (), file: Path | None = None) -> list[KernelIdentity]:
    """``kscope classify``: what each kernel name says (kind, category, dtype, tile, function, ...)."""
    all_names = [*names, *(read_names(file) if file is not None else [])]
    if not all_names:
        raise InputError("no kernel names: pass NAME... or --file FILE")
    return classify(all_names)


def index_sources(
    repos: Sequence[str | Path], db: Path | None = None, progress: IndexProgress | None = None
) -> list[RepoSummary]:
    """``kscope index``: build or refresh the source index of ``repos`` (incremental)."""
    if not repos:
        raise InputError("no repositories: pass one or more source checkouts")
    index = SourceIndex(db)
    try:
        return index.index([Path(r) for r in repos], progress=progress)
    finally:
        index.close()


def locate_sources(
    names: Sequence[str] = (),
    *,
    file: Path | None = None,
    repos: Sequence[str | Path] = (),
    db: Path | None = None,
    progress: IndexProgress | None = None,
) -> list[SourceMatch]:
    """``kscope find``: definition, upstream URL and tests of each kernel name.

    ``repos`` limits the search to those checkouts; one not yet in the index is indexed first.
    """
    all_names = [*names, *(read_names(file) if file is not None else [])]
    if not all_names:
        raise InputError("no kernel names: pass NAME... or --file FILE")
    index = SourceIndex(db)
    try:
        known = {root for _, root, *_ in index.repos()}
        new = [Path(r) for r in repos if str(Path(r).resolve()) not in known]
        if new:
            index.index(new, progress=progress)
        return Finder(index, [Path(r) for r in repos]).find(all_names)
    finally:
        index.close()


def isa(
    paths: Sequence[str | Path],
    *,
    block_size: int | None = None,
    dynamic_shared: int | None = None,
    arch: str | None = None,
) -> list[CodeObject]:
    """``kscope isa``: resources, instruction mix and occupancy of every kernel in the code objects
    (only ``arch``'s, e.g. ``sm_90`` or ``gfx942``, from binaries built for several)."""
    if not paths:
        raise InputError("no code objects given")
    if block_size is not None and block_size <= 0:
        raise InputError(f"--block-size {block_size}: must be a positive thread count")
    objs = read_code_objects([Path(p) for p in paths], arch)
    for o in objs:
        for k in o.kernels:
            k.occupancy = occupancy(k, block_size, dynamic_shared)
            if k.occupancy is None and arch_limits(k.arch) is None:
                note = f"occupancy: no limits for {k.arch} in kernelscope/data/arch"
                if note not in o.notes:
                    o.notes.append(note)
    return objs


def ceilings(*, gib: float = 2.0, repeats: int = 20, save: bool = True) -> tuple[CeilingProfile, Path | None]:
    """``kscope ceilings``: measure the present GPU; with ``save`` the profile is stored for roofline."""
    if gib <= 0 or repeats <= 0:
        raise InputError("--gib and --repeats must be positive")
    from kernelscope.ceilings.measure import measure  # imports torch: only when asked
    from kernelscope.ceilings.store import save_profile

    profile = measure(gib=gib, repeats=repeats)
    return profile, save_profile(profile) if save else None


def hardware(name: str | None = None) -> tuple[list[GpuSpec], str | None]:
    """``kscope hw``: one entry (``name``) or the whole database, and the present GPU's name."""
    detected = detect()
    if name is not None:
        return [lookup(name)], detected
    return list(database().values()), detected


def fit(
    paths: Sequence[str | Path],
    *,
    block_size: int | None = None,
    dynamic_shared: int | None = None,
    arch: str | None = None,
) -> FitReport:
    """``kscope fit``: the ISA fit view of every kernel in the code objects."""
    objs = isa(paths, block_size=block_size, dynamic_shared=dynamic_shared, arch=arch)
    return FitReport(kernels=[fit_kernel(k) for o in objs for k in o.kernels])


def _peaks(gpu: str | None, device_hint: str | None, ceilings_file: Path | None) -> Peaks:
    name = gpu or device_hint or detect()
    if name is None:
        raise InputError("which GPU? pass --gpu NAME (kscope hw lists them); none detected and the trace names none")
    spec = lookup(name)
    tf: dict[str, float] = {}
    sources: dict[str, str] = {}
    for dt in ("bf16", "fp16", "fp8", "tf32"):
        v = spec.number(f"{dt}_matrix_tflops")
        if v is not None:
            tf[dt] = v
            sources[dt] = spec.specs[f"{dt}_matrix_tflops"].source
    for key, field in (("vector", "fp32_tflops"), ("fp32", "fp32_tflops"), ("fp64", "fp64_matrix_tflops")):
        v = spec.number(field)
        if v is not None:
            tf[key] = v
            sources[key] = spec.specs[field].source
    bw = spec.number("memory_bandwidth_gbs")
    if bw is not None:
        sources["bandwidth"] = spec.specs["memory_bandwidth_gbs"].source
    peaks = Peaks(gpu=spec.name, datasheet_tflops=tf, datasheet_gbs=bw, sources=sources)
    prof = (
        load_profile(ceilings_file) if ceilings_file else find_profile(spec.aliases[0] if spec.aliases else spec.name)
    )
    if prof is not None:
        by = {c.what: c.value for c in prof.ceilings}
        peaks.measured_tflops = {k.removesuffix("_tflops"): v for k, v in by.items() if k.endswith("_tflops")}
        peaks.measured_gbs = max((by.get("copy_gbs", 0.0), by.get("read_gbs", 0.0))) or None
        peaks.measured_on = f"{prof.device}, {prof.driver}, {prof.date}"
    return peaks


def _measured(launches: Sequence[KernelLaunch], peaks: Peaks, dtype: str) -> RooflineResult:
    """One roofline point per Nsight Compute launch, from the FLOPs and DRAM bytes its counters hold."""
    costs = [ncu_cost(k) for k in launches]
    return from_measured(
        [(c.name, c.flops, c.tensor_flops, c.dram_bytes, float(c.duration_ns)) for c in costs], peaks, dtype
    )


def roofline(
    trace: Path | None = None,
    *,
    gpu: str | None = None,
    flops: str | None = None,
    bytes_moved: str | None = None,
    time_us: float | None = None,
    dtype: str = "bf16",
    vector: bool = False,
    var: Sequence[str] = (),
    label: str = "kernel",
    ceilings_file: Path | None = None,
) -> RooflineResult:
    """``kscope roofline``: from a trace's recorded op shapes, an Nsight Compute report's counters, or
    given FLOPs/bytes/time."""
    if trace is not None and sniff(Path(trace)) in ("ncu-rep", "ncu-csv"):
        report = readers.read(trace)  # once: loading an .ncu-rep is the slow part
        device = report.devices[0].name if report.devices else None
        return _measured(report.launches, _peaks(gpu, device, ceilings_file), dtype)
    if trace is not None:
        calls, device = read_op_calls(Path(trace))
        if not calls:
            raise InputError(f"{trace}: no kernels linked to recorded ops (profile with record_shapes=True)")
        return from_calls(calls, _peaks(gpu, device, ceilings_file))
    if flops is None or bytes_moved is None or time_us is None:
        raise InputError("give a trace, or --flops, --bytes and --time-us")
    variables: dict[str, float] = {}
    for v in var:
        name, _, value = v.partition("=")
        try:
            variables[name.strip()] = float(value)
        except ValueError:
            raise InputError(f"--var {v}: expected NAME=NUMBER") from None
    cost = Cost(
        flops=evaluate_expression(flops, variables),
        bytes=evaluate_expression(bytes_moved, variables),
        dtype=dtype,
        matrix=not vector,
    )
    peaks = _peaks(gpu, None, ceilings_file)
    return RooflineResult(peaks=peaks, points=[point(label, cost, time_us * 1e3, 1, peaks)])


def shapes(traces: Sequence[str | Path], *, model: str | None = None, stage: str | None = None) -> list[ShapeRun]:
    """``kscope shapes``: shape-ledger records (kernel, op, input shapes, dtype, time) from Kineto traces
    recorded with shapes; ``model`` defaults to each trace's file name."""
    runs: list[ShapeRun] = []
    for t in traces:
        calls, _ = read_op_calls(Path(t))
        if not calls:
            raise InputError(f"{t}: no kernels linked to recorded ops (profile with record_shapes=True)")
        runs += runs_from_calls(calls, model=model or Path(t).name.split(".")[0], stage=stage)
    return runs


def replay(trace: str | Path, *, kernel: str | None = None, op: str | None = None, rank: int = 1) -> Replay:
    """``kscope replay``: the op call to replay from a Kineto trace recorded with shapes: the ``rank``-th
    hottest signature (op, shapes, dtypes, strides, scalars) of the ops that launched kernels matching
    ``kernel`` (a regex) or of the op named ``op``; ``presenters.replay.script`` writes its script."""
    calls, device = read_op_calls(Path(trace), enclosing=True)
    return select_replay(calls, kernel=kernel, op=op, rank=rank, trace=str(trace), device=device)


def replay_candidates(trace: str | Path, *, kernel: str | None = None, op: str | None = None) -> ReplayList:
    """``kscope replay --list``: the signatures ``replay`` chooses from, hottest first, and which of them
    can be replayed (all the trace's innermost ops when neither ``kernel`` nor ``op`` is given)."""
    calls, device = read_op_calls(Path(trace), enclosing=True)
    return replay_list(calls, kernel=kernel, op=op, trace=str(trace), device=device)


def report(
    traces: Sequence[str | Path] = (),
    *,
    code: Sequence[str | Path] = (),
    shapes_file: Path | None = None,
    ncu_report: Path | None = None,
    att_dirs: Sequence[str | Path] = (),
    gpu: str | None = None,
    ceilings_file: Path | None = None,
    window: str | None = None,
    title: str | None = None,
) -> Report:
    """``kscope report``: gap, roofline (Kineto traces with shapes), code objects, Nsight Compute source
    counters, shape coverage."""
    if not traces and not code and shapes_file is None and ncu_report is None and not att_dirs:
        raise InputError("nothing to report: give traces, --code, --ncu, --att or --shapes")
    ev = _evidence(traces, ncu_report=ncu_report, att_dirs=att_dirs, code=code, gpu=gpu,
                   ceilings_file=ceilings_file, window=window)  # fmt: skip
    runs = read_shape_ledger(shapes_file) if shapes_file is not None else []
    if ev.calls and shapes_file is None:
        kineto = next(Path(t) for t in traces if sniff(Path(t)) == "kineto")
        runs = runs_from_calls(ev.calls, model=kineto.name.split(".")[0], stage=None)
    extra = [p for p in (shapes_file, ncu_report) if p is not None]
    inputs = [str(p) for p in [*traces, *code, *att_dirs, *extra]]
    return build_report(
        title=title or f"kernelscope report: {Path(inputs[0]).name}",
        created=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        inputs=inputs,
        gap=ev.gap,
        roofline=from_calls(ev.calls, ev.peaks) if ev.calls and ev.peaks else None,
        code=list(ev.code),
        coverage=coverage(runs) if runs else None,
        ncu=summarize(ev.ncu) if ev.ncu is not None else None,
        att=list(ev.att),
        candidates=rank(ev, top=REPORT_CANDIDATES).experiments,
    )


def _evidence(
    traces: Sequence[str | Path],
    *,
    ncu_report: Path | None,
    att_dirs: Sequence[str | Path],
    code: Sequence[str | Path],
    gpu: str | None,
    ceilings_file: Path | None,
    window: str | None = None,
) -> Evidence:
    """Every input read once, for ``suggest`` to rank and ``report`` to show: the gap table, the first
    Kineto trace's ops with shapes, the ncu report's source page, launches and roofline, ATT, code objects."""
    gap = gap_report(traces, window=window) if traces else None
    kineto = [Path(t) for t in traces if sniff(Path(t)) == "kineto"]
    calls, device = read_op_calls(kineto[0]) if kineto else ([], None)
    peaks = _peaks(gpu, device, ceilings_file) if calls else None
    source, launches, devices, measured, notes = None, [], [], None, []
    if ncu_report is not None:
        source = _ncu_source(Path(ncu_report))
        if ncu_source.is_report(Path(ncu_report)):  # the source-page CSV holds no launches or counters
            report = readers.read(ncu_report)
            launches, devices = report.launches, report.devices
            try:
                hw = peaks or _peaks(gpu, devices[0].name if devices else None, ceilings_file)
                measured = _measured(launches, hw, "bf16")  # matrix work judged as bf16, as kscope roofline does
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
        att=att(att_dirs).captures if att_dirs else [],
        code=isa(code) if code else [],
        notes=notes,
    )


def suggest(
    traces: Sequence[str | Path] = (),
    *,
    ncu_report: Path | None = None,
    att_dirs: Sequence[str | Path] = (),
    code: Sequence[str | Path] = (),
    kernel: str | None = None,
    workspace: str | Path | None = None,
    repo: str | Path | None = None,
    index_db: Path | None = None,
    gpu: str | None = None,
    ceilings_file: Path | None = None,
    top: int = 10,
) -> SuggestResult:
    """``kscope suggest``: ranked experiments (lever, kernel, rationale, risk, expected effect, eval contract)
    from the given evidence; ``workspace``'s ledger demotes levers that already failed on a kernel, ``repo``
    names the source and test files (``docs/suggest.md``)."""
    if not traces and ncu_report is None and not att_dirs and not code:
        raise InputError("nothing to suggest from: give a trace, --ncu, --att or --isa")
    if top < 1:
        raise InputError(f"--top {top}: need at least 1")
    selector(kernel)  # a bad pattern fails before anything is read
    ws = loop_workspace.open_workspace(Path(workspace)) if workspace is not None else None
    ev = _evidence(traces, ncu_report=ncu_report, att_dirs=att_dirs, code=code, gpu=gpu, ceilings_file=ceilings_file)
    if ws is not None:
        records, _ = loop_ledger.read(ws.ledger)
        inputs = {**ev.inputs, "ledger": [str(ws.ledger)]}
        ev = replace(ev, inputs=inputs, ledger=records, workspace=str(ws.root))
    result = rank(ev, kernel=kernel, top=top)
    if repo is None or not result.experiments:
        return result
    names = list(dict.fromkeys(e.kernel.name for e in result.experiments))
    found = {m.name: m for m in locate_sources(names, repos=[repo], db=index_db)}
    root = Path(repo).resolve()
    head = loop_git.resolve(root, "HEAD") if (root / ".git").exists() else None
    ev = replace(ev, inputs={**ev.inputs, "repo": [str(root)]}, sources=found, repo=str(root), baseline=head)
    return rank(ev, kernel=kernel, top=top)


def diff(
    a: Sequence[str | Path],
    b: Sequence[str | Path],
    *,
    fmt: str | None = None,
    window: str | None = None,
    group_by: GroupBy = "name",
    alpha: float = ALPHA,
    min_launches: int = MIN_SAMPLES,
    resamples: int = RESAMPLES,
    seed: int | None = 0,
    progress: Progress | None = None,
) -> DiffResult:
    """``kscope diff``: compare profile B against baseline A kernel by kernel, with significance.

    Several files on a side are ranks or repeats, merged as ``gap_report`` merges them. Without
    ``window`` each side streams through the aggregation as columns; with it, each side is read as
    records, since selecting steps needs the annotations and launch correlations of the whole file.
    """
    if not a or not b:
        raise InputError("kscope diff needs files on both sides: A B, or --a FILE... --b FILE...")
    options = DiffOptions(group_by=group_by, alpha=alpha, min_launches=min_launches, resamples=resamples, seed=seed)
    sides = [[Path(p) for p in a], [Path(p) for p in b]]
    for f in sides[0] + sides[1]:  # fail on a bad path before reading anything, so no partial work is shown
        if fmt is None:
            readers.detect(f)
    win = Window.parse(window) if window is not None else None
    accs = []
    for files in sides:
        acc = GapAccumulator(GapOptions(group_by=group_by))
        if win is None:
            _feed(acc, files, fmt, progress)
        else:
            acc.add(select(Profile.combine(list(_batches(files, fmt, progress, whole=True))), win))
        accs.append(acc)
    result = diff_profiles(accs[0], accs[1], options)
    result.window = win.describe() if win else None
    return result


def bench_target(
    target: str,
    *,
    args: Sequence[str] = (),
    mode: str = "cold",
    graph: bool = False,
    warmup_ms: float = 50.0,
    min_time_ms: float = 300.0,
    calls: int | None = None,
    timer: str = "events",
) -> Measurement:
    """``kscope bench``: load ``FILE.py:FACTORY`` (or ``MODULE:FACTORY``), then ``kernelscope.bench`` it."""
    fn = load_target(target, args)
    return bench(
        fn,
        label=target,
        mode=mode,
        graph=graph,
        warmup_ms=warmup_ms,
        min_time_ms=min_time_ms,
        calls=calls,
        timer=timer,
    )


def ncu(path: str | Path, *, kernel: str | None = None, top: int = 10, context: int = 2) -> NcuResult:
    """``kscope ncu``: per kernel of an ``.ncu-rep`` (or its source-page CSV), the stall breakdown, the
    ``top`` SASS hotspots with ``context`` neighbours, and the top source lines; ``kernel`` is a regex."""
    return summarize(_ncu_source(Path(path), kernel), kernel=kernel, top=top, context=context)


def _ncu_source(path: Path, kernel: str | None = None) -> NcuSource:
    """The source page of an ``.ncu-rep`` (only kernels matching ``kernel``) or of its CSV export."""
    return ncu_source.read(path, select=selector(kernel)) if ncu_source.is_report(path) else ncu_source_csv.read(path)


def att(
    paths: Sequence[str | Path],
    *,
    top: int = 10,
    context: int = 3,
    bins: int = 200,
    arch: str | None = None,
    code_only: bool = False,
    workers: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> AttReport:
    """``kscope att``: stall hotspots, wave states, occupancy and the code.json cross-check of decoded ATT
    folders (each path a ``ui_output_agent_*`` folder or a folder holding them).

    ``top`` hotspots and source lines (0: all), ``context`` instructions around each hotspot, ``bins``
    points of the wave-state timeline, ``arch`` the occupancy rules (default: from the capture),
    ``code_only`` reads code.json alone (no wave states, measured occupancy or cross-check), ``workers``
    processes for large folders; ``progress(folder, wave files read, wave files)``.
    """
    if not paths:
        raise InputError("no ATT folders given")
    if top < 0 or context < 0 or bins < 1 or (workers is not None and workers < 1):
        raise InputError(
            f"--top {top}, --context {context}, --bins {bins}, --workers {workers}: "
            "need top and context >= 0, bins and workers >= 1"
        )
    folders = [f for p in paths for f in att_reader.find_captures(Path(p))]  # every path checked before reading
    captures = []
    for folder in folders:
        tick = (lambda done, total, f=str(folder): progress(f, done, total)) if progress else None
        capture = att_reader.read(folder, waves=not code_only, workers=workers, progress=tick)
        captures.append(analyze_att(capture, top=top, context=context, bins=bins, arch=arch))
    return AttReport(captures=captures)


def init_workspace(path: str | Path) -> WorkspaceInfo:
    """``kscope init``: make ``path`` a workspace (tasks/, runs/, memory/, ledger.jsonl). Idempotent; a
    non-empty folder that is not a workspace is refused."""
    from kernelscope import __version__

    ws, new = loop_workspace.init(Path(path), __version__)
    return WorkspaceInfo(root=str(ws.root), new=new, created=ws.config.created, kscope_version=ws.config.kscope_version)


def new_task(
    name: str,
    *,
    workspace: str | Path = ".",
    repo: str | Path,
    baseline_ref: str,
    allowed: Sequence[str],
    eval_command: str | None = None,
    metric: str | None = None,
    direction: str | None = None,
    timeout: float,
    correctness: Sequence[str] = (),
    shell: bool = False,
    runs: int = 20,
    warmup: int = 1,
    kernel: str | None = None,
    lever: str | None = None,
    shapes: str | None = None,
    target: float | None = None,
    from_replay: str | Path | None = None,
    from_gap: str | Path | None = None,
    gap_rank: int = 1,
) -> Task:
    """``kscope task new``: validate and write ``tasks/NAME/task.json`` and ``TASK.md``.

    ``from_replay``: a script ``kscope replay`` wrote; its header fills the eval command (``python3
    SCRIPT``, absolute), metric (``time_us``), direction (``lower``), kernel and shapes not given.
    ``from_gap``: a profile; its ``gap_rank``-th kernel (or the hottest matching ``kernel``, a regex) is the
    task's kernel, with its identity, the shapes that launched it and the roofline's stop condition
    (``analyses.seed``) where the trace recorded shapes.

    Commands are split with shell quoting rules and run without a shell, unless ``shell``. ``target``
    is the stop condition: the speedup at which the loop is done; ``lever`` the kind of change tried
    (``kernelscope.model.levers``), which ``kscope suggest`` reads back from the ledger.
    """
    from kernelscope import __version__

    if from_replay is not None:  # the script's header fills what the options leave out
        fill = replay_task_fields(Replay.from_script(Path(from_replay)), str(Path(from_replay).resolve()))
        eval_command, metric = eval_command or fill.eval_command, metric or fill.metric
        direction, kernel, shapes = direction or fill.direction, kernel or fill.kernel, shapes or fill.shapes
    identity, evidence = None, []
    if from_gap is not None:
        gap_seed = _seed(Path(from_gap), rank=gap_rank, kernel=kernel)
        kernel, identity, evidence = gap_seed.kernel, gap_seed.identity, gap_seed.evidence
        shapes, target = shapes or gap_seed.shapes, target or gap_seed.target_speedup
    if eval_command is None or metric is None or direction is None:
        needed = {"--eval-command CMD": eval_command, "--metric NAME": metric, "--direction lower|higher": direction}
        missing = ", ".join(flag for flag, value in needed.items() if value is None)
        raise InputError(f"kscope task new needs {missing} (or --from-replay SCRIPT)")
    if direction not in ("lower", "higher"):
        raise InputError(f"--direction {direction}: choose lower (times) or higher (throughputs)")
    if lever is not None and lever not in LEVERS:
        raise InputError(f"--lever {lever}: choose one of {', '.join(LEVERS)}")
    return loop_task.create(
        loop_workspace.open_workspace(Path(workspace)),
        name,
        repo=Path(repo),
        baseline_ref=baseline_ref,
        allowed=allowed,
        eval_command=eval_command,
        metric=metric,
        direction=cast(Direction, direction),
        timeout=timeout,
        correctness=correctness,
        shell=shell,
        runs=runs,
        warmup=warmup,
        kernel=kernel,
        lever=lever,
        shapes=shapes,
        target_speedup=target,
        identity=identity,
        evidence=evidence,
        version=__version__,
    )


def _seed(trace: Path, *, rank: int, kernel: str | None) -> GapSeed:
    """A gap row's task fields; shapes and the stop condition only from a Kineto trace with shapes."""
    gap_result = gap_report([trace])
    calls: list[OpCall] = []
    roof, no_roof = None, None
    if sniff(trace) == "kineto":
        calls, device = read_op_calls(trace)
        gpu = device or detect()  # once: detect() runs nvidia-smi/rocm-smi
        if calls and gpu is None:
            no_roof = "the trace names no GPU and none is present"
        elif calls and gpu is not None:
            try:
                roof = from_calls(calls, _peaks(None, gpu, None))
            except InputError as exc:  # a GPU the hardware database lacks: the task stands without a stop
                no_roof = str(exc)
    return seed_from_gap(gap_result, calls, roof, rank=rank, kernel=kernel, no_roof=no_roof)


def show_task(name: str, *, workspace: str | Path = ".") -> Task:
    """``kscope task show``: the validated ``task.json`` of ``name``."""
    return loop_task.load(loop_workspace.open_workspace(Path(workspace)), name)


def evaluate(
    name: str,
    *,
    workspace: str | Path = ".",
    runs: int | None = None,
    refresh_baseline: bool = False,
    seed: int = 0,
    progress: Progress | None = None,
) -> EvalResult:
    """``kscope eval``: the working tree against the task's baseline, interleaved runs, the decision rule
    (``docs/eval.md``); written to ``runs/NAME/ID/result.json`` and appended to the ledger."""
    from kernelscope import __version__

    ws = loop_workspace.open_workspace(Path(workspace))
    task = loop_task.load(ws, name)
    return loop_eval.evaluate(
        ws, task, runs=runs, refresh_baseline=refresh_baseline, seed=seed, progress=progress, version=__version__
    )


def ledger(
    *, workspace: str | Path = ".", task: str | None = None, status: str | None = None, since: str | None = None
) -> LedgerView:
    """``kscope ledger``: the workspace's eval records (filtered by task, status, ISO ``since``) and a
    per-task summary."""
    ws = loop_workspace.open_workspace(Path(workspace))
    return loop_ledger.view(ws.ledger, task=task, status=status, since=since)


def memory_init(*, workspace: str | Path = ".") -> MemoryFolder:
    """``kscope memory init``: the workspace's ``memory/`` and its README, made if missing (idempotent),
    with a count of the records (each validated)."""
    return loop_memory.init(loop_workspace.open_workspace(Path(workspace)))


def memory_new(
    *,
    category: str | None = None,
    workspace: str | Path = ".",
    task: str | None = None,
    kernel: str | None = None,
    title: str | None = None,
    hypothesis: str | None = None,
    author: str | None = None,
    from_eval: str | None = None,
) -> MemoryRecord:
    """``kscope memory new``: write the next ``memory/v<N>.json`` (schema ``kernelscope.memory.v1``).

    ``category`` is one lever of ``kernelscope.model.levers``; ``author`` defaults to ``$USER``, else git's
    ``user.name``; ``from_eval`` (an eval id) fills task, performance, correctness and commit from
    ``runs/TASK/ID/result.json``, or from its ledger line when that file is gone, and the category and
    kernel from its task when they are not given.
    """
    ws = loop_workspace.open_workspace(Path(workspace))
    return loop_memory.new(
        ws,
        category=category,
        author=author or loop_memory.default_author(os.environ, ws.root),
        now=datetime.now(UTC),
        task=task,
        kernel=kernel,
        title=title,
        hypothesis=hypothesis,
        from_eval=from_eval,
    )


def memory_show(version: int, *, workspace: str | Path = ".") -> MemoryRecord:
    """``kscope memory show N``: the validated record ``v<N>``, masked or not."""
    return loop_memory.load(loop_workspace.open_workspace(Path(workspace)), version)


def memory_set(
    version: int,
    assignments: Sequence[str] = (),
    *,
    workspace: str | Path = ".",
    from_json: str | Path | None = None,
    add_evidence: tuple[str, str, str] | None = None,
) -> MemoryRecord:
    """``kscope memory set N FIELD=VALUE...``: change a record; the whole record is validated before it
    is written, so an invalid change leaves the file as it was. Order and syntax: ``docs/memory.md``."""
    patch = None if from_json is None else memory_edit.read_patch(Path(from_json))
    if patch is None and add_evidence is None and not assignments:
        raise InputError("kscope memory set needs FIELD=VALUE, FIELD+=VALUE, --from-json FILE or --add-evidence")
    evidence = [] if add_evidence is None else [add_evidence]
    return loop_memory.update(
        loop_workspace.open_workspace(Path(workspace)),
        version,
        lambda doc: memory_edit.apply(doc, assignments, patch=patch, evidence=evidence),
    )


def memory_mask(version: int, *, reason: str, workspace: str | Path = ".", by: str | None = None) -> MemoryRecord:
    """``kscope memory mask N``: hide the record from list, summary and latest; ``by`` (default as for
    ``memory_new``'s author), the time and ``reason`` are recorded and kept after an unmask."""
    ws = loop_workspace.open_workspace(Path(workspace))
    who = by or loop_memory.default_author(os.environ, ws.root)
    return loop_memory.mask(ws, version, by=who, reason=reason, now=datetime.now(UTC))


def memory_unmask(
    version: int, *, workspace: str | Path = ".", by: str | None = None, reason: str | None = None
) -> MemoryRecord:
    """``kscope memory unmask N``: show the record again; the mask stays in its history."""
    ws = loop_workspace.open_workspace(Path(workspace))
    who = by or loop_memory.default_author(os.environ, ws.root)
    return loop_memory.unmask(ws, version, by=who, reason=reason, now=datetime.now(UTC))


def memory_list(
    *,
    workspace: str | Path = ".",
    include_masked: bool = False,
    task: str | None = None,
    kernel: str | None = None,
    category: str | None = None,
) -> MemoryList:
    """``kscope memory list``: the records that pass the filters, oldest first; masked ones only with
    ``include_masked`` (how many were left out is part of the result)."""
    ws = loop_workspace.open_workspace(Path(workspace))
    shown, hidden = loop_memory.select(ws, include_masked=include_masked, task=task, kernel=kernel, category=category)
    return MemoryList(records=shown, hidden_masked=hidden)


def memory_summary(
    *,
    workspace: str | Path = ".",
    include_masked: bool = False,
    task: str | None = None,
    kernel: str | None = None,
    category: str | None = None,
) -> MemorySummary:
    """``kscope memory summary``: per category iterations, wins, best speedup and latest; per task and
    kernel the progress (best speedup, code-object metrics first to last); the pitfalls met."""
    ws = loop_workspace.open_workspace(Path(workspace))
    shown, hidden = loop_memory.select(ws, include_masked=include_masked, task=task, kernel=kernel, category=category)
    return loop_memory.summarize(shown, hidden)


def memory_latest(
    *,
    workspace: str | Path = ".",
    include_masked: bool = False,
    task: str | None = None,
    kernel: str | None = None,
    category: str | None = None,
) -> MemoryRecord:
    """``kscope memory latest``: the newest record that passes the filters."""
    return loop_memory.latest(
        loop_workspace.open_workspace(Path(workspace)),
        include_masked=include_masked,
        task=task,
        kernel=kernel,
        category=category,
    )
