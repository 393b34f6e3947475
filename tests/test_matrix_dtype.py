"""The matrix operand type, from the instructions themselves (issue 15 item 5): the roofline judges a
GEMM against its own type's matrix peak instead of assuming bf16. Ground truth: what the corpus README says
each real kernel computes (``mm_*``: a 256x256x64 fp16 GEMM; ``mm_k``: a 4096³ bf16 GEMM)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope import api
from kernelscope.analyses.roofline import from_measured
from kernelscope.api._code import gpu_peaks
from kernelscope.codeobj.mix import matrix_dtype, sass_opcode

DATA = Path(__file__).parent / "data"
CODEOBJ = DATA / "codeobj"


@pytest.mark.parametrize(
    ("op", "want"),
    [
        ("HGMMA.64x128x16.F32.BF16", "bf16"),
        ("HGMMA.64x256x16.F32", "fp16"),  # no type modifier: fp16 operands
        ("HMMA.16816.F32.BF16", "bf16"),
        ("HMMA.16816.F16", "fp16"),
        ("HMMA.1684.F32.TF32", "tf32"),
        ("QGMMA.64x128x32.F32.E4M3.E4M3", "fp8"),
        ("IMMA.16832.S8.S8", "int8"),
        ("DMMA.884", "fp64"),
        ("v_mfma_f32_32x32x8_bf16", "bf16"),
        ("v_mfma_f32_32x32x8f16", "fp16"),  # CDNA1/2 glue the type to the shape
        ("v_mfma_f32_32x32x4bf16", "bf16"),
        ("v_mfma_f32_32x32x8bf16_1k", "bf16"),
        ("v_mfma_f32_16x16x32_fp8_fp8", "fp8"),
        ("v_mfma_scale_f32_32x32x64_f8f6f4", "fp8"),
        ("v_mfma_f32_16x16x8_xf32", "tf32"),
        ("v_mfma_f32_32x32x2f32", "fp32"),
        ("v_mfma_f64_16x16x4f64", "fp64"),
        ("v_mfma_i32_32x32x8i8", "int8"),
        ("v_wmma_f32_16x16x16_f16", "fp16"),
        ("v_wmma_i32_16x16x16_iu8", "int8"),
    ],
)
def test_each_matrix_instruction_names_its_type(op: str, want: str) -> None:
    found = matrix_dtype([op, "FFMA" if op[0].isupper() else "v_add_f32"])
    assert found is not None and found[0] == want and found[1] == f"{op}, 1 of 1 matrix instructions"


def test_no_matrix_instruction_no_type_and_the_majority_wins() -> None:
    assert matrix_dtype(["FFMA", "LDG.E.128", "v_add_f32"]) is None
    assert matrix_dtype(["v_mfma_f32_32x32x8_f16"] * 2 + ["v_mfma_f32_32x32x8_bf16"]) == (
        "fp16",
        "v_mfma_f32_32x32x8_f16, 2 of 3 matrix instructions",
    )
    assert sass_opcode("@!P0 HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8].tnspB, R24") == "HGMMA.64x128x16.F32.BF16"


def test_real_code_objects_name_the_type_the_kernel_computes() -> None:
    types = {
        o.path.split("/")[-1]: k.matrix_dtype
        for o in api.isa(
            [
                CODEOBJ / n
                for n in ("mm_gfx942.hsaco", "mm_sm90.cubin", "h100_triton_mm_k_sm90a.cubin", "softmax_gfx942.hsaco")
            ]
        )
        for k in o.kernels
    }
    assert types == {
        "mm_gfx942.hsaco": "fp16",
        "mm_sm90.cubin": "fp16",
        "h100_triton_mm_k_sm90a.cubin": "bf16",
        "softmax_gfx942.hsaco": None,
    }


def test_the_ncu_roofline_judges_a_gemm_at_its_own_type() -> None:
    pytest.importorskip("ncu_report")
    rep = DATA / "ncu" / "h100_triton_softmax_mm.ncu-rep"
    points = {p.label: p for p in api.roofline(rep).points}
    mm = points["mm_k"]
    assert mm.dtype == "bf16" and "from its SASS/ISA: HGMMA.64x128x16.F32.BF16" in (mm.note or "")
    assert points["softmax_k"].dtype == "fp32"  # no matrix work: the vector roof
    given = {p.label: p for p in api.roofline(rep, dtype="fp16").points}["mm_k"]
    assert given.dtype == "fp16" and "(given)" in (given.note or "")
    assert given.peak_tflops == mm.peak_tflops  # H100: fp16 and bf16 dense matrix peaks are the same
    # counters without SASS (a CSV export): bf16, and the note says it is assumed
    (unread,) = from_measured([("k", 1e12, 1e12, 1e9, 1e6)], gpu_peaks("H100 SXM", None, None), None).points
    assert unread.dtype == "bf16" and "assumed" in (unread.note or "")
