"""Where the external binary tools are: LLVM's llvm-objdump (AMDGPU) and CUDA's cuobjdump/nvdisasm.

CUDA's tools come from a CUDA toolkit, the ``nvidia-cuda-cuobjdump``/``nvidia-cuda-nvdisasm`` wheels,
or the copies inside the ``triton`` wheel; none needs a GPU.
"""

from __future__ import annotations

import glob
import os
import shutil
import struct
import sysconfig
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import TypeVar

from elftools.common.exceptions import ELFError

from kernelscope.errors import MissingToolError

# what pyelftools raises on a damaged ELF: its own errors, and offsets or sizes that break BytesIO or struct
# (negative seeks, "too large for C ssize_t"); caught where an ELF's bytes become records, nowhere else
ELF_ERRORS: tuple[type[Exception], ...] = (ELFError, OverflowError, OSError, ValueError, struct.error)


Progress = Callable[[str, int, int], None]  # what is being read, done, total
# disassembler processes at once: one cuobjdump held 185 MB on a 6 MB cubin (sglang-kernel's largest)
MAX_DISASSEMBLERS = 16
_T = TypeVar("_T")
_R = TypeVar("_R")


def each_in_parallel(
    fn: Callable[[_T], _R], items: Sequence[_T], progress: Progress | None = None, what: str = ""
) -> list[_R]:
    """``fn`` over ``items`` in order, on as many threads as there are cores (at most MAX_DISASSEMBLERS):
    each call runs an external disassembler, so the threads wait on processes, not on each other. ``progress``
    ticks as each finishes."""
    out: list[_R] = []
    with ThreadPoolExecutor(max_workers=max(1, min(len(items), os.cpu_count() or 1, MAX_DISASSEMBLERS))) as pool:
        for result in pool.map(fn, items):
            out.append(result)
            if progress:
                progress(what, len(out), len(items))
    return out


def _site_dirs() -> list[str]:
    return list(dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]))


@cache
def cuda_tool(name: str) -> str:
    """Path of ``cuobjdump`` or ``nvdisasm``."""
    found = shutil.which(name)
    if found:
        return found
    roots = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    candidates = [str(Path(r, "bin", name)) for r in roots if r]
    for site in _site_dirs():
        candidates += glob.glob(f"{site}/nvidia/*/bin/{name}") + glob.glob(f"{site}/nvidia/cuda_*/bin/{name}")
        candidates += glob.glob(f"{site}/triton/backends/nvidia/bin/{name}")
    for c in candidates:
        if os.access(c, os.X_OK):
            return c
    raise MissingToolError(name, f"pip install nvidia-cuda-{name} (or a CUDA toolkit on PATH)")


# LLVM 19 (Debian's llvm-19) disassembles up to gfx942 and RDNA4; gfx950 needs a newer LLVM, which is
# used when installed (llvm-20 and later).
_LLVM_VERSIONS = (19, 20, 21, 22, 23)


@cache
def llvm_tools(name: str) -> tuple[str, ...]:
    """Every copy of the LLVM tool ``name`` present (``llvm-objdump``, ``llvm-cxxfilt``), LLVM 19 first."""
    found = []
    for v in _LLVM_VERSIONS:
        for c in (f"{name}-{v}", f"/usr/lib/llvm-{v}/bin/{name}"):
            path = shutil.which(c) or (c if os.access(c, os.X_OK) else None)
            if path:
                found.append(path)
                break
    return tuple(found)


def llvm_objdumps() -> tuple[str, ...]:
    """Every llvm-objdump present, LLVM 19 first (the reference), then newer ones for newer targets."""
    found = llvm_tools("llvm-objdump")
    if not found:
        raise MissingToolError("llvm-objdump (LLVM 19)", "apt install --no-install-recommends llvm-19")
    return found
