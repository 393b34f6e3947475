"""``kscope doctor``: probe this machine for what kernelscope can use, and say what each missing piece disables.

The tools are data (``TOOLS``): how to find one, how it reports its version, what needs it and how to install
it. Every probe runs with a timeout and never raises: a tool that hangs or fails is ``failed`` with the reason.
"""

from __future__ import annotations

import csv
import importlib.metadata as md
import importlib.util
import io
import platform
import re
import shutil
import struct
import sys
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from kernelscope.codeobj import tools as codeobj_tools
from kernelscope.errors import MissingToolError, ToolFailedError
from kernelscope.model.doctor import Check, DoctorResult, Gpu
from kernelscope.process import run_tool
from kernelscope.profiling.tracers import att_decoder
from kernelscope.readers.nsys_rep import find_nsys

PROBE_TIMEOUT_S = 15.0
# an ELF header alone (64-bit, little-endian, EM_AMDGPU, HSA OS ABI): enough for llvm-objdump to list the AMD
# processors it knows (``--mcpu=help``), without shipping a code object for the probe
_AMDGPU_ELF = b"\x7fELF\x02\x01\x01\x40\x03" + bytes(7)
_AMDGPU_ELF += struct.pack("<HHIQQQIHHHHHH", 1, 224, 1, 0, 0, 0, 0, 64, 0, 0, 64, 0, 0)


def _run(argv: list[str]) -> tuple[bool, str]:
    """(ran and exited 0, stdout + stderr); a hang, a crash or a missing binary is (False, why)."""
    try:
        p = run_tool(argv, timeout_s=PROBE_TIMEOUT_S)
    except ToolFailedError as exc:
        return False, str(exc)
    return p.returncode == 0, (p.stdout + p.stderr).strip()


def _which(name: str) -> Callable[[], str | None]:
    return lambda: shutil.which(name)


def _cuda(name: str) -> Callable[[], str | None]:
    def find() -> str | None:
        try:
            return codeobj_tools.cuda_tool(name)
        except MissingToolError:
            return None

    return find


def _llvm(name: str) -> Callable[[], str | None]:
    return lambda: next(iter(codeobj_tools.llvm_tools(name)), None)  # LLVM 19 first


def _amd_targets(_path: str) -> str:
    """Which AMD architectures kernelscope has occupancy rules for can be disassembled here, over every
    llvm-objdump found (each lists the processors it knows with ``--mcpu=help``)."""
    known: set[str] = set()
    with tempfile.NamedTemporaryFile(suffix=".o") as f:
        f.write(_AMDGPU_ELF)
        f.flush()
        for objdump in codeobj_tools.llvm_objdumps():
            _, text = _run([objdump, "--triple=amdgcn-amd-amdhsa", "--mcpu=help", "-d", f.name])
            known.update(re.findall(r"^\s+(gfx\w+)\s+-", text, re.M))
    ours = sorted(p.name.removesuffix(".yaml") for p in resources.files("kernelscope.data").joinpath("arch").iterdir()
                  if p.name.startswith("gfx"))  # fmt: skip
    can, cannot = [a for a in ours if a in known], [a for a in ours if a not in known]
    return f"disassembles {' '.join(can) or 'none'}" + (f"; not {' '.join(cannot)} (a newer LLVM)" if cannot else "")


def _first_version_line(text: str) -> str:
    """The line of a ``--version`` banner that holds a version number."""
    lines = [ln.strip() for ln in text.splitlines() if re.search(r"\d+\.\d+", ln)]
    found = next((ln for ln in lines if "version" in ln.lower() or ln.lower().startswith("build")), None)
    return found or (lines[0] if lines else text.splitlines()[0] if text else "")


@dataclass(frozen=True)
class Tool:
    name: str
    find: Callable[[], str | None]
    version_args: tuple[str, ...]
    enables: tuple[str, ...]
    fix: str
    detail: Callable[[str], str] | None = None


