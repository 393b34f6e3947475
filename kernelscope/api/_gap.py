"""Gap tables and profile diffs: ``kscope gap`` and ``kscope diff``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import msgspec

from kernelscope import readers
from kernelscope.analyses.diff import diff as diff_profiles
from kernelscope.analyses.gap import GapAccumulator, attach_sources, gap
from kernelscope.analyses.steady import select as steady_select
from kernelscope.analyses.variants import attach_code, attach_launches, by_variant
from kernelscope.analyses.window import Window, apart, phases, select
from kernelscope.api._names import locate_sources
from kernelscope.errors import InputError, noting_partial
from kernelscope.inputs import Input, open_all
from kernelscope.inputs import open as open_input
from kernelscope.model import Profile, numbers
from kernelscope.model.columns import LaunchColumns
from kernelscope.model.diff import DiffOptions, DiffResult
from kernelscope.model.gap import HARNESS_PHASE, GapOptions, GapResult, GroupBy, Steady
from kernelscope.model.launches import TritonLaunch
from kernelscope.model.stats import ALPHA, MIN_SAMPLES, RESAMPLES
from kernelscope.readers import kineto, launch_ledger

Progress = Callable[[str], None]


def _with_rank(batch: Profile, rank: int) -> Profile:
    batch.launches = [k if k.rank is not None else msgspec.structs.replace(k, rank=rank) for k in batch.launches]
    batch.memory_ops = [m if m.rank is not None else msgspec.structs.replace(m, rank=rank) for m in batch.memory_ops]
    batch.annotations = [a if a.rank is not None else msgspec.structs.replace(a, rank=rank) for a in batch.annotations]
    return batch


def _batches(inputs: Sequence[Input], progress: Progress | None, *, whole: bool = False) -> Iterator[Profile]:
    """Every file's batches; with several files, a file that names no rank gets its position as rank.

    ``whole`` reads each file at once (``readers.read``): only then are launches linked to API calls
    that come later in the file (``launch_ns``), which step windows and phases need.
    """
    for i, h in enumerate(inputs):
        for batch in [readers.read(h.path, fmt=h.format)] if whole else readers.stream(h.path, fmt=h.format):
            if progress:
                progress(str(h.path))
            yield _with_rank(batch, i) if len(inputs) > 1 else batch


@dataclass
class _Seen:
    """What the inputs say beside their kernels, gathered as they are read: the Python modules their frames
    show ran (``Profile.modules``) and the GPUs the records name (formats read whole have no header to peek),
    and which inputs were read as records (their GPUs are known: no header to peek again)."""

    modules: set[str] = field(default_factory=set)
    archs: set[str] = field(default_factory=set)
    as_records: set[int] = field(default_factory=set)

    def add(self, profile: Profile) -> None:
        self.modules.update(profile.modules)
        self.archs.update(d.arch for d in profile.devices if d.arch)


def _feed(acc: GapAccumulator, inputs: Sequence[Input], progress: Progress | None) -> _Seen:
    """Stream every file into ``acc``: as columns where the reader decodes to them, else as records."""
    seen = _Seen()
    for i, h in enumerate(inputs):
        columns: Iterable[LaunchColumns] | None = h.columns()  # a Kineto trace's, if its ops were read
        if columns is None:
            columns = readers.stream_columns(h.path, fmt=h.format)
        if columns is None:
            for batch in _batches([h], progress):
                seen.add(batch)
                acc.add(_with_rank(batch, i) if len(inputs) > 1 else batch)
            seen.as_records.add(i)
            continue
        for cols in columns:
            if progress:
                progress(str(h.path))
            if cols.host is not None:  # the host names hold the Python frames (a Kineto trace's)
                seen.modules.update(m for n in cols.host.names if (m := kineto.python_module(n)) is not None)
            acc.add_columns(replace(cols, rank=i) if len(inputs) > 1 and cols.rank is None else cols)
    return seen


def gap_report(
    paths: Sequence[str | Path | Input],
    *,
    fmt: str | None = None,
    window: str | None = None,
    phase_by: str | None = None,
    group_by: GroupBy = "name",
    per_rank: bool = False,
    include_memory: bool = False,
    include_harness: bool = False,
    find_sources: bool = False,
    repo: Sequence[str | Path] | None = None,
    index_db: Path | None = None,
    arch: str | None = None,
    module: Sequence[str] | None = None,
    code: Sequence[str | Path] | None = None,
    progress: Progress | None = None,
) -> GapResult:
    """Rank the kernels of one or more profiler outputs by GPU time.

    Without ``window``/``phase_by`` the files are streamed through the aggregation as columns (memory
    bounded by the reader's batch, no record per launch); with them the profile is materialized as
    records, since selecting steps needs the annotations and the launch correlations of the whole file.
    A handle (``kernelscope.open``) whose columns are already decoded (``ops``) is aggregated from them.
    Benchmark and tuning bursts (``analyses/harness.py``) are set aside and listed unless ``include_harness``.
    ``code`` (code objects, Triton cache folders): each kernel row gets those that fit the variant it ran.
    ``arch`` (the GPU the trace ran on; default: the one its header names): picks among per-target source
    definitions (``--find-sources``); ``module`` (Python packages or modules the workload ran), with those
    the traces' Python frames show, pick among copies of a kernel in several projects.
    """
    if not paths:
        raise InputError("no input files given")
    objects = [o for h in map(open_input, code or ()) for o in h.code]  # read first: a bad one fails before any work
    inputs = open_all(paths, fmt=fmt)
    if find_sources and group_by not in ("name", "function", "variant"):
        raise InputError("--find-sources needs --group-by name, function or variant (rows must be kernels)")
    with noting_partial() as partial:  # files beside the inputs that could not be read: the result says so
        with numbers.tally_dropped() as dropped:
            options = GapOptions(
                include_memory=include_memory, group_by=group_by, per_rank=per_rank, include_harness=include_harness
            )
            result, seen = _gap(inputs, fmt, window, phase_by, options, progress)
        result.totals.dropped_records = dropped[0]
        launches = _ledgers(result, inputs) if find_sources or group_by in ("name", "variant") else []
        if find_sources:
            names = list(dict.fromkeys(r.name for part in [result, *result.phases] for r in part.kernels))
            arch = arch or _trace_arch(inputs, result, seen)
            ran = [*(module or ()), *sorted(seen.modules)]
            found = locate_sources(names, repos=repo or (), db=index_db, arch=arch, launches=launches, modules=ran)
            attach_sources(result, {m.name: m for m in found})
    result.warnings.extend(partial)
    if objects:
        attach_code(result, objects)
    if launches and group_by in ("name", "variant"):
        attach_launches(result, launches)
    return result


def _trace_arch(inputs: Sequence[Input], result: GapResult, seen: _Seen) -> str | None:
    """The GPU the traces ran on, where their records (``seen``) or, for those read as columns, their headers
    name exactly one (several: none is picked, with a warning, since per-target sources would then be chosen
    for one GPU of them)."""
    peeked = (readers.devices(h.path, fmt=h.format) for i, h in enumerate(inputs) if i not in seen.as_records)
    found = {d.arch for devices in peeked for d in devices if d.arch} | seen.archs
    found = {a.split(":", maxsplit=1)[0] for a in found}  # gfx942:sramecc+:xnack- is gfx942
    if len(found) > 1:
        result.warnings.append(f"sources not picked per GPU: the traces name {', '.join(sorted(found))}")
    return found.pop() if len(found) == 1 else None


def _ledgers(result: GapResult, inputs: Sequence[Input]) -> list[TritonLaunch]:
    """The launch ledgers ``kscope profile`` wrote beside its traces: the constexprs each Triton variant ran,
    and the module that defined each kernel; an unreadable ledger costs those, with a warning, not the table."""
    launches: list[TritonLaunch] = []
    for h in inputs:
        ledger = launch_ledger.beside(h.path) if h.format == kineto.FORMAT else None
        try:
            launches += launch_ledger.read(ledger) if ledger is not None else []
        except InputError as exc:
            result.warnings.append(f"Triton configs not named: {exc}")
    return launches


def _gap(
    paths: Sequence[str | Path | Input],
    fmt: str | None,
    window: str | None,
    phase_by: str | None,
    options: GapOptions,
    progress: Progress | None,
) -> tuple[GapResult, _Seen]:
    """The table, and what the inputs said beside it."""
    inputs = open_all(paths, fmt=fmt)
    for h in inputs:  # sniffed (once) before reading anything: a bad path fails with no partial work shown
        _ = h.format
    group_by = options.group_by
    if window is None and phase_by is None and group_by != "variant":
        acc = GapAccumulator(options)
        seen = _feed(acc, inputs, progress)
        return acc.result(), seen
    table = by_variant if group_by == "variant" else gap  # a variant is in each launch's record, not its name
    profile = Profile.combine(list(_batches(inputs, progress, whole=True)))
    win = Window.parse(window) if window is not None else None
    found: list[Steady] = []
    if win is not None and win.steady:
        profile, found = steady_select(profile)
    elif win is not None:
        profile = select(profile, win)
    result = table(profile, options)
    result.window = win.describe() if win else None
    if found:
        result.steady = found
        _per_iteration(result, found)
    if phase_by is not None:
        parts = []
        work = profile
        if result.harness and not options.include_harness:  # set aside: a phase of its own, not in the others
            work, held, spans = apart(profile, result.harness)
            r = table(held, msgspec.structs.replace(options, include_harness=True), spans)
            r.phase, r.harness = HARNESS_PHASE, result.harness  # found in the whole trace, not in this part
            parts.append(r)
        for label, (sub, windows) in phases(work, phase_by).items():
            r = table(sub, options, windows)
            r.phase = label
            parts.append(r)
        result.phases = sorted(parts, key=lambda r: -r.totals.kernel_time_us)
    seen = _Seen(as_records=set(range(len(inputs))))
    seen.add(profile)
    return result, seen


def _per_iteration(result: GapResult, found: list[Steady]) -> None:
    """Each row's calls and time per steady iteration, where every rank found the same number of them."""
    counts = {s.iterations for s in found}
    if len(counts) != 1:
        result.warnings.append("ranks found different numbers of steady iterations: no per-iteration columns")
        return
    n = counts.pop()
    for r in result.kernels:
        r.calls_per_iteration, r.us_per_iteration = r.calls / n, r.total_us / n


def diff(
    a: Sequence[str | Path],
    b: Sequence[str | Path],
    *,
    fmt: str | None = None,
    window: str | None = None,
    group_by: GroupBy = "name",
    include_harness: bool = False,
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
    sides = [open_all(a, fmt=fmt), open_all(b, fmt=fmt)]
    for h in sides[0] + sides[1]:  # sniffed (once) before reading anything, so no partial work is shown
        _ = h.format
    win = Window.parse(window) if window is not None else None
    accs = []
    for inputs in sides:
        acc = GapAccumulator(GapOptions(group_by=group_by, include_harness=include_harness))
        if win is None:
            _feed(acc, inputs, progress)
        else:
            acc.add(select(Profile.combine(list(_batches(inputs, progress, whole=True))), win))
        accs.append(acc)
    result = diff_profiles(accs[0], accs[1], options)
    result.window = win.describe() if win else None
    return result
