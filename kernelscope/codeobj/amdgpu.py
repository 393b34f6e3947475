"""AMDGPU code objects: the amdhsa metadata note (msgpack) and LLVM disassembly.

Quirks kept here: the ELF is identified by ``e_machine`` 224 (EM_AMDGPU) — pyelftools prints its
OS ABI byte as an ARM one; the target id comes in two spellings (``amdgcn-amd-amdhsa--gfx942:…`` from
clang, ``amdgpu9.42-amd-amdhsa-unknown-gfx942`` from Triton 3.9); on gfx90a and later ``.vgpr_count``
is the unified total of architectural VGPRs and AGPRs.
"""

from __future__ import annotations

import io
import re
import struct
import zlib
from functools import cache
from pathlib import Path

import msgpack
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import NoteSection, SymbolTableSection

from kernelscope.codeobj.tools import ELF_ERRORS, llvm_objdumps
from kernelscope.errors import FormatError, ToolFailedError
from kernelscope.model.codeobj import CodeObject, KernelCode
from kernelscope.process import run_tool

EM_AMDGPU = 224
NT_AMDGPU_METADATA = 32
# code object v2's kernel symbol type, STT_AMDGPU_HSA_KERNEL (10): pyelftools names the value STT_LOOS
_STT_AMDGPU_HSA_KERNEL = "STT_LOOS"
BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED_MAGIC = b"CCOB"  # clang --offload-compress
_GFX = re.compile(r"(gfx[0-9a-f]+)")
# The GPU an object was built for, by the EF_AMDGPU_MACH field (e_flags & 0xff) of its ELF header: for code
# objects whose metadata names no target (aiter's hand-written assembly kernels). Values: LLVM's
# llvm/include/llvm/BinaryFormat/ELF.h (AMDGPUUsage, "AMDGPU ELF Header e_flags"); 0x20-0x59 as llvm-readelf 19
# decodes them, gfx950 (0x4f), gfx1250 (0x49) and gfx1251 (0x5a) as later LLVM's ELF.h defines them.
_MACH = {
    0x20: "gfx600",
    0x21: "gfx601",
    0x22: "gfx700",
    0x23: "gfx701",
    0x24: "gfx702",
    0x25: "gfx703",
    0x26: "gfx704",
    0x28: "gfx801",
    0x29: "gfx802",
    0x2A: "gfx803",
    0x2B: "gfx810",
    0x2C: "gfx900",
    0x2D: "gfx902",
    0x2E: "gfx904",
    0x2F: "gfx906",
    0x30: "gfx908",
    0x31: "gfx909",
    0x32: "gfx90c",
    0x33: "gfx1010",
    0x34: "gfx1011",
    0x35: "gfx1012",
    0x36: "gfx1030",
    0x37: "gfx1031",
    0x38: "gfx1032",
    0x39: "gfx1033",
    0x3A: "gfx602",
    0x3B: "gfx705",
    0x3C: "gfx805",
    0x3D: "gfx1035",
    0x3E: "gfx1034",
    0x3F: "gfx90a",
    0x40: "gfx940",
    0x41: "gfx1100",
    0x42: "gfx1013",
    0x43: "gfx1150",
    0x44: "gfx1103",
    0x45: "gfx1036",
    0x46: "gfx1101",
    0x47: "gfx1102",
    0x48: "gfx1200",
    0x49: "gfx1250",
    0x4A: "gfx1151",
    0x4B: "gfx941",
    0x4C: "gfx942",
    0x4E: "gfx1201",
    0x4F: "gfx950",
    0x51: "gfx9-generic",
    0x52: "gfx10-1-generic",
    0x53: "gfx10-3-generic",
    0x54: "gfx11-generic",
    0x55: "gfx1152",
    0x59: "gfx12-generic",
    0x5A: "gfx1251",
}
_E_FLAGS = 48  # offset of e_flags in an ELF64 header
# unified VGPR files: arch VGPRs and AGPRs share one 512-entry file (CDNA2 and later)
UNIFIED_VGPR = ("gfx90a", "gfx940", "gfx941", "gfx942", "gfx950")


