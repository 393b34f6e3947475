"""kscope isa / fit / occupancy against independent ground truth.

AMD: the amdhsa metadata note decoded here with pyelftools' raw section bytes + msgpack (not through
kernelscope). NVIDIA: the H100's own CUDA driver (function attributes and the occupancy API, captured
on the GPU by bench/gpu/cuda_occupancy.py into tests/data/occupancy) and the Nsight Compute report of
the same two Triton kernels (launch__occupancy_* in the corpus details CSV).
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import msgpack
import pytest
from conftest import assert_one_error_line, run_kscope

from kernelscope import api
from kernelscope.analyses.occupancy import occupancy
from kernelscope.codeobj.tools import cuda_tool
from kernelscope.errors import MissingToolError
from kernelscope.model.codeobj import KernelCode

DATA = Path(__file__).parent / "data"
CODEOBJ = DATA / "codeobj"
HAS_LLVM = shutil.which("llvm-objdump-19") or Path("/usr/lib/llvm-19/bin/llvm-objdump").exists()


def _has_cuobjdump() -> bool:
    try:
        cuda_tool("cuobjdump")
    except MissingToolError:
        return False
    return True


def _note_metadata(path: Path) -> dict[str, object]:
    """Independent decode: walk the ELF section headers by hand, find the AMDGPU note, msgpack it."""
    data = path.read_bytes()
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    for i in range(shnum):
        (sh_type,) = struct.unpack_from("<I", data, shoff + i * shentsize + 4)
        off, size = struct.unpack_from("<QQ", data, shoff + i * shentsize + 24)
        if sh_type != 7:  # SHT_NOTE
            continue
        p = off
        while p < off + size:
            namesz, descsz, ntype = struct.unpack_from("<III", data, p)
            name = data[p + 12 : p + 12 + namesz].rstrip(b"\0")
            desc_at = p + 12 + (namesz + 3) // 4 * 4
            if name == b"AMDGPU" and ntype == 32:
                doc: dict[str, object] = msgpack.unpackb(data[desc_at : desc_at + descsz], raw=False)
                return doc
            p = desc_at + (descsz + 3) // 4 * 4
    raise AssertionError("no AMDGPU note")


@pytest.mark.parametrize("name", ["mm_gfx942.hsaco", "softmax_gfx942.hsaco", "add_gfx950.hsaco", "add_gfx1201.hsaco"])
def test_amd_resources_equal_compiler_metadata(name: str) -> None:
    (obj,) = api.isa([CODEOBJ / name])
    meta = _note_metadata(CODEOBJ / name)
    (truth,) = meta["amdhsa.kernels"]  # type: ignore[misc]
    (k,) = obj.kernels
    assert obj.arch in str(meta["amdhsa.target"])
    assert (k.name, k.vgpr, k.sgpr, k.agpr, k.vgpr_spill, k.sgpr_spill) == (
        truth[".name"],
        truth[".vgpr_count"],
        truth[".sgpr_count"],
        truth.get(".agpr_count"),
        truth[".vgpr_spill_count"],
        truth[".sgpr_spill_count"],
    )
    assert (k.lds_bytes, k.scratch_bytes, k.wave_size) == (
        truth[".group_segment_fixed_size"],
        truth[".private_segment_fixed_size"],
        truth[".wavefront_size"],
    )


def test_gfx942_gemm_unified_vgprs_and_occupancy() -> None:
    (obj,) = api.isa([CODEOBJ / "mm_gfx942.hsaco"])
    (k,) = obj.kernels
    assert (k.vgpr, k.agpr, k.arch_vgpr) == (512, 256, 256)  # unified file: .vgpr_count includes AGPRs
    occ = k.occupancy
    assert occ is not None and occ.block_size == 256  # Triton num_warps 4 x wave 64, from the metadata beside it
    assert (occ.waves_per_simd, occ.limiter) == (1, "vgpr")  # 512 of 512 VGPRs: one wave per SIMD


@pytest.mark.skipif(not HAS_LLVM, reason="needs LLVM 19 llvm-objdump")
def test_amd_mix_counts_match_the_disassembly() -> None:
    (obj,) = api.isa([CODEOBJ / "mm_gfx942.hsaco"])
    (k,) = obj.kernels
    import subprocess

    tool = shutil.which("llvm-objdump-19") or "/usr/lib/llvm-19/bin/llvm-objdump"
    text = subprocess.run(
        [tool, "-d", "--mcpu=gfx942", str(CODEOBJ / "mm_gfx942.hsaco")], capture_output=True, text=True, check=True
    ).stdout
    ops = [ln.split()[0] for ln in text.splitlines() if ln.startswith("\t")]
    assert k.mix["matrix"] == sum(o.startswith("v_mfma") for o in ops)
    assert k.mix["scratch_load"] == sum(o.startswith("scratch_load") for o in ops)
    assert k.mix["accvgpr"] == sum(o.startswith("v_accvgpr") for o in ops)


def _bundle_entries(data: bytes) -> dict[str, bytes]:
    """Independent walk of the clang offload bundle header: magic, count, then (offset, size, triple)."""
    assert data.startswith(b"__CLANG_OFFLOAD_BUNDLE__")
    (count,) = struct.unpack_from("<Q", data, 24)
    out, off = {}, 32
    for _ in range(count):
        start, size, tlen = struct.unpack_from("<QQQ", data, off)
        out[data[off + 24 : off + 24 + tlen].decode()] = data[start : start + size]
        off += 24 + tlen
    return out


def _host_fatbin(path: Path) -> bytes:
    """The ``.hip_fatbin`` section of a host ELF, found through pyelftools."""
    from elftools.elf.elffile import ELFFile

    with path.open("rb") as f:
        sec = ELFFile(f).get_section_by_name(".hip_fatbin")
        assert sec is not None
        return bytes(sec.data())


@pytest.mark.parametrize("name", ["k.bundle", "libk.so"])
def test_real_hip_bundle_and_host_library(name: str, tmp_path: Path) -> None:
    """A real clang-19 HIP build (tests/data/codeobj/hip): every GPU entry read, facts equal the metadata."""
    path = CODEOBJ / "hip" / name
    data = path.read_bytes() if name.endswith(".bundle") else _host_fatbin(path)
    entries = {t: blob for t, blob in _bundle_entries(data).items() if "amdgcn" in t}
    objs = api.isa([path])
    assert sorted(o.arch for o in objs) == sorted(t.rsplit("-", 1)[-1] for t in entries) == ["gfx90a", "gfx942"]
    for obj in objs:
        (blob,) = [b for t, b in entries.items() if t.endswith(obj.arch)]
        (tmp_path / obj.arch).write_bytes(blob)
        truth = {k[".name"]: k for k in _note_metadata(tmp_path / obj.arch)["amdhsa.kernels"]}  # type: ignore[attr-defined]
        assert {k.name for k in obj.kernels} == set(truth) == {"scale_kernel", "_Z5tiledIfLi1024EEvPT_"}
        for k in obj.kernels:
            t = truth[k.name]
            assert (k.vgpr, k.sgpr, k.lds_bytes) == (t[".vgpr_count"], t[".sgpr_count"], t[".group_segment_fixed_size"])
        tiled = next(k for k in obj.kernels if k.name.startswith("_Z5tiled"))
        assert tiled.lds_bytes == 4 * 1024  # __shared__ float buf[1024] in k.hip
        if HAS_LLVM:  # the kernel's own code only: the s_nop padding up to the next function is not counted
            assert "nop" not in tiled.mix and tiled.mix["barrier"] == 1 and tiled.mix["lds_store"] == 1


def test_the_table_shows_a_symbol_demangled_and_json_keeps_it_whole() -> None:
    """A reader scans the table (and fit's panels) for ``tiled<float, 1024>(float*)``, not
    ``_Z5tiledIfLi1024EEvPT_`` (names of host libraries run to thousands of characters); --json keeps the
    symbol, which tools match on."""
    lib = CODEOBJ / "hip" / "libk.so"
    human = run_kscope("isa", lib)
    assert human.returncode == 0 and "tiled<float, 1024>(float*)" in human.stdout and "_Z5tiled" not in human.stdout
    names = [k["name"] for o in json.loads(run_kscope("isa", lib, "--json").stdout)["objects"] for k in o["kernels"]]
    assert "_Z5tiledIfLi1024EEvPT_" in names and "scale_kernel" in names
    panels = run_kscope("fit", lib)
    assert "+-- tiled<float, 1024>(float*)  (amd gfx90a)" in panels.stdout and "_Z5tiled" not in panels.stdout


def test_a_kernel_name_with_a_control_character_prints_escaped(tmp_path: Path) -> None:
    """A symbol is the program's to choose: a real object whose kernel is renamed ``a<ESC>d`` (symbol table
    and metadata, same length) prints ``a\\x1bd`` in isa's table and fit's panel; --json keeps the name."""
    data = (CODEOBJ / "add_gfx942.hsaco").read_bytes()
    for old, new in [(b"\x00add\x00", b"\x00a\x1bd\x00"), (b"\x00add.kd\x00", b"\x00a\x1bd.kd\x00"),
                     (b"\xa3add", b"\xa3a\x1bd"), (b"\xa6add.kd", b"\xa6a\x1bd.kd")]:  # fmt: skip
        data = data.replace(old, new)
    path = tmp_path / "k.hsaco"
    path.write_bytes(data)
    for cmd in ("isa", "fit"):
        out = run_kscope(cmd, path)
        assert out.returncode == 0 and "\x1b" not in out.stdout and "a\\x1bd" in out.stdout, cmd
    (obj,) = json.loads(run_kscope("isa", path, "--json").stdout)["objects"]
    assert obj["kernels"][0]["name"] == "a\x1bd"


@pytest.mark.skipif(not _has_cuobjdump(), reason="needs cuobjdump (nvidia-cuda-cuobjdump wheel)")
def test_a_cubin_without_a_block_size_says_how_to_get_occupancy() -> None:
    """The H100 cubin taken from Triton's cache has no metadata beside it: no block size, so no occupancy; the
    notes say which option gives it, and with it (Triton ran it with 8 warps: 256 threads) there is one."""
    path = CODEOBJ / "h100_triton_mm_k_sm90a.cubin"
    (obj,) = api.isa([path])
    assert obj.kernels[0].occupancy is None and any("--block-size" in n for n in obj.notes)
    (obj,) = api.isa([path], block_size=256)
    assert obj.kernels[0].occupancy is not None and not any("--block-size" in n for n in obj.notes)


def test_gfx950_is_disassembled_by_a_newer_llvm_or_says_why_not() -> None:
    """LLVM 19 does not know gfx950: a newer installed LLVM disassembles it (``./run setup`` installs Debian 12's
    llvm-22 where apt has it), and the kernel's instructions are that LLVM's own lines within the kernel's
    symbol (read here with pyelftools); with none, the notes say so and there is no mix."""
    import re
    import subprocess

    from elftools.elf.elffile import ELFFile

    path = CODEOBJ / "add_gfx950.hsaco"
    (obj,) = api.isa([path])
    (k,) = obj.kernels
    if obj.disassembler is None:
        assert any("gfx950" in n for n in obj.notes) and k.mix == {}
        return
    assert not obj.disassembler.startswith("llvm-objdump 19.")
    major = re.search(r"llvm-objdump (\d+)\.", obj.disassembler)
    assert major is not None
    tool = shutil.which(f"llvm-objdump-{major[1]}") or f"/usr/lib/llvm-{major[1]}/bin/llvm-objdump"
    text = subprocess.run([tool, "-d", "--mcpu=gfx950", str(path)], capture_output=True, text=True, check=True).stdout
    with path.open("rb") as f:
        sym = next(s for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols() if s.name == "add")
    start, end = sym["st_value"], sym["st_value"] + sym["st_size"]
    addresses = [int(m.group(1), 16) for ln in text.splitlines() if (m := re.search(r"//\s*([0-9A-Fa-f]+):", ln))]
    assert k.instructions == sum(start <= a < end for a in addresses) > 0


@pytest.mark.parametrize(("mach", "arch"), [(0x4C, "gfx942"), (0x4F, "gfx950"), (0x3F, "gfx90a"), (0x4E, "gfx1201")])
def test_an_object_whose_metadata_names_no_target_has_the_gpu_of_its_elf_header(
    mach: int, arch: str, tmp_path: Path
) -> None:
    """aiter's hand-written assembly kernels carry amdhsa metadata without ``amdhsa.target``; the ELF header's
    EF_AMDGPU_MACH still names the GPU (LLVM's ELF.h values). A real Triton object with its target key renamed
    and the machine field set to each value: the arch follows the header, so occupancy has its limits."""
    data = bytearray((CODEOBJ / "add_gfx942.hsaco").read_bytes())
    at = data.index(b"amdhsa.target")
    data[at : at + 13] = b"amdhsa.notarg"  # the same metadata, with no target key (msgpack: equal length)
    data[48] = mach  # e_flags' low byte in the ELF64 header
    path = tmp_path / "kernel.co"
    path.write_bytes(bytes(data))
    (obj,) = api.isa([path])
    assert obj.target is None and obj.arch == arch and obj.kernels[0].arch == arch
    assert obj.kernels[0].occupancy is not None


def test_an_assembly_kernels_branch_labels_stay_in_its_function() -> None:
    """Hand-written assembly kernels (aiter's ``fmoe_kernel_func``) keep their branch targets as local symbols,
    which llvm-objdump prints as labels: the function is every instruction up to its symbol size, across them.
    (Cut at the first label, aiter's gfx942 ``fmoe_f16.co`` counted 359 of its 3,736 instructions and none of
    its 1,024 MFMAs.) The lines are llvm-objdump 19's form."""
    from kernelscope.codeobj.amdgpu import _per_symbol

    text = "\n".join(
        [
            "0000000000001d00 <fmoe_kernel_func>:",
            "\ts_and_b32 s1, s1, 0xffff                                   // 000000001D00: 8601FF01 0000FFFF",
            "0000000000001d08 <label_0212>:",
            "\tv_mfma_f32_16x16x16_f16 v[128:131], a[0:1], v[64:65], v[128:131]// 000000001D08: D3CD0080 0E028100",
            "\ts_endpgm                                                   // 000000001D10: BF810000",
            "\ts_nop 0                                                    // 000000001D14: BF800000",
            "0000000000001e00 <next_kernel>:",
            "\ts_endpgm                                                   // 000000001E00: BF810000",
        ]
    )
    per = _per_symbol(text, {"fmoe_kernel_func": 0x14, "next_kernel": 4})
    assert per == {
        "fmoe_kernel_func": [
            "s_and_b32 s1, s1, 0xffff",
            "v_mfma_f32_16x16x16_f16 v[128:131], a[0:1], v[64:65], v[128:131]",
            "s_endpgm",
        ],
        "next_kernel": ["s_endpgm"],
    }


H100 = json.loads((DATA / "occupancy" / "h100_cuda_occupancy.json").read_text())


@pytest.mark.skipif(not _has_cuobjdump(), reason="needs cuobjdump (nvidia-cuda-cuobjdump wheel)")
@pytest.mark.parametrize("entry", H100["kernels"], ids=[k["cubin"] for k in H100["kernels"]])
def test_nvidia_resources_and_occupancy_equal_the_cuda_driver(entry: dict[str, object]) -> None:
    (obj,) = api.isa([CODEOBJ / str(entry["cubin"])])
    (k,) = [k for k in obj.kernels if k.name == entry["name"]]
    attrs = entry["attributes"]
    # the driver's per-thread local size is cuobjdump's LOCAL plus its STACK frame (spills live there)
    assert (k.registers, (k.local_bytes or 0) + (k.stack_bytes or 0)) == (attrs["registers"], attrs["local"])  # type: ignore[index]
    rows = entry["occupancy"]
    assert len(rows) >= 40  # type: ignore[arg-type]
    for row in rows:  # type: ignore[attr-defined]
        occ = occupancy(k, row["block"], row["dynamic_shared"])
        assert occ is not None
        assert occ.blocks_per_cu == row["blocks_per_sm"], (row, occ.limits)


@pytest.mark.skipif(not _has_cuobjdump(), reason="needs cuobjdump")
def test_cubin_the_disassembler_refuses_keeps_its_resources() -> None:
    """ptxas -v said: 4 registers, 332 bytes cmem[0] (tests/data/codeobj/ptxas/README.md)."""
    (obj,) = api.isa([CODEOBJ / "ptxas" / "scale_sm52.cubin"])
    (k,) = obj.kernels
    assert (k.name, k.arch, k.registers, k.constant_bytes["constant0"]) == ("scale", "sm_52", 4, 332)
    assert k.mix == {} and any(n.startswith("no SASS mix for sm_52") for n in obj.notes)


def test_a_host_library_whose_fatbin_size_is_damaged_is_one_error_line(tmp_path: Path) -> None:
    """A bit flip in the ``.hip_fatbin`` section header's size (fuzz seed 47): once only the sections were read
    from the file, pyelftools asked it for 32 TiB and raised MemoryError. A BytesIO of the whole file had stopped
    at its end."""
    from elftools.elf.elffile import ELFFile

    src = CODEOBJ / "hip" / "libk2z.so"
    data = bytearray(src.read_bytes())
    with src.open("rb") as f:
        elf = ELFFile(f)
        (i,) = [n for n, sec in enumerate(elf.iter_sections()) if sec.name == ".hip_fatbin"]
        struct.pack_into("<Q", data, elf["e_shoff"] + i * elf["e_shentsize"] + 32, 1 << 45)  # Elf64_Shdr.sh_size
    bad = tmp_path / "libbad.so"
    bad.write_bytes(bytes(data))
    proc = run_kscope("isa", bad)
    assert_one_error_line(proc)
    assert "another file" in proc.stderr


@pytest.mark.parametrize("lib", ["libk2.so", "libk2z.so"])
def test_a_host_library_of_two_translation_units_has_both_bundles(lib: str) -> None:
    """tests/data/codeobj/hip/README.md: the .hip_fatbin holds k.hip's bundle, then k2.hip's (libk2z.so: both
    compressed, CCOB v2 zstd). Every kernel of both, per GPU, as the one-bundle build of k.hip has them; before,
    only the first bundle was read, and a compressed one not at all."""
    objs = api.isa([CODEOBJ / "hip" / lib])
    names = ("scale_kernel", "_Z5tiledIfLi1024EEvPT_", "add_kernel")
    got = sorted((o.arch, k.name) for o in objs for k in o.kernels)
    assert got == sorted((arch, name) for arch in ("gfx90a", "gfx942") for name in names)
    labels = [o.path.rsplit("#", 1)[1] for o in objs]
    assert labels[:2] == ["0:hipv4-amdgcn-amd-amdhsa--gfx90a", "0:hipv4-amdgcn-amd-amdhsa--gfx942"]

    def seen(k: KernelCode) -> tuple[object, ...]:
        return k.vgpr, k.sgpr, k.lds_bytes, k.instructions

    one = {(o.arch, k.name): seen(k) for o in api.isa([CODEOBJ / "hip" / "libk.so"]) for k in o.kernels}
    assert all(one.get((o.arch, k.name), seen(k)) == seen(k) and k.instructions for o in objs for k in o.kernels)
    assert len(api.isa([CODEOBJ / "hip" / lib], arch="gfx942")) == 2


@pytest.mark.skipif(not _has_cuobjdump(), reason="needs cuobjdump")
def test_a_fat_binary_is_disassembled_one_cubin_at_a_time() -> None:
    """tests/data/codeobj/fatbin/README.md: one cubin the disassembler refuses (sm_52) costs only its own mix;
    the others have the instructions, mix and registers each cubin has read alone, though their fatbin entries
    say sm_90 and their own listings sm_90a. (Disassembled whole, the sm_52 cubin had cost every mix.)"""
    ticks: list[tuple[str, int, int]] = []
    (obj,) = api.isa([CODEOBJ / "fatbin" / "k.fatbin"], progress=lambda *t: ticks.append(t))
    alone = {
        k.name: k
        for c in ("ptxas/scale_sm52.cubin", "add_sm90.cubin", "softmax_sm90.cubin")
        for k in api.isa([CODEOBJ / c])[0].kernels
    }
    assert sorted(k.name for k in obj.kernels) == ["add", "scale", "softmax"]
    for k in obj.kernels:
        a = alone[k.name]
        assert (k.registers, k.instructions, k.mix, k.shared_bytes) == (
            a.registers,
            a.instructions,
            a.mix,
            a.shared_bytes,
        )
    assert [k.instructions for k in sorted(obj.kernels, key=lambda k: k.name)] == [96, None, 408]
    assert [n for n in obj.notes if n.startswith("no SASS mix")] == [next(n for n in obj.notes if "sm_52" in n)]
    assert ticks[-1] == ("cubins of k.fatbin", 3, 3)


@pytest.mark.parametrize(
    ("cubin", "arch"),
    [("ptxas/scale_sm52.cubin", "sm_52"), ("add_sm90.cubin", "sm_90"), ("h100_triton_mm_k_sm90a.cubin", "sm_90")],
)
def test_cubin_arch_from_the_elf_header(cubin: str, arch: str) -> None:
    from kernelscope.codeobj.nvidia import elf_arch

    assert elf_arch((CODEOBJ / cubin).read_bytes()) == arch


def test_arch_filter(tmp_path: Path) -> None:
    objs = api.isa([CODEOBJ / "hip" / "k.bundle"], arch="gfx942")
    assert [o.arch for o in objs] == ["gfx942"]
    assert_one_error_line(run_kscope("isa", str(CODEOBJ / "hip" / "k.bundle"), "--arch", "gfx1100"))


def _ncu(kernel: str, metric: str) -> str:
    import csv

    for r in csv.DictReader((DATA / "ncu" / "h100_triton_details.csv").open()):
        if r["Kernel Name"] == kernel and r["Metric Name"] == metric:
            return r["Metric Value"]
    raise AssertionError(metric)


@pytest.mark.skipif(not _has_cuobjdump(), reason="needs cuobjdump")
@pytest.mark.parametrize(
    ("cubin", "kernel", "dynamic"),
    [("h100_triton_mm_k_sm90a.cubin", "mm_k", 98304), ("h100_triton_softmax_k_sm90a.cubin", "softmax_k", 32)],
)
def test_nvidia_occupancy_equals_nsight_compute(cubin: str, kernel: str, dynamic: int) -> None:
    block = int(_ncu(kernel, "Block Size"))
    (obj,) = api.isa([CODEOBJ / cubin], block_size=block, dynamic_shared=dynamic)
    occ = obj.kernels[0].occupancy
    assert occ is not None
    assert occ.warps_per_sm == int(_ncu(kernel, "Theoretical Active Warps per SM"))
    assert occ.limits["registers"] == int(_ncu(kernel, "Block Limit Registers")) * block // 32
    assert round(occ.pct) == round(float(_ncu(kernel, "Theoretical Occupancy")))


def test_fit_panels_and_json(tmp_path: Path) -> None:
    proc = run_kscope("fit", CODEOBJ / "mm_gfx942.hsaco")
    assert proc.returncode == 0, proc.stderr
    assert "VGPR (unified)" in proc.stdout and "512/512" in proc.stdout and "spills: 58 VGPR + 61 SGPR" in proc.stdout
    doc = json.loads(run_kscope("fit", CODEOBJ / "mm_gfx942.hsaco", "--json").stdout)
    assert doc["schema"] == "kernelscope.fit.v1" and doc["kernels"][0]["limiter"] == "vgpr"


def test_isa_json_schema() -> None:
    proc = run_kscope("isa", CODEOBJ / "softmax_gfx942.hsaco", "--json")
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "kernelscope.isa.v1"
    k = doc["objects"][0]["kernels"][0]
    for key in (
        "name",
        "arch",
        "vgpr",
        "sgpr",
        "agpr",
        "vgpr_spill",
        "sgpr_spill",
        "lds_bytes",
        "scratch_bytes",
        "wave_size",
        "occupancy",
        "mix",
    ):
        assert key in k


@pytest.mark.parametrize(
    "args",
    [
        ("isa", "{tmp}/none.hsaco"),
        ("isa", "{junk}"),
        ("isa", "{tmp}"),
        ("fit", "{junk}"),
        ("isa", "{bundle}"),
        ("isa", "{hsaco}", "--block-size", "0"),
    ],
    ids=["missing", "not-a-binary", "empty-dir", "fit-junk", "corrupt-bundle", "bad-block"],
)
def test_bad_input_is_one_line(tmp_path: Path, args: tuple[str, ...]) -> None:
    junk = tmp_path / "junk.hsaco"
    junk.write_bytes(b"\x7fELF" + b"\0" * 60)
    bundle = tmp_path / "b.co"
    bundle.write_bytes(b"__CLANG_OFFLOAD_BUNDLE__" + b"\xff" * 8)
    (tmp_path / "empty").mkdir()
    subs = {"tmp": tmp_path / "empty", "junk": junk, "bundle": bundle, "hsaco": CODEOBJ / "add_gfx942.hsaco"}
    assert_one_error_line(run_kscope(*(a.format(**subs) for a in args)))
