"""Readers: one module per input format, chosen by content sniffing, each with one function out.

Every reader module exposes ``read(path, *, rank=None) -> Profile``; readers of formats that can be
large also expose ``stream(path, *, rank=None) -> Iterator[Profile]`` yielding batches whose launches
concatenate to ``read``'s, and may expose ``stream_columns`` (``LaunchColumns`` batches) for
aggregations over millions of launches. The registry below maps format names to modules and file signatures
(``_sniff``) to format names; modules are imported only when used.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Generator, Iterator
from pathlib import Path
from types import ModuleType

from kernelscope.errors import FormatError, InputError
from kernelscope.model import Profile
from kernelscope.model.columns import LaunchColumns
from kernelscope.model.records import DeviceInfo
from kernelscope.readers._sniff import REDIRECTS, sniff

# format name -> (module, one-line description). Order is the order `kscope formats` lists them.
READERS: dict[str, tuple[str, str]] = {
    "kineto": ("kernelscope.readers.kineto", "PyTorch profiler (Kineto) Chrome trace .json/.json.gz, CUDA and ROCm"),
    "rocprof-kernel-trace": (
        "kernelscope.readers.rocprof_csv",
        "rocprofv3 kernel_trace.csv (every header version, rocpd-converted too) and rocprof v1 results.csv",
    ),
    "rocprof-kernel-stats": ("kernelscope.readers.rocprof_stats", "rocprofv3 kernel_stats.csv (--stats)"),
    "rocprof-json": ("kernelscope.readers.rocprof_json", "rocprofv3 --output-format json results.json"),
    "rocprof-v1-json": (
        "kernelscope.readers.rocprof_v1_json",
        "rocprof v1/v2 --hip-trace/--sys-trace results.json (Chrome trace)",
    ),
    "rocpd": ("kernelscope.readers.rocpd", "rocprofv3 rocpd SQLite database (kernels view)"),
    "rpd": ("kernelscope.readers.rpd", "rocmProfileData (RPD) SQLite trace (rpd_tracer, runTracer.sh)"),
    "nsys-sqlite": ("kernelscope.readers.nsys_sqlite", "Nsight Systems SQLite export (CUPTI_ACTIVITY_KIND_KERNEL)"),
    "nsys-rep": (
        "kernelscope.readers.nsys_rep",
        "Nsight Systems report .nsys-rep (exported with nsys export --type sqlite, where nsys is installed)",
    ),
    "nvprof": (
        "kernelscope.readers.nvprof",
        "nvprof's database (nvprof --export-profile / -o, .nvvp or .nvprof): kernels, copies and fills, GPUs",
    ),
    "nsys-kern-sum": (
        "kernelscope.readers.nsys_stats",
        "Nsight Systems nsys stats cuda_gpu_kern_sum report (CSV or TSV, any --timeunit; or its column/table text)",
    ),
    "nsys-gpu-trace": (
        "kernelscope.readers.nsys_gpu_trace",
        "Nsight Systems nsys stats cuda_gpu_trace report (CSV, TSV or its column text, any --timeunit): every launch",
    ),
    "torch-table": (
        "kernelscope.readers.torch_table",
        "torch.profiler's printed key_averages().table(): its kernel rows (a pasted table or a log holding one)",
    ),
    "nvprof-summary": (
        "kernelscope.readers.nvprof_summary",
        "nvprof's printed summary (==PID== Profiling result:): its kernel rows, every layout, CSV and -u too, in a log",
    ),
    "nvprof-trace": (
        "kernelscope.readers.nvprof_trace",
        "nvprof's GPU trace (nvprof --print-gpu-trace, printed or --csv): kernels, copies and fills one by one",
    ),
    "ncu-csv": ("kernelscope.readers.ncu_csv", "Nsight Compute CSV export (--page details|raw --csv)"),
    "ncu-text": (
        "kernelscope.readers.ncu_text",
        "Nsight Compute's printed details (ncu ./app, ncu -i REPORT): every kernel's sections, in a log or alone",
    ),
    "ncu-rep": ("kernelscope.readers.ncu_rep", "Nsight Compute report .ncu-rep (needs the ncu-report wheel)"),
    "xplane": ("kernelscope.readers.xplane", "JAX/XLA profiler XPlane .xplane.pb (jax.profiler.trace), CUDA and ROCm"),
    "profile-json": ("kernelscope.readers.profile_json", "kernelscope's own saved profile (kernelscope.profile.v1)"),
}


def _module(fmt: str) -> ModuleType:
    if fmt not in READERS:
        raise InputError(f"unknown format {fmt!r}; known formats: {', '.join(READERS)}")
    return importlib.import_module(READERS[fmt][0])


def detect(path: str | Path) -> str:
    """The format name of ``path``, from its content (the extension is only a tie-breaker)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file or directory")
    if p.is_dir():
        raise InputError(f"{p}: is a directory; pass the profiler's output file(s) inside it")
    fmt = sniff(p)
    if fmt is None:
        raise FormatError(
            p,
            "a profiler output kscope reads (" + ", ".join(READERS) + ")",
            "content that matches none of them",
            "pass --format NAME if you know the format",
        )
    if fmt in REDIRECTS:
        found, fix = REDIRECTS[fmt]
        raise FormatError(p, "a profiler output kscope reads", found, fix)
    return fmt


def read(path: str | Path, *, fmt: str | None = None, rank: int | None = None) -> Profile:
    """Read one profiler output into a ``Profile``; the format is sniffed unless ``fmt`` names it."""
    name = fmt or detect(path)
    prof: Profile = _module(name).read(Path(path), rank=rank)
    return prof.drop_impossible()


def stream(path: str | Path, *, fmt: str | None = None, rank: int | None = None) -> Iterator[Profile]:
    """Read in batches where the format allows it (bounded memory), else yield the whole profile once."""
    name = fmt or detect(path)
    mod = _module(name)
    batches = mod.stream(Path(path), rank=rank) if hasattr(mod, "stream") else iter([mod.read(Path(path), rank=rank)])
    for batch in batches:
        yield batch.drop_impossible()


def devices(path: str | Path, *, fmt: str | None = None) -> list[DeviceInfo]:
    """The GPUs a profile describes, from its first batch where the reader streams (a Kineto trace's header),
    or, where that names none, from the batches after it (a trace re-saved with its header keys after the
    events names them in its last); ``[]`` for formats read whole, rather than a second full read."""
    mod = _module(fmt or detect(path))
    if not hasattr(mod, "stream"):
        return []
    batches: Generator[Profile, None, None] = mod.stream(Path(path))
    with contextlib.closing(batches):  # the file closes now, not when the generator is collected
        for batch in batches:
            if batch.devices:
                return batch.devices
    return []


def stream_columns(
    path: str | Path, *, fmt: str | None = None, rank: int | None = None
) -> Iterator[LaunchColumns] | None:
    """Columns of the kernels and memory ops, for formats whose reader decodes straight to columns.

    ``None`` for other formats: read their records (``stream``) and convert, as ``GapAccumulator.add`` does.
    """
    mod = _module(fmt or detect(path))
    if not hasattr(mod, "stream_columns"):
        return None
    return mod.stream_columns(Path(path), rank=rank)  # type: ignore[no-any-return]


def load(paths: list[str | Path] | str | Path, *, fmt: str | None = None) -> Profile:
    """Read and merge one or more files (ranks, repeats) into one ``Profile``; a folder gives the files of
    the run it holds (``readers.folder``)."""
    from kernelscope.readers import folder

    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    return Profile.combine([read(f, fmt=fmt) for p in items for f in folder.files(p)])