def is_amdgpu_elf(data: bytes) -> bool:
    return data[:4] == b"\x7fELF" and len(data) > 20 and struct.unpack_from("<H", data, 18)[0] == EM_AMDGPU


def _metadata(path: Path, data: bytes) -> dict[str, object]:
    try:
        elf = ELFFile(io.BytesIO(data))
        for sec in elf.iter_sections():
            if not isinstance(sec, NoteSection):
                continue
            for note in sec.iter_notes():
                if note["n_name"] == "AMDGPU" and str(note["n_type"]) in (
                    str(NT_AMDGPU_METADATA),
                    "NT_AMDGPU_METADATA",
                ):
                    desc = note["n_descdata"]
                    raw = desc if isinstance(desc, bytes) else desc.encode("latin-1")
                    doc = msgpack.unpackb(raw, raw=False, strict_map_key=False)
                    if isinstance(doc, dict):
                        return doc
    except (*ELF_ERRORS, msgpack.UnpackException, TypeError) as exc:  # TypeError: msgpack, an unhashable map key
        raise FormatError(path, "an AMDGPU code object", f"an unreadable ELF ({exc})") from None
    raise FormatError(path, "an AMDGPU code object with amdhsa metadata", "no AMDGPU metadata note (code object v2?)")


def kernel_symbols(data: bytes) -> list[str]:
    """The kernels an AMDGPU ELF defines, by symbol, in table order: every ``name`` beside its kernel descriptor
    ``name.kd`` (code object v3 and later), or typed STT_AMDGPU_HSA_KERNEL (v2). The dynamic table, which
    exports both, is read first (a fraction of the full one); the full one where it names none. Raises one of
    ``ELF_ERRORS`` on a damaged ELF."""
    elf = ELFFile(io.BytesIO(data))
    for table in (".dynsym", ".symtab"):
        sec = elf.get_section_by_name(table)
        if not isinstance(sec, SymbolTableSection):
            continue
        names: list[str] = []
        v2: list[str] = []
        for sym in sec.iter_symbols():
            names.append(sym.name)
            if sym["st_info"]["type"] == _STT_AMDGPU_HSA_KERNEL:
                v2.append(sym.name)
        described = set(names)
        found = list(dict.fromkeys([n for n in names if n and f"{n}.kd" in described] + v2))
        if found:
            return found
    return []


def _int(meta: dict[str, object], key: str) -> int | None:
    v = meta.get(key)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _machine(data: bytes) -> str | None:
    """The GPU the ELF header's EF_AMDGPU_MACH names (None: too short, or a value LLVM has not named)."""
    return _MACH.get(struct.unpack_from("<I", data, _E_FLAGS)[0] & 0xFF) if len(data) >= _E_FLAGS + 4 else None


def read_elf(path: Path, data: bytes, fmt: str = "hsaco") -> CodeObject:
    meta = _metadata(path, data)
    target = str(meta.get("amdhsa.target", ""))
    m = _GFX.search(target)
    arch = m.group(1) if m else _machine(data) or "unknown"
    kernels = []
    listed = meta.get("amdhsa.kernels")
    for k in listed if isinstance(listed, list) else []:
        if not isinstance(k, dict):
            continue
        vgpr, agpr = _int(k, ".vgpr_count"), _int(k, ".agpr_count")
        unified = arch in UNIFIED_VGPR
        kernels.append(
            KernelCode(
                name=str(k.get(".name", k.get(".symbol", "?"))),
                arch=arch,
                vendor="amd",
                vgpr=vgpr,
                arch_vgpr=(vgpr - (agpr or 0)) if unified and vgpr is not None else vgpr,
                agpr=agpr,
                sgpr=_int(k, ".sgpr_count"),
                vgpr_spill=_int(k, ".vgpr_spill_count"),
                sgpr_spill=_int(k, ".sgpr_spill_count"),
                lds_bytes=_int(k, ".group_segment_fixed_size"),
                scratch_bytes=_int(k, ".private_segment_fixed_size"),
                wave_size=_int(k, ".wavefront_size"),
                max_workgroup_size=_int(k, ".max_flat_workgroup_size"),
                kernarg_bytes=_int(k, ".kernarg_segment_size"),
                dynamic_stack=bool(k[".uses_dynamic_stack"]) if ".uses_dynamic_stack" in k else None,
            )
        )
    return CodeObject(path=str(path), format=fmt, vendor="amd", arch=arch, target=target or None, kernels=kernels)


