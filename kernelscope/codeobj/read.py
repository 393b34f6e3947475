"""Open any GPU binary a user points at: sniff it, pick the vendor reader, add the instruction mix
and the compiler's launch metadata (Triton writes it beside the binary)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from elftools.elf.elffile import ELFFile

from kernelscope.codeobj import amdgpu, nvidia
from kernelscope.codeobj.mix import amd_mix, matrix_dtype
from kernelscope.codeobj.tools import ELF_ERRORS, Progress, each_in_parallel
from kernelscope.errors import FormatError, InputError, KernelscopeError
from kernelscope.model.codeobj import CodeObject
from kernelscope.readers._io import open_raw, unreadable

BINARY_SUFFIXES = {".hsaco", ".co", ".o", ".cubin", ".fatbin", ".so", ".out", ".elf", ""}


def _host_sections(f: IO[bytes]) -> dict[str, bytes]:
    """A host ELF's device-code sections, read alone from the open file: tensorflow-rocm's 1.4 GB library is
    read for its 609 MB ``.hip_fatbin`` only."""
    size = os.fstat(f.fileno()).st_size
    try:
        elf = ELFFile(f)
        wanted = [s for s in elf.iter_sections() if s.name in (".hip_fatbin", ".nv_fatbin", "__nv_relfatbin")]
        if any(s["sh_offset"] + s["sh_size"] > size for s in wanted):
            return {}  # a damaged size: reading it from the file would allocate it (a BytesIO stopped at its end)
        return {s.name: s.data() for s in wanted}
    except ELF_ERRORS:
        return {}


def _is_host_elf(head: bytes) -> bool:
    """An ELF of the CPU's (a program or library that may carry device code), not a GPU code object."""
    return (
        head[:4] == b"\x7fELF"
        and len(head) >= 20
        and int.from_bytes(head[18:20], "little") not in (amdgpu.EM_AMDGPU, nvidia.EM_CUDA)
    )


def _amd(path: Path, data: bytes, fmt: str) -> CodeObject:
    obj = amdgpu.read_elf(path, data, fmt)
    try:
        if fmt == "hsaco":
            lines, tool = amdgpu.disassemble(path, obj.arch)
        else:  # an ELF cut out of a bundle: llvm-objdump needs a file
            with tempfile.NamedTemporaryFile(suffix=".hsaco") as tmp:
                tmp.write(data)
                tmp.flush()
                lines, tool = amdgpu.disassemble(Path(tmp.name), obj.arch)
    except KernelscopeError as exc:
        obj.notes.append(f"no instruction mix: {exc}")
        return obj
    obj.disassembler = tool
    for k in obj.kernels:
        body = lines.get(k.name)
        if body is not None:
            mix = amd_mix(body)
            k.mix, k.instructions = dict(mix), sum(v for c, v in mix.items() if "." not in c)
            found = matrix_dtype(line.split(None, 1)[0] for line in body if line)
            if found is not None:
                k.matrix_dtype, k.matrix_dtype_evidence = found
    return obj


def _bundle(path: Path, blob: bytes, arch: str | None, progress: Progress | None) -> list[CodeObject]:
    entries = [(t, b) for t, b in amdgpu.unbundle(path, blob) if not arch or t.endswith(arch)]
    where = f"code objects in {path.name}"
    return each_in_parallel(lambda e: _amd(Path(f"{path}#{e[0]}"), e[1], "offload-bundle"), entries, progress, where)


def _kept(obj: CodeObject) -> list[CodeObject]:
    return [obj] if obj.kernels else []


def read_binary(path: Path, arch: str | None = None, progress: Progress | None = None) -> list[CodeObject]:
    """The code objects in one file (a bundle or fatbin can hold several); only ``arch``'s when given."""
    with open_raw(path) as f:
        try:
            head = f.read(64)
            host = _is_host_elf(head)
            sections = _host_sections(f) if host else {}
            data = b"" if host else head + f.read()  # a host ELF is read for its sections alone
        except OSError as exc:  # EISDIR arrives at read() on some systems
            raise unreadable(path, exc) from None
    if ".nv_fatbin" in sections or "__nv_relfatbin" in sections:
        return _kept(nvidia.read(path, "elf-with-fatbin", arch, progress))
    if ".hip_fatbin" in sections:
        return _bundle(path, sections[".hip_fatbin"], arch, progress)
    if amdgpu.is_amdgpu_elf(data):
        obj = _amd(path, data, "hsaco")
        return [obj] if not arch or obj.arch == arch else []
    if data.startswith((amdgpu.BUNDLE_MAGIC, amdgpu.COMPRESSED_MAGIC)):
        return _bundle(path, data, arch, progress)
    if data[:4] == b"\x7fELF" and int.from_bytes(data[18:20], "little") == nvidia.EM_CUDA:
        return _kept(nvidia.read(path, "cubin", arch, progress))
    if data[:4] == nvidia.FATBIN_MAGIC:
        return _kept(nvidia.read(path, "fatbin", arch, progress))
    raise FormatError(
        path, "a GPU code object (AMDGPU ELF, offload bundle, cubin, fatbin, ELF with fatbin)", "another file"
    )


def _triton_metadata(path: Path) -> dict[str, dict[str, object]]:
    """Kernel name -> Triton's launch metadata (num_warps, shared) from JSON beside the binary:
    a Triton cache entry (``<name>.json``) or a table keyed by binary file name."""
    out: dict[str, dict[str, object]] = {}
    for js in sorted(path.parent.glob("*.json")):
        try:
            doc = json.loads(js.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and js.stem == path.stem and "num_warps" in doc:
            out[str(doc.get("name", path.stem))] = doc
        elif isinstance(doc, dict) and isinstance(doc.get(path.name), dict):
            entry = doc[path.name]
            out[str(entry.get("kernel", entry.get("name", path.stem)))] = entry
    return out


def _files(path: Path) -> Iterator[Path]:
    if path.is_dir():
        for root, _, names in os.walk(path):
            for n in sorted(names):
                p = Path(root, n)
                if p.suffix in BINARY_SUFFIXES and p.is_file():
                    yield p
    else:
        yield path


def read_code_objects(paths: list[Path], arch: str | None = None, progress: Progress | None = None) -> list[CodeObject]:
    """Every code object in ``paths`` (files, or folders such as a Triton cache walked for binaries);
    ``progress`` ticks per file read and per embedded cubin disassembled."""
    out: list[CodeObject] = []
    for given in paths:
        if not given.exists():
            raise InputError(f"{given}: no such file or directory")
        found = 0
        files = list(_files(given))
        for i, f in enumerate(files, 1):
            if progress and len(files) > 1:
                progress(f"files in {given.name}", i, len(files))
            try:
                objs = read_binary(f, arch, progress)
            except FormatError:
                if given.is_dir():  # a cache directory holds other files too
                    continue
                raise
            meta = _triton_metadata(f)
            for o in objs:
                for k in o.kernels:
                    k.metadata = {**k.metadata, **meta.get(k.name, {})}
            out.extend(objs)
            found += len(objs)
        if not found:
            where = "in this directory" if given.is_dir() else "in this file"
            raise InputError(f"{given}: no GPU code objects{f' for {arch}' if arch else ''} {where}")
    return out
