"""Instruction mix: each disassembled instruction counted into one class, per vendor.

AMD classes are ``codeobj/amd_classes.py``'s (the ISA encoding families), loads and stores also by
access width; ``v_dual_*`` (RDNA VOPD) is two VALU ops. ``scratch_*`` and ``v_accvgpr_*`` are classes
of their own (spills, AGPR traffic).
NVIDIA classes follow SASS opcodes: tensor-core MMAs (HGMMA/QGMMA/IGMMA/HMMA/IMMA/… and Blackwell
UTC*MMA), FP32 pipe ops, MUFU, global/shared/local memory by width, barriers, TMA, atomics, branches.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from kernelscope.codeobj.amd_classes import amd_class

_AMD_WIDTH = {  # a mnemonic's last word: its access width
    word: width
    for width, words in (
        ("b8", "ubyte sbyte byte u8 i8 b8"),
        ("b16", "ushort sshort short u16 i16 b16"),
        ("b32", "dword b32"),
        ("b64", "dwordx2 b64"),
        ("b96", "dwordx3 b96"),
        ("b128", "dwordx4 b128"),
    )
    for word in words.split()
}
_WIDTH_CLASSES = ("vmem_load", "vmem_store", "lds_load", "lds_store", "scratch_load", "scratch_store")

_NV_MATRIX = re.compile(r"^(?:HGMMA|QGMMA|IGMMA|BGMMA|GMMA|HMMA|IMMA|DMMA|BMMA|OMMA|QMMA|UTC\w*MMA)")
_NV = [
    ("matrix", _NV_MATRIX),
    ("ldl_spill", re.compile(r"^LDL")),
    ("stl_spill", re.compile(r"^STL")),
    ("tma", re.compile(r"^(?:UTMA\w*|UBLKCP|UBLKRED|UBLKPF|UTMACCTL|SYNCS)")),
    ("ldg", re.compile(r"^(?:LDG|LD)(?:\.|$)")),
    ("stg", re.compile(r"^(?:STG|ST)(?:\.|$)")),
    ("ldgsts", re.compile(r"^LDGSTS")),
    ("ldsm", re.compile(r"^LDSM")),
    ("lds", re.compile(r"^LDS(?:\.|$)")),
    ("sts", re.compile(r"^STS(?:\.|$)")),
    ("atomic", re.compile(r"^(?:ATOM|ATOMG|ATOMS|RED|REDG|REDUX)")),
    ("barrier", re.compile(r"^(?:BAR|WARPSYNC|MEMBAR|DEPBAR|LDGDEPBAR|ERRBAR|CCTL)")),
    ("fp32", re.compile(r"^(?:FFMA|FMUL|FADD|FMNMX|FSEL|FSETP|FSET|FCHK|FFMA2|FADD2|FMUL2)(?:\.|$)")),
    ("fp16_vec", re.compile(r"^(?:HFMA2|HMUL2|HADD2|HMNMX2|HSETP2|HSET2)")),
    ("fp64", re.compile(r"^(?:DFMA|DMUL|DADD|DSETP|DMNMX)")),
    ("mufu", re.compile(r"^MUFU")),
    ("convert", re.compile(r"^(?:F2F|F2I|I2F|F2FP|I2FP|F2IP)")),
    ("branch", re.compile(r"^(?:BRA|BRX|JMP|JMX|RET|EXIT|CALL|BSSY|BSYNC|BREAK|BPT)")),
    (
        "integer",
        re.compile(
            r"^(?:IMAD|IADD|IADD3|ISETP|LOP|LOP3|SHF|SHL|SHR|LEA|IMNMX|IABS|POPC|FLO|BREV|PRMT|SGXT|BMSK|VIADD|VIMNMX)"
        ),
    ),
    ("uniform", re.compile(r"^U[A-Z]")),
    ("move", re.compile(r"^(?:MOV|S2R|S2UR|CS2R|SHFL|SEL|P2R|R2P|PLOP3|LDC|R2UR|VOTE|NOP)")),
]
_SASS_OPCODE = re.compile(r"^\s*(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Za-z0-9_.]*)")  # after the guard predicate


def sass_opcode(line: str) -> str | None:
    """The opcode with its modifiers of one SASS line (``@!P0 HGMMA.64x128x16.F32.BF16 gdesc[UR4], ...``)."""
    m = _SASS_OPCODE.match(line)
    return m[1] if m else None


_NV_WIDTH = re.compile(r"\.(8|16|32|64|128|U8|S8|U16|S16)(?:\.|$)")


_PADDING = ("s_nop", "s_code_end")


def amd_mix(lines: Iterable[str]) -> Counter[str]:
    body = list(lines)
    while body and body[-1].split(None, 1)[0] in _PADDING:  # alignment padding after the last s_endpgm
        body.pop()
    mix: Counter[str] = Counter()
    for line in body:
        op = line.split(None, 1)[0] if line else ""
        if not op or op.startswith(("<", ";")) or op.endswith(":"):
            continue
        if op.startswith("v_dual_"):  # VOPD: two VALU operations in one encoding
            mix["valu"] += 2
            continue
        cls = amd_class(op)
        mix[cls] += 1
        if cls in _WIDTH_CLASSES:
            mix[f"{cls}.{_AMD_WIDTH.get(op.rsplit('_', 1)[-1], 'other')}"] += 1
    return mix


def nvidia_mix(opcodes: Iterable[str]) -> Counter[str]:
    """Opcodes with modifiers as SASS prints them (``LDG.E.128.CONSTANT``, ``HGMMA.64x128x16.F32.BF16``)."""
    mix: Counter[str] = Counter()
    for op in opcodes:
        cls = next((c for c, p in _NV if p.search(op)), "other")
        mix[cls] += 1
        if cls in ("ldg", "stg", "lds", "sts", "ldl_spill", "stl_spill"):
            m = _NV_WIDTH.search(op)
            mix[f"{cls}.b{_bits(m.group(1)) if m else 32}"] += 1
    return mix


def _bits(tok: str) -> int:
    return int(re.sub(r"[A-Z]", "", tok))


# The operand type a matrix instruction names, as kscope's roofline keys it (bf16, fp16, fp8, tf32, fp32,
# fp64, int8, fp4). NVIDIA SASS states it in modifiers (HGMMA.64x128x16.F32.BF16, HMMA.1684.F32.TF32,
# QGMMA...E4M3); a bare HMMA.<shape>.F32 or .F16 multiplies fp16. AMD states it in the mnemonic's last
# word (v_mfma_f32_32x32x8_bf16, v_mfma_f32_16x16x32_fp8_fp8, v_wmma_f32_16x16x16_f16, v_mfma_i32_..._i8).
_NV_MATRIX_TYPES = [
    ("fp8", re.compile(r"^(?:QGMMA|QMMA|UTCQMMA)|\.E4M3|\.E5M2")),
    ("fp4", re.compile(r"^(?:OMMA|UTCOMMA)|\.E2M1")),
    ("int8", re.compile(r"^(?:IGMMA|IMMA|UTCIMMA)|\.[SU]8(?:\.|$)")),
    ("fp64", re.compile(r"^DMMA")),
    ("tf32", re.compile(r"\.TF32(?:\.|$)")),
    ("bf16", re.compile(r"\.BF16(?:\.|$)")),
    ("fp16", re.compile(r"^(?:HGMMA|HMMA|UTCHMMA)")),
]
_AMD_MATRIX_TYPES = [  # CDNA1/2 glue the type to the shape (v_mfma_f32_32x32x8f16, ..._32x32x4bf16)
    ("fp8", re.compile(r"(?:fp8|bf8|f8f6f4)")),
    ("int8", re.compile(r"[_\d](?:i8|iu8|iu4)\b")),
    ("bf16", re.compile(r"[_\d]bf16")),
    ("fp16", re.compile(r"[_\d]f16\b")),
    ("tf32", re.compile(r"_xf32\b")),
    ("fp64", re.compile(r"^v_mfma_f64")),
    ("fp32", re.compile(r"x\d+f32\b")),
]


def matrix_dtype(opcodes: Iterable[str]) -> tuple[str, str] | None:
    """The operand type of a kernel's matrix instructions (the most frequent when several) and the evidence
    (``"HGMMA.64x128x16.F32.BF16, 96 of 96 matrix instructions"``); None when it has none."""
    counts: Counter[str] = Counter()
    example: dict[str, str] = {}
    total = 0
    for op in opcodes:
        amd = op.startswith(("v_mfma", "v_smfmac", "v_wmma", "v_swmmac"))
        if not amd and _NV_MATRIX.match(op) is None:
            continue
        total += 1
        table = _AMD_MATRIX_TYPES if amd else _NV_MATRIX_TYPES
        dtype = next((name for name, rx in table if rx.search(op)), None)
        if dtype is not None:
            counts[dtype] += 1
            example.setdefault(dtype, op)
    if not counts:
        return None
    dtype, n = counts.most_common(1)[0]
    return dtype, f"{example[dtype]}, {n} of {total} matrix instructions"
