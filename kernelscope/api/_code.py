"""Code objects, hardware and the roofline: ``kscope isa``, ``fit``, ``ceilings``, ``hw``, ``roofline``, ``bench``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kernelscope.analyses.fit import compare as compare_fits
from kernelscope.analyses.fit import fit as fit_kernel
from kernelscope.analyses.ncu import cost as ncu_cost
from kernelscope.analyses.occupancy import arch_limits, occupancy
from kernelscope.analyses.roofline import Cost, from_calls, from_measured, point
from kernelscope.analyses.roofline import evaluate as evaluate_expression
from kernelscope.analyses.variants import which_ran
from kernelscope.api._gap import gap_report
from kernelscope.api._shapes import with_replays
from kernelscope.ceilings.measure import CeilingProfile
from kernelscope.ceilings.store import find_profile, load_profile
from kernelscope.codeobj.mix import matrix_dtype, sass_opcode
from kernelscope.codeobj.read import read_code_objects
from kernelscope.codeobj.tools import Progress
from kernelscope.errors import InputError
from kernelscope.hw.specs import GpuSpec, database, detect, lookup
from kernelscope.inputs import Input, open_profile
from kernelscope.model import KernelLaunch
from kernelscope.model.codeobj import CodeObject, FitComparison, FitReport
from kernelscope.model.measurement import Measurement
from kernelscope.model.ncu import NcuSource
from kernelscope.model.ops import NO_SHAPES
from kernelscope.model.roofline import Peaks, RooflineResult
from kernelscope.timing import bench, load_target


def isa(
    paths: Sequence[str | Path],
    *,
    block_size: int | None = None,
    dynamic_shared: int | None = None,
    arch: str | None = None,
    progress: Progress | None = None,
) -> list[CodeObject]:
    """``kscope isa``: resources, instruction mix and occupancy of every kernel in the code objects
    (only ``arch``'s, e.g. ``sm_90`` or ``gfx942``, from binaries built for several); ``progress(what, done,
    total)`` ticks per file of a folder and per cubin of a fat binary."""
    if not paths:
        raise InputError("no code objects given")
    if block_size is not None and block_size <= 0:
        raise InputError(f"--block-size {block_size}: must be a positive thread count")
    objs = read_code_objects([Path(p) for p in paths], arch, progress)
    for o in objs:
        for k in o.kernels:
            k.occupancy = occupancy(k, block_size, dynamic_shared)
            if k.occupancy is not None:
                continue
            if arch_limits(k.arch) is None:
                note = f"occupancy: no limits for {k.arch} in kernelscope/data/arch"
            else:  # a cubin says no block size; Triton's metadata beside it would
                note = "occupancy: the object names no block size: pass --block-size (and --dynamic-shared)"
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
    trace: Sequence[str | Path] | None = None,
    progress: Progress | None = None,
) -> FitReport:
    """``kscope fit``: the ISA fit view of every kernel in the code objects; with ``trace`` (a profile of the
    workload), of a timed kernel only the binary that fits the variant that ran most."""
    objs = isa(paths, block_size=block_size, dynamic_shared=dynamic_shared, arch=arch, progress=progress)
    ran = which_ran(objs, gap_report(trace).kernels) if trace else {}
    return FitReport(
        kernels=[fit_kernel(k) for o in objs for k in o.kernels if not (id(k) in ran and ran[id(k)] is None)]
    )


def fit_compare(
    paths: Sequence[str | Path],
    *,
    block_size: int | None = None,
    dynamic_shared: int | None = None,
    arch: str | None = None,
    progress: Progress | None = None,
) -> FitComparison:
    """``kscope fit --compare``: the same kernels of several code objects side by side, one column each
    (a fat binary gives one per architecture, so one bundle of two targets is enough)."""
    objs = isa(paths, block_size=block_size, dynamic_shared=dynamic_shared, arch=arch, progress=progress)
    if len(objs) < 2:
        got = ", ".join(f"{o.path} ({o.arch})" for o in objs)
        raise InputError(f"--compare needs at least two code objects, got {len(objs)}: {got}")
    return compare_fits(objs)


def gpu_peaks(gpu: str | None, device_hint: str | None, ceilings_file: Path | None) -> Peaks:
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


def trace_peaks(gpu: str | None, device: str | None, ceilings_file: Path | None) -> tuple[Peaks | None, str | None]:
    """The roofs for a trace's shapes, or None and why: a GPU the trace names (``device``) but the database
    lacks, or no GPU at all, leaves the rest of the evidence standing; one the user named (``gpu``,
    ``ceilings_file``) must exist."""
    try:
        return gpu_peaks(gpu, device, ceilings_file), None
    except InputError as exc:
        if gpu is not None or ceilings_file is not None:
            raise
        return None, str(exc)


def counters_roofline(
    launches: Sequence[KernelLaunch], peaks: Peaks, dtype: str | None, source: NcuSource | None = None
) -> RooflineResult:
    """One roofline point per Nsight Compute launch, from the FLOPs and DRAM bytes its counters hold; matrix
    work is judged at ``dtype``, else at the type the kernel's SASS matrix instructions name (``source``)."""
    costs = [ncu_cost(k) for k in launches]
    if costs and all(c.flops is None and c.dram_bytes is None for c in costs):
        raise InputError(
            f"none of the {len(costs)} profiled launches carries the FLOP or DRAM-byte counters a roofline needs "
            "(a --page details export never does): read the .ncu-rep, or its --page raw export, of a profile taken "
            "with ncu --set full (or --section SpeedOfLight_RooflineChart)"
        )
    found = {}
    for k in source.kernels if source is not None else ():
        named = matrix_dtype(op for i in k.instructions if (op := sass_opcode(i.sass)))
        if named is not None:
            found[k.name] = named
    rows = [(c.name, c.flops, c.tensor_flops, c.dram_bytes, float(c.duration_ns)) for c in costs]
    return from_measured(rows, peaks, dtype, found)


def roofline(
    trace: Path | Input | None = None,
    *,
    gpu: str | None = None,
    flops: str | None = None,
    bytes_moved: str | None = None,
    time_us: float | None = None,
    dtype: str | None = None,
    vector: bool = False,
    var: Sequence[str] = (),
    label: str = "kernel",
    ceilings_file: Path | None = None,
    capture: str | Path | None = None,
) -> RooflineResult:
    """``kscope roofline``: from a trace's recorded op shapes, an Nsight Compute report's counters, or
    given FLOPs/bytes/time. ``capture``: a Kineto trace taken while the trace's CUDA/HIP graphs were captured,
    whose op calls the graph replays' kernels are attributed to (``analyses.graph_ops``)."""
    h = open_profile(trace) if trace is not None else None
    if h is not None and h.format in ("ncu-rep", "ncu-csv"):
        report = h.profile
        device = report.devices[0].label if report.devices else None
        sass = h.ncu if h.format == "ncu-rep" else None  # a details/raw CSV export holds no SASS
        return counters_roofline(report.launches, gpu_peaks(gpu, device, ceilings_file), dtype, sass)
    if h is not None:
        calls, notes = with_replays(h, capture)
        if not calls:
            raise InputError(f"{h}: {NO_SHAPES}")
        result = from_calls(calls, gpu_peaks(gpu, h.gpu, ceilings_file))
        result.notes = notes
        return result
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
        dtype=dtype or "bf16",
        matrix=not vector,
    )
    peaks = gpu_peaks(gpu, None, ceilings_file)
    return RooflineResult(peaks=peaks, points=[point(label, cost, time_us * 1e3, 1, peaks)])


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
