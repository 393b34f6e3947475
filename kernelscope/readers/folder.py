"""A folder given where a profiler output is expected: the files of the one run it holds.

What the tools write: ``kscope profile`` → ``trace_rank<R>_pid<P>.json.gz`` per process (beside its launch and
shape ledgers); rocprofv3 → ``<host>/<pid>_kernel_trace.csv`` with ``_kernel_stats.csv``, ``_agent_info.csv``,
``_results.json`` or ``_results.db`` per process (``<name>_…`` with ``--output-file <name>``); nsys →
``<name>.sqlite`` and ``nsys stats`` → ``<name>_cuda_gpu_kern_sum.csv`` (one run: the export is read); rocprof
v1/v2 → ``results.csv``, ``results.json``, ``results.stats.csv`` (one run, in that order of preference); ncu →
``*.ncu-rep``; a Kineto trace saved by the user → ``*.json[.gz]`` with its rank in ``distributedInfo``.
Several processes of one run are its ranks and stay ranks. Files of different runs (two ``--output-file``
names, two traces of the same rank, a Kineto trace beside a rocprofv3 run) are ambiguous: one error line
names the candidates, and the user passes one.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.errors import InputError
from kernelscope.readers import READERS
from kernelscope.readers._sniff import read_head, sniff
from kernelscope.readers.rocprof_agents import RUN_FILE
from kernelscope.readers.rocprof_stats import NOT_KERNELS

MAX_DEPTH = 3  # <out>/<host>/<pid>_kernel_trace.csv is two levels down
MAX_FILES = 5000  # looked at; a folder with more is not a profiler's output folder
_SKIP_DIRS = re.compile(r"^(ui_output_agent_.*|__pycache__|\..*)$")  # ATT decodes: thousands of wave files
# not profiler outputs (ledgers, logs, code objects); rocprof's statistics of API calls and copies (which read
# like its kernel statistics) are skipped too
_SKIP_FILES = re.compile(r".*\.(jsonl|att|out|log|txt|py|md|so|hsaco|cubin|co)$")
_KSCOPE_TRACE = re.compile(r"^trace_rank(?P<rank>\d+)_pid(?P<pid>\d+)\.json(\.gz)?$")
_KINETO_RANK = re.compile(rb'"distributedInfo"\s*:\s*\{[^}]*?"rank"\s*:\s*(\d+)')
# within one process of a run, the file that holds the most: every launch over the summary
_PREFERENCE = [
    *("rocprof-kernel-trace", "rocprof-json", "rocpd", "rocprof-v1-json", "rocprof-kernel-stats"),
    *("nsys-sqlite", "nsys-kern-sum"),  # an export, then the nsys stats report written from it
]
_ROCPROF = {"rocprof-kernel-trace", "rocprof-json", "rocpd", "rocprof-kernel-stats"}  # rocprofv3's <pid>_... files
_NSYS = {"nsys-sqlite", "nsys-kern-sum"}
# rocprof v1/v2 writes results.csv (kernels), results.json (kernels and copies), results.stats.csv into one folder
_ROCPROF_V1 = re.compile(r"^results\.(csv|json|stats\.csv)(\.gz)?$")
# nsys stats --output X writes X_<report>.csv; X is the export's name by default
_NSYS_REPORT = re.compile(r"^(?P<run>.+?)_cuda_gpu_kern_sum(_base|_mangled)?\.(csv|tsv)$")


@dataclass
class Run:
    """The outputs of one profiled run: one file per process (rank) it recorded."""

    label: str
    files: dict[str, tuple[str, Path]] = field(default_factory=dict)  # process -> (format, file)

    def add(self, process: str, fmt: str, path: Path) -> bool:
        """Keep the most complete file per process; False when the process already has a file of this
        format (two traces of one rank: two runs)."""
        old = self.files.get(process)
        if old is not None and old[0] == fmt:
            return False
        if old is None or _rank(fmt) < _rank(old[0]):
            self.files[process] = (fmt, path)
        return True

    def paths(self) -> list[Path]:
        return [p for _, p in sorted(self.files.values(), key=lambda fp: str(fp[1]))]


def _rank(fmt: str) -> int:
    return _PREFERENCE.index(fmt) if fmt in _PREFERENCE else 0


def _skipped(name: str) -> bool:
    return name.startswith(".") or bool(_SKIP_FILES.match(name) or NOT_KERNELS.search(name))


def _files(folder: Path) -> list[Path]:
    out: list[Path] = []
    base = len(folder.parts)
    for root, dirs, names in os.walk(folder):
        depth = len(Path(root).parts) - base
        dirs[:] = sorted(d for d in dirs if not _SKIP_DIRS.match(d) and depth < MAX_DEPTH)
        out += [Path(root, n) for n in sorted(names) if not _skipped(n)]
        if len(out) > MAX_FILES:
            raise InputError(f"{folder}: more than {MAX_FILES} files; pass the profiler's output file(s) or folder")
    return out


def _kineto_process(path: Path) -> str:
    """A Kineto trace's rank: from kscope's file name, else the trace's ``distributedInfo``, else ''."""
    m = _KSCOPE_TRACE.match(path.name)
    if m:
        return f"rank {m['rank']}"
    found = _KINETO_RANK.search(read_head(path))
    return f"rank {int(found.group(1))}" if found else ""


