"""NVIDIA code objects (cubin, fatbin, host ELF/.so with embedded fatbins) through ``cuobjdump``.

Resources come from ``cuobjdump --dump-resource-usage`` (REG, STACK, SHARED, LOCAL, CONSTANT[n]);
the instruction mix from ``cuobjdump -sass``, one embedded ELF (cubin) at a time. Both print one block per
ELF, each headed by its architecture, so a fatbin with several architectures yields one kernel record per
(arch, kernel).
"""

from __future__ import annotations

import io
import re
import tempfile
from collections import Counter
from functools import cache
from pathlib import Path

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from kernelscope.codeobj.mix import matrix_dtype, nvidia_mix
from kernelscope.codeobj.tools import ELF_ERRORS, Progress, cuda_tool, each_in_parallel
from kernelscope.errors import FormatError, ToolFailedError
from kernelscope.model.codeobj import CodeObject, KernelCode
from kernelscope.process import run_tool

EM_CUDA = 190
FATBIN_MAGIC = b"\x50\xed\x55\xba"  # 0xBA55ED50 little-endian
_ARCH = re.compile(r"(?:arch = |code for |\.target\s+)(sm_\d+[a-z]?)")
_FUNCTION = re.compile(r"^\s*Function (\S+?):?\s*$")
_SASS_FUNCTION = re.compile(r"^\s*Function : (\S+)")
_RESOURCE = re.compile(r"([A-Z]+(?:\[\d+\])?):(\d+)")
_SASS = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.x]*)")


def _run(args: list[str], path: Path, cwd: Path | None = None) -> str:
    proc = run_tool(args, cwd=cwd)
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise FormatError(path, "a CUDA binary cuobjdump can read", first)
    return proc.stdout


def _blocks(text: str, header: re.Pattern[str]) -> dict[tuple[str, str], list[str]]:
    """The lines of a cuobjdump listing per (architecture, function): both listings head each embedded
    ELF with its architecture and each function with a header line."""
    out: dict[tuple[str, str], list[str]] = {}
    arch, current = "unknown", None
    for line in text.splitlines():
        a = _ARCH.search(line)
        if a:
            arch = a.group(1)
        f = header.match(line)
        if f:
            current = out.setdefault((arch, f.group(1)), [])
        elif current is not None:
            current.append(line)
    return out


def _resources(text: str) -> dict[tuple[str, str], dict[str, int]]:
    return {
        key: {k: int(v) for line in lines if line.strip().startswith("REG:") for k, v in _RESOURCE.findall(line)}
        for key, lines in _blocks(text, _FUNCTION).items()
    }


def _sass(text: str) -> dict[tuple[str, str], list[str]]:
    return {
        key: [m.group(1) for line in lines if (m := _SASS.match(line))]
        for key, lines in _blocks(text, _SASS_FUNCTION).items()
    }


def reservation_in_static(path: Path, fmt: str) -> bool:
    """Does the cubin count the driver's per-block shared-memory reservation inside its kernels'
    shared sections? ptxas marks it with a ``.nv.reservedSmem.offset0`` symbol (sm_90 Triton kernels):
    cuobjdump's SHARED then includes the reserved KiB that the driver reports apart (its static shared
    is SHARED minus the reservation) — verified against the CUDA occupancy API on an H100."""
    if fmt != "cubin":
        return False
    try:
        elf = ELFFile(io.BytesIO(path.read_bytes()))
        symtab = elf.get_section_by_name(".symtab")
        return isinstance(symtab, SymbolTableSection) and any(
            s.name.startswith(".nv.reservedSmem") for s in symtab.iter_symbols()
        )
    except ELF_ERRORS:
        return False


@cache
def _version(tool: str) -> str:
    """``cuobjdump 13.5``: asked once per process, not once per binary."""
    out = run_tool([tool, "--version"]).stdout
    ver = re.search(r"release ([\d.]+)|cuda_([\d.]+)", out)
    return f"cuobjdump {next((g for g in ver.groups() if g), '?') if ver else '?'}"


def elf_arch(data: bytes) -> str | None:
    """``sm_NN`` from a cubin's ELF header, as LLVM's BinaryFormat/ELF.h decodes it: ABI version 7
    (ELFABIVERSION_CUDA_V1) keeps the SM in ``e_flags & 0xff``, version 8 (CUDA_V2) in ``e_flags & 0xff00``.
    The ``a``/``f`` feature suffix is not recoverable this way; the SASS listing names it when it can."""
    if data[:4] != b"\x7fELF" or len(data) < 0x34:
        return None
    flags = int.from_bytes(data[0x30:0x34], "little")
    sm = {7: flags & 0xFF, 8: (flags >> 8) & 0xFF}.get(data[8])
    return f"sm_{sm}" if sm else None


