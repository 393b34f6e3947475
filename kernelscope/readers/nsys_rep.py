"""Nsight Systems report (``.nsys-rep``): what ``nsys profile`` writes by default. (An older ``.qdrep`` reads the
same way only if it opens with the same signature: none was seen here.)

The report is Nsight's own container; only Nsight Systems reads it. It is exported once per process with
``nsys export --type sqlite`` into a private temporary folder and read as an SQLite export
(``readers/nsys_sqlite.py``), with every record naming the report as its source. Without ``nsys`` here, one
error line says how to export it elsewhere.

Vendor quirks, all here:
* The file opens with the text ``NVIDIA Tegra Profiler Report`` (the signature sniffed).
* ``nsys`` lives on ``PATH`` with a CUDA toolkit or Nsight Systems; otherwise in
  ``/opt/nvidia/nsight-systems/<version>/bin`` or, shipped inside Nsight Compute,
  ``/opt/nvidia/nsight-compute/<version>/host/target-linux-x64``. ``$NSYS`` names one explicitly.
* A report from a newer Nsight Systems makes an older ``nsys export`` exit 1 after writing part of a database
  (2025.6.1 reports, 2025.3.1's nsys): only an exit 0 that left the file is read.
"""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

from kernelscope.errors import FormatError, MissingToolError
from kernelscope.model import Profile
from kernelscope.process import run_tool
from kernelscope.readers import nsys_sqlite
from kernelscope.readers._io import converted

FORMAT = "nsys-rep"
MAGIC = b"NVIDIA Tegra Profiler Report"
_EXPORT_TIMEOUT_S = 1800.0  # a multi-GB report exports in minutes
_INSTALLS = (
    "/opt/nvidia/nsight-systems/*/bin/nsys",
    "/opt/nvidia/nsight-systems/*/target-linux-x64/nsys",
    "/usr/local/cuda/bin/nsys",
    "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys",
)
_EXPECTED = "an Nsight Systems report (.nsys-rep, or .qdrep before nsys 2021.4) that nsys export can convert"


def read(path: Path, *, rank: int | None = None) -> Profile:
    """The report's kernels, copies, NVTX ranges and GPUs, through its SQLite export."""
    return nsys_sqlite.read_as(converted(path, _export), str(path), rank=rank)  # exported once per process


def find_nsys() -> str | None:
    """Path of an ``nsys`` to run, or None."""
    named = os.environ.get("NSYS")
    if named and os.access(named, os.X_OK):
        return named
    found = shutil.which("nsys")
    if found:
        return found
    candidates = sorted((c for pattern in _INSTALLS for c in glob.glob(pattern)), reverse=True)  # newest first
    return next((c for c in candidates if os.access(c, os.X_OK)), None)


def _export(path: str, out: Path) -> None:
    nsys = find_nsys()
    if nsys is None:
        raise MissingToolError(
            "nsys (Nsight Systems)",
            f"run `nsys export --type sqlite --output {Path(path).stem}.sqlite {path}` where Nsight Systems is "
            "installed and pass the .sqlite (or put nsys on PATH, or name it in $NSYS)",
        )
    done = run_tool(
        [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(out), path],
        timeout_s=_EXPORT_TIMEOUT_S,
    )
    if done.returncode != 0 or not out.exists():
        said = (done.stderr or done.stdout).strip().splitlines()
        raise FormatError(path, _EXPECTED, f"a report nsys export refused ({said[-1] if said else 'no output'})")