TOOLS: tuple[Tool, ...] = (
    Tool("llvm-objdump", _llvm("llvm-objdump"), ("--version",),
         ("kscope isa/fit on AMD code objects (disassembly, instruction mix)", "kscope att register pressure"),
         "apt install --no-install-recommends llvm-19 (gfx950 needs LLVM 20 or newer)", _amd_targets),
    Tool("c++filt", _which("c++filt"), ("--version",),
         ("demangled kernel names (classify, gap, find)",), "apt install binutils"),
    Tool("llvm-cxxfilt", _llvm("llvm-cxxfilt"), ("--version",),
         ("kernel names binutils cannot demangle (C++20 typed template parameters)",),
         "apt install --no-install-recommends llvm-19"),
    Tool("cuobjdump", _cuda("cuobjdump"), ("--version",),
         ("kscope isa/fit on NVIDIA cubins, fatbins and .so files",),
         "pip install nvidia-cuda-cuobjdump (or a CUDA toolkit on PATH)"),
    Tool("nvdisasm", _cuda("nvdisasm"), ("--version",),
         ("SASS of NVIDIA code objects (kscope isa instruction mix)",),
         "pip install nvidia-cuda-nvdisasm (or a CUDA toolkit on PATH)"),
    Tool("ncu", _which("ncu"), ("--version",),
         ("kscope profile --ncu (Nsight Compute capture)",),
         "install Nsight Compute (CUDA toolkit) and put ncu on PATH"),
    Tool("nsys", find_nsys, ("--version",),
         ("kscope profile of non-Python programs on NVIDIA GPUs", "reading .nsys-rep reports (nsys export)"),
         "install Nsight Systems and put nsys on PATH (or name it in $NSYS)"),
    Tool("rocprofv3", _which("rocprofv3"), ("--version",),
         ("kscope profile on AMD GPUs (rocprofv3 --kernel-trace)",), "install ROCm 6.2 or newer (rocprofiler-sdk)"),
    Tool("rocprof-trace-decoder", att_decoder, (),
         ("kscope profile --att (decoding AMD thread traces)",),
         "install the ROCprof Trace Decoder library and set ROCPROF_ATT_LIBRARY_PATH to its folder"),
    Tool("git", _which("git"), ("--version",), ("kscope task/eval (baseline worktrees)",), "apt install git"),
)  # fmt: skip

# optional Python packages: import name, distribution name, what needs them, how to install
PACKAGES: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("ncu_report", "ncu-report", ("kscope ncu/gap/report/suggest on .ncu-rep files",),
     "pip install 'kernelscope[ncu]'"),
    ("pyarrow", "pyarrow", ("--parquet outputs",), "pip install 'kernelscope[parquet]'"),
    ("google.protobuf", "protobuf", ("reading JAX/XLA .xplane.pb profiles (4.25 or newer)",),
     "pip install 'kernelscope[xplane]'"),
    ("torch", "torch", ("kscope bench, ceilings and profile of Python workloads", "kscope replay scripts"),
     "pip install torch (a CUDA or ROCm build for GPU work)"),
    ("triton", "triton", ("kscope ceilings (bandwidth kernels)",), "pip install triton"),
)  # fmt: skip


def _tool_check(tool: Tool) -> Check:
    path = tool.find()
    if path is None:
        return Check(name=tool.name, kind="tool", status="missing", enables=list(tool.enables), fix=tool.fix)
    version = None
    if tool.version_args:
        ok, text = _run([path, *tool.version_args])
        if not ok:
            return Check(name=tool.name, kind="tool", status="failed", path=path, detail=text.splitlines()[-1:][0]
                         if text else "no output", enables=list(tool.enables), fix=tool.fix)  # fmt: skip
        version = _first_version_line(text) or None
    detail = tool.detail(path) if tool.detail else None
    return Check(name=tool.name, kind="tool", status="ok", version=version, path=path, detail=detail,
                 enables=list(tool.enables))  # fmt: skip


def _package_check(module: str, dist: str, enables: tuple[str, ...], fix: str) -> Check:
    spec = importlib.util.find_spec(module)  # found without importing it: torch alone takes seconds
    if spec is None:
        return Check(name=dist, kind="package", status="missing", enables=list(enables), fix=fix)
    try:
        version: str | None = md.version(dist)
    except md.PackageNotFoundError:
        version = None
    where = spec.origin or next(iter(spec.submodule_search_locations or []), None)
    return Check(name=dist, kind="package", status="ok", version=version, path=where, enables=list(enables))