def unbundle(path: Path, data: bytes) -> list[tuple[str, bytes]]:
    """(label, ELF bytes) of every AMDGPU entry of the clang offload bundles in ``data``, plain or compressed
    (``clang --offload-compress``). A host library's ``.hip_fatbin`` holds one bundle per translation unit, one
    after another (onnxruntime-rocm's provider: 95); the label is the target triple, after the bundle's index
    when there are several (``3:hipv4-amdgcn-amd-amdhsa--gfx942``)."""
    if not data.startswith((BUNDLE_MAGIC, COMPRESSED_MAGIC)):
        raise FormatError(path, "a clang offload bundle", "another file")
    bundles: list[list[tuple[str, bytes]]] = []
    base = 0
    ahead = _NextMagic(data)
    try:
        while base >= 0:
            if data.startswith(COMPRESSED_MAGIC, base):
                inner, end = _decompressed(path, data, base)
                entries, _ = _one_bundle(inner, 0)
            else:
                entries, end = _one_bundle(data, base)
            bundles.append(entries)
            base = ahead.after(max(end, base + len(COMPRESSED_MAGIC)))
    except (struct.error, UnicodeDecodeError) as exc:
        raise FormatError(path, "a clang offload bundle", f"a corrupt bundle ({exc})") from None
    many = len(bundles) > 1
    return [(f"{i}:{triple}" if many else triple, blob) for i, found in enumerate(bundles) for triple, blob in found]


class _NextMagic:
    """Where the next bundle of either kind starts, for ever-later positions. Each magic's next place is kept
    until it is passed: searching anew for the kind a library lacks scanned the rest of its ``.hip_fatbin``
    once per bundle (tensorflow-rocm's: 241 bundles in 609 MB, 43 s of the 145 s of one GPU's read)."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = {BUNDLE_MAGIC: 0, COMPRESSED_MAGIC: 0}  # -1: none further

    def after(self, start: int) -> int:
        for magic, at in self._at.items():
            if 0 <= at < start:
                self._at[magic] = self._data.find(magic, start)
        return min((at for at in self._at.values() if at >= start), default=-1)


# clang's compressed bundle (clang/lib/Driver/OffloadBundler.cpp, CompressedOffloadBundle): "CCOB", version, method
# (0 zlib, 1 zstd), then v1: uncompressed size (u32); v2: total and uncompressed size (u32 each); v3: both u64; then
# a 64-bit hash of the bundle and the compressed bytes
_SIZES = {1: ("<I", 20), 2: ("<II", 24), 3: ("<QQ", 32)}  # per version: size fields, header length
_MAX_BUNDLE = 1 << 33  # 8 GiB: a damaged size field must not allocate more


def _decompressed(path: Path, data: bytes, base: int) -> tuple[bytes, int]:
    """The plain bundle a compressed one at ``base`` holds (at most its stated size), and where the compressed
    one ends (version 1 does not say: its header's end, from where the next bundle is searched)."""
    version, method = struct.unpack_from("<HH", data, base + 4)
    if version not in _SIZES or method not in (0, 1):
        found = f"version {version}, method {method}"
        raise FormatError(path, "a compressed offload bundle of version 1-3, zlib or zstd", found)
    fmt, header = _SIZES[version]
    sizes = struct.unpack_from(fmt, data, base + 8)
    total, size = (0, sizes[0]) if version == 1 else sizes
    payload = data[base + header : base + total] if total else data[base + header :]
    limit = min(size, _MAX_BUNDLE)
    import zstandard  # here: only compressed bundles need it, and `kscope find` imports this module

    try:
        if method == 0:
            inner = zlib.decompressobj().decompress(payload, limit)
        else:
            inner = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(payload)).read(limit)
    except (zlib.error, zstandard.ZstdError) as exc:
        raise FormatError(path, "a clang offload bundle", f"a corrupt compressed bundle ({exc})") from None
    return inner, base + (total or header)