def _sass_by_cubin(
    tool: str, path: Path, only: list[str], notes: list[str], progress: Progress | None
) -> dict[tuple[str, str], list[str]]:
    """SASS of a fat binary one embedded cubin at a time, the cubins in parallel: one ``cuobjdump -sass`` of
    a serving library (sglang-kernel's common_ops: 210 cubins, 7 M lines) runs minutes on one core, past the
    tool timeout. A cubin this disassembler refuses (CUDA 13 drops sm_50..sm_72) or times out on costs only
    its own mix, one note per architecture."""
    with tempfile.TemporaryDirectory(prefix="kscope-cubins-") as tmp:
        _run([tool, *only, "-xelf", "all", str(path.resolve())], path, cwd=Path(tmp))
        cubins = sorted(Path(tmp).glob("*.cubin"))
        sass = each_in_parallel(lambda c: _cubin_sass(tool, c, path), cubins, progress, f"cubins of {path.name}")
    out: dict[tuple[str, str], list[str]] = {}
    failed: dict[str, str] = {}
    for cubin, listing in zip(cubins, sass, strict=True):
        if isinstance(listing, str):
            failed.setdefault(cubin.name.split(".")[-2], listing)  # <library>.<n>.<sm_90a>.cubin
        else:
            out.update(listing)
    notes.extend(_no_mix(arch, why) for arch, why in sorted(failed.items()))
    return out


def _cubin_sass(tool: str, cubin: Path, path: Path) -> dict[tuple[str, str], list[str]] | str:
    """One cubin's SASS per (arch, function), or why the disassembler gave none."""
    try:
        return _sass(_run([tool, "-sass", str(cubin)], path))
    except FormatError as exc:
        return exc.found
    except ToolFailedError as exc:
        return str(exc)


def _base(sm: str) -> str:
    """``sm_90a``/``sm_100f`` -> ``sm_90``/``sm_100``: the SM number without its feature suffix."""
    return sm.rstrip("abcdefghijklmnopqrstuvwxyz")


def _no_mix(arch: str, why: str) -> str:
    return f"no SASS mix for {arch}: {why}"


def read(path: Path, fmt: str, arch: str | None = None, progress: Progress | None = None) -> CodeObject:
    """Every kernel of the binary (only ``arch``'s, e.g. ``sm_90``, when given); ``progress`` ticks per
    embedded cubin disassembled."""
    tool = cuda_tool("cuobjdump")
    only = ["-arch", arch] if arch else []
    res = _resources(_run([tool, "--dump-resource-usage", *only, str(path)], path))
    notes: list[str] = []
    # a lone cubin's listings name no architecture: the SASS listing does, else the ELF header
    header = (elf_arch(path.read_bytes()[:64]) if fmt == "cubin" else None) or "unknown"
    try:
        if fmt == "cubin":
            sass = _sass(_run([tool, "-sass", *only, str(path)], path))
        else:
            sass = _sass_by_cubin(tool, path, only, notes, progress)
    except FormatError as exc:
        if not res:
            raise
        notes.append(_no_mix(header, exc.found))  # a cubin the disassembler refused, or a fatbin cuobjdump cannot split
        sass = {}
    if not res and not sass and not arch:  # with arch: simply none for that architecture
        raise FormatError(path, "a CUDA binary with device code", "no kernels in cuobjdump's output")
    sass_arch = {name: sm for sm, name in sass}
    # a cubin's own listing can name sm_100 where its fatbin entry says sm_100f (or sm_90a, sm_90): the one
    # listing of the kernel for that SM number, when there is exactly one
    bases = Counter((_base(sm), name) for sm, name in sass)
    by_base = {(_base(sm), name): ops for (sm, name), ops in sass.items() if bases[(_base(sm), name)] == 1}
    res = {(sass_arch.get(n, header) if a == "unknown" else a, n): r for (a, n), r in res.items()}
    reserved = reservation_in_static(path, fmt)
    kernels = []
    for (sm, name), r in sorted(res.items()):
        ops = sass.get((sm, name)) or by_base.get((_base(sm), name), [])
        const = {k.lower().replace("[", "").replace("]", ""): v for k, v in r.items() if k.startswith("CONSTANT")}
        kernels.append(
            KernelCode(
                name=name,
                arch=sm,
                vendor="nvidia",
                registers=r.get("REG"),
                shared_bytes=r.get("SHARED"),
                local_bytes=r.get("LOCAL"),
                stack_bytes=r.get("STACK"),
                constant_bytes=const,
                metadata={"reservation_in_static": True} if reserved else {},
                instructions=len(ops) or None,
                mix=dict(nvidia_mix(ops)),
                matrix_dtype=(found := matrix_dtype(ops)) and found[0],
                matrix_dtype_evidence=found and found[1],
            )
        )
    arches = sorted({k.arch for k in kernels})
    return CodeObject(
        path=str(path),
        format=fmt,
        vendor="nvidia",
        arch=",".join(arches),
        kernels=kernels,
        disassembler=_version(tool),
        notes=notes,
    )