def _dependencies() -> list[Check]:
    """kernelscope's own required packages, with the versions installed (what a bug report needs)."""
    try:
        reqs = md.requires("kernelscope") or []
    except md.PackageNotFoundError:  # run from a source tree (PYTHONPATH): its pyproject.toml says the same
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        reqs = tomllib.loads(pyproject.read_text())["project"]["dependencies"] if pyproject.exists() else []
    out = []
    for req in reqs:
        if "extra ==" in req:
            continue
        dist = re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0]
        try:
            out.append(Check(name=dist, kind="package", status="ok", version=md.version(dist)))
        except md.PackageNotFoundError:
            out.append(Check(name=dist, kind="package", status="missing",
                             enables=[f"kernelscope (it requires {dist})"],
                             fix="pip install kernelscope (its dependencies are missing)"))  # fmt: skip
    return out


def _csv_rows(text: str) -> list[dict[str, str]]:
    rows = csv.DictReader(io.StringIO(text))
    return [{k.strip().lower(): (v or "").strip() for k, v in row.items() if k} for row in rows]


def _nvidia(text: str) -> list[Gpu]:
    return [
        Gpu(name=r.get("name", "?"), vendor="nvidia", source="nvidia-smi", driver=r.get("driver_version") or None,
            uuid=r.get("uuid") or None,
            arch="sm_" + r["compute_cap"].replace(".", "") if r.get("compute_cap") else None)
        for r in _csv_rows(text)
    ]  # fmt: skip


def _amd(text: str) -> list[Gpu]:
    body = text[text.find("device,") :] if "device," in text else text  # rocm-smi prints banners around the CSV
    return [
        Gpu(name=r.get("card series") or r.get("card model") or "?", vendor="amd", source="rocm-smi",
            arch=r.get("gfx version") or None)
        for r in _csv_rows(body.split("\n\n")[0]) if r.get("device", "").startswith("card")
    ]  # fmt: skip


# vendor tool, its arguments, what needs a GPU of that vendor, how to get one, and the parser of its CSV
GPU_TOOLS: tuple[tuple[str, tuple[str, ...], str, str, Callable[[str], list[Gpu]]], ...] = (
    ("nvidia-smi", ("--query-gpu=name,driver_version,uuid,compute_cap", "--format=csv"),
     "GPU work: kscope bench, ceilings, profile, eval on the GPU",
     "an NVIDIA GPU with its driver (nvidia-smi comes with the driver)", _nvidia),
    ("rocm-smi", ("--showproductname", "--csv"), "GPU work on AMD: kscope profile, bench, ceilings",
     "an AMD GPU with ROCm (rocm-smi comes with ROCm)", _amd),
)  # fmt: skip


def _gpus(
    tool: str, args: tuple[str, ...], enables: str, fix: str, parse: Callable[[str], list[Gpu]]
) -> tuple[list[Gpu], Check]:
    """The GPUs a vendor tool lists, and the check of the tool itself."""
    path = shutil.which(tool)
    if path is None:
        return [], Check(name=tool, kind="gpu", status="missing", enables=[enables], fix=fix)
    ok, text = _run([path, *args])
    if not ok:
        return [], Check(name=tool, kind="gpu", status="failed", path=path, detail=text[-200:] or "failed",
                         enables=[enables], fix=f"check the driver ({tool} fails)")  # fmt: skip
    gpus = parse(text)
    return gpus, Check(name=tool, kind="gpu", status="ok", path=path, detail=f"{len(gpus)} GPU(s)")


def probe() -> DoctorResult:
    """Probe Python, packages, GPUs and tools; every missing piece says what it disables and how to install it."""
    found = [_gpus(*t) for t in GPU_TOOLS]
    checks = [check for _, check in found] + [_tool_check(t) for t in TOOLS]
    checks += [_package_check(*p) for p in PACKAGES]
    checks += _dependencies()
    try:
        version = md.version("kernelscope")
    except md.PackageNotFoundError:
        version = "not installed (run from a source tree)"
    return DoctorResult(python=f"{platform.python_version()} ({sys.executable})", platform=platform.platform(),
                        kernelscope=version, gpus=[g for gpus, _ in found for g in gpus], checks=checks)  # fmt: skip