def runs(folder: Path) -> list[Run]:
    """Every run the folder holds, each with its processes' files."""
    found: dict[str, Run] = {}
    clashes: list[Run] = []
    for path in _files(folder):
        try:
            fmt = sniff(path)
        except InputError:  # unreadable: not one of ours to judge
            continue
        if fmt is None:
            continue
        rel = path.relative_to(folder)
        m = RUN_FILE.match(path.name) if fmt in _ROCPROF else None
        if m and m["run"].isdigit():  # <pid>_...: the processes of one rocprofv3 run, on one or more hosts
            label, process = "rocprofv3 run", f"{rel.parent}/{m['run']}"
        elif m:  # --output-file NAME: one run per name
            label, process = f"rocprofv3 run {str(rel.parent / m['run'])!r}", "0"
        elif _ROCPROF_V1.match(path.name) and fmt in _PREFERENCE:
            label, process = f"rocprof run in {str(rel.parent)!r}", "0"
        elif fmt in _NSYS:  # an export and the summary nsys stats wrote of it are one run
            report = _NSYS_REPORT.match(path.name)
            stem = report["run"] if report else path.name.split(".")[0]
            label, process = f"Nsight Systems run {str(rel.parent / stem)!r}", "0"
        elif fmt == "kineto":
            label, process = f"PyTorch profiler traces in {str(rel.parent)!r}", _kineto_process(path)
            if not process:  # a trace without a rank is a run of its own
                label, process = str(rel), "0"
        else:
            label, process = str(rel), "0"
        run = found.setdefault(label, Run(label))
        if not run.add(process, fmt, path):
            clashes.append(Run(str(rel), {process: (fmt, path)}))
    return list(found.values()) + clashes


def files(path: str | Path) -> list[str | Path]:
    """``path`` itself, spelled as given, or the files of the run it holds when it is a folder."""
    return list(resolve(Path(path))) if Path(path).is_dir() else [path]


def resolve(folder: Path) -> list[Path]:
    """The files of the one run in ``folder``; an error line when it holds none or several."""
    found = runs(folder)
    if not found:
        raise InputError(f"{folder}: holds no profiler output kscope reads ({', '.join(READERS)})")
    if len(found) > 1:
        listed = "; ".join(f"{r.label} ({', '.join(str(p.relative_to(folder)) for p in r.paths())})" for r in found)
        raise InputError(f"{folder}: holds {len(found)} runs, pass one of them: {listed}")
    return found[0].paths()
