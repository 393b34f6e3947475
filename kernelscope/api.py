"""The notebook-facing API. Each function here backs one CLI command with the same parameters."""

from __future__ import annotations

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
from kernelscope.analyses.report import Report
from kernelscope.analyses.report import build as build_report
from kernelscope.analyses.roofline import Cost, Peaks, RooflineResult, from_calls, from_measured, point
from kernelscope.analyses.roofline import evaluate as evaluate_expression
from kernelscope.analyses.stats import ALPHA, MIN_SAMPLES, RESAMPLES
from kernelscope.analyses.window import Window, phases, select
from kernelscope.ceilings.measure import CeilingProfile
from kernelscope.ceilings.store import find_profile, load_profile
from kernelscope.codeobj.read import read_code_objects
from kernelscope.errors import FormatError, InputError
from kernelscope.hw.specs import GpuSpec, database, detect, lookup
from kernelscope.identity import classify
from kernelscope.loop import eval as loop_eval
from kernelscope.loop import ledger as loop_ledger
from kernelscope.loop import task as loop_task
from kernelscope.loop import workspace as loop_workspace
from kernelscope.model import Profile
from kernelscope.model.att import AttReport
from kernelscope.model.codeobj import CodeObject
from kernelscope.model.identity import KernelIdentity
from kernelscope.model.measurement import Measurement
from kernelscope.model.shapes import ShapeRun
from kernelscope.model.source import SourceMatch
from kernelscope.model.task import Direction, EvalResult, LedgerView, Task, WorkspaceInfo
from kernelscope.profiling import ProfileConfig, ProfileRun
from kernelscope.profiling import run as run_profiled
from kernelscope.readers import att as att_reader
from kernelscope.readers import ncu_source, ncu_source_csv
from kernelscope.readers._sniff import sniff
from kernelscope.readers.kineto_ops import read_op_calls
from kernelscope.readers.shape_ledger import read as read_shape_ledger
from kernelscope.sources.find import Finder
from kernelscope.sources.index import Progress as IndexProgress
from kernelscope.sources.index import RepoSummary, SourceIndex
from kernelscope.timing import bench, load_target

Progress = Callable[[str], None]


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
        costs = [ncu_cost(k) for k in report.launches]
        rows = [(c.name, c.flops, c.tensor_flops, c.dram_bytes, float(c.duration_ns)) for c in costs]
        device = report.devices[0].name if report.devices else None
        return from_measured(rows, _peaks(gpu, device, ceilings_file), dtype)
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
    gap = gap_report(traces, window=window) if traces else None
    roof = None
    runs = read_shape_ledger(shapes_file) if shapes_file is not None else []
    kineto = [Path(t) for t in traces if sniff(Path(t)) == "kineto"]
    if kineto:
        calls, device = read_op_calls(kineto[0])
        if calls:
            roof = from_calls(calls, _peaks(gpu, device, ceilings_file))
            if shapes_file is None:
                runs = runs_from_calls(calls, model=kineto[0].name.split(".")[0], stage=None)
    extra = [p for p in (shapes_file, ncu_report) if p is not None]
    inputs = [str(p) for p in [*traces, *code, *att_dirs, *extra]]
    return build_report(
        title=title or f"kernelscope report: {Path(inputs[0]).name}",
        created=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        inputs=inputs,
        gap=gap,
        roofline=roof,
        code=isa(code) if code else [],
        coverage=coverage(runs) if runs else None,
        ncu=ncu(ncu_report) if ncu_report is not None else None,
        att=att(att_dirs).captures if att_dirs else [],
    )


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
    path = Path(path)
    source = ncu_source.read(path, select=selector(kernel)) if ncu_source.is_report(path) else ncu_source_csv.read(path)
    return summarize(source, kernel=kernel, top=top, context=context)


def att(
    paths: Sequence[str | Path],
    *,
    top: int = 10,
    context: int = 3,
    bins: int = 200,
    arch: str | None = None,
    workers: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> AttReport:
    """``kscope att``: stall hotspots, wave states, occupancy and the code.json cross-check of decoded ATT
    folders (each path a ``ui_output_agent_*`` folder or a folder holding them).

    ``top`` hotspots and source lines (0: all), ``context`` instructions around each hotspot, ``bins``
    points of the wave-state timeline, ``arch`` the occupancy rules (default: from the capture),
    ``workers`` processes for large folders; ``progress(folder, wave files read, wave files)``.
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
        capture = att_reader.read(folder, workers=workers, progress=tick)
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
    eval_command: str,
    metric: str,
    direction: str,
    timeout: float,
    correctness: Sequence[str] = (),
    shell: bool = False,
    runs: int = 20,
    warmup: int = 1,
    kernel: str | None = None,
    shapes: str | None = None,
    target: float | None = None,
) -> Task:
    """``kscope task new``: validate and write ``tasks/NAME/task.json`` and ``TASK.md``.

    Commands are split with shell quoting rules and run without a shell, unless ``shell``. ``target``
    is the stop condition: the speedup at which the loop is done.
    """
    from kernelscope import __version__

    if direction not in ("lower", "higher"):
        raise InputError(f"--direction {direction}: choose lower (times) or higher (throughputs)")
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
        shapes=shapes,
        target_speedup=target,
        version=__version__,
    )


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