def _one_bundle(data: bytes, base: int) -> tuple[list[tuple[str, bytes]], int]:
    """The AMDGPU entries of the bundle at ``base`` (its entry offsets count from there), and where it ends."""
    (count,) = struct.unpack_from("<Q", data, base + len(BUNDLE_MAGIC))
    off, out = base + len(BUNDLE_MAGIC) + 8, []
    end = off
    for _ in range(count):
        start, size, tlen = struct.unpack_from("<QQQ", data, off)
        triple = data[off + 24 : off + 24 + tlen].decode()
        off += 24 + tlen
        blob = data[base + start : base + start + size]
        end = max(end, off, base + start + size)
        if "amdgcn" in triple and is_amdgpu_elf(blob):
            out.append((triple, blob))
    return out, end


# --- disassembly -----------------------------------------------------------------------------------

_LABEL = re.compile(r"^[0-9a-f]+ <(.+)>:$")


def disassemble(path: Path, arch: str) -> tuple[dict[str, list[str]], str]:
    """Instruction lines per kernel symbol, and the tool that produced them (the first LLVM that knows
    the target)."""
    sizes = _function_sizes(path)  # first: a damaged ELF can keep llvm-objdump printing for minutes
    failures = []
    for tool in llvm_objdumps():
        proc = run_tool([tool, "-d", f"--mcpu={arch}", str(path)])
        if proc.returncode == 0 and "not a recognized processor" not in proc.stderr:
            return _per_symbol(proc.stdout, sizes), _version(tool)
        failures.append(f"{_version(tool)}: {(proc.stderr.strip().splitlines() or ['no output'])[0]}")
    raise ToolFailedError(f"no installed LLVM disassembles {arch} ({'; '.join(failures)}); LLVM 20 or later does")


@cache
def _version(tool: str) -> str:
    out = run_tool([tool, "--version"]).stdout
    ver = re.search(r"LLVM version ([\d.]+)", out)
    return f"llvm-objdump {ver.group(1) if ver else '?'}"


def _function_sizes(path: Path) -> dict[str, int]:
    """Byte size of each function symbol: where a kernel's code ends and the alignment padding begins.
    Every section must lie inside the file (a corrupted size or offset is a damaged ELF, not a long one)."""
    try:
        with path.open("rb") as f:
            elf = ELFFile(f)
            size = path.stat().st_size
            for sec in elf.iter_sections():
                if sec["sh_type"] != "SHT_NOBITS" and sec["sh_offset"] + sec["sh_size"] > size:
                    raise ELFError(f"section {sec.name!r} runs past the end of the file")
            symtab = elf.get_section_by_name(".symtab")
            if not isinstance(symtab, SymbolTableSection):
                return {}
            return {s.name: s["st_size"] for s in symtab.iter_symbols() if s["st_info"]["type"] == "STT_FUNC"}
    except ELF_ERRORS as exc:
        raise FormatError(
            path, "an AMDGPU code object with a readable symbol table", f"a damaged ELF ({exc})"
        ) from None


_ADDR = re.compile(r"//\s*([0-9A-Fa-f]+):")


def _per_symbol(text: str, sizes: dict[str, int]) -> dict[str, list[str]]:
    """Instruction lines per symbol, cut at the symbol's size (the ``s_nop`` padding to the next
    256-byte boundary is not the kernel's); lines without an address (``...``, elided zeros) dropped. Labels
    that are no function symbol (an assembly kernel's branch targets) continue the function they are in."""
    per: dict[str, list[str]] = {}
    current: list[str] | None = None
    end: int | None = None
    for line in text.splitlines():
        m = _LABEL.match(line)
        if m and current is not None and sizes and m.group(1) not in sizes:
            continue  # a local label inside the function (hand-written assembly: label_0212), not a kernel
        if m:
            current = per.setdefault(m.group(1), [])
            size = sizes.get(m.group(1), 0)
            end = int(line.split(None, 1)[0], 16) + size if size else None
        elif current is not None and line.startswith("\t"):
            addr = _ADDR.search(line)
            if addr is not None and (end is None or int(addr.group(1), 16) < end):
                current.append(line.strip().split("//", 1)[0].strip())
    return per
