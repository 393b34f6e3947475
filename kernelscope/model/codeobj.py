"""What a GPU code object says about its kernels: resources, instruction mix, occupancy; and the ISA fit
view built from them (``analyses/fit.py``).

One record shape for both vendors; fields that one vendor's binaries do not carry are ``None``
(AMD: VGPR/SGPR/AGPR counts, LDS, scratch, wave size; NVIDIA: registers, shared, local, stack).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from kernelscope.model.frames import Tabular, records

CodeVendor = Literal["amd", "nvidia"]


class Occupancy(msgspec.Struct, kw_only=True):
    """Resident waves (AMD, per SIMD) or warps (NVIDIA, per SM) for one block size, and what limits them.

    ``limits`` maps each resource to the waves/warps it alone would allow (None: not limiting);
    ``limiter`` is the smallest. ``assumptions`` says where the block size and dynamic shared
    memory came from (option, Triton metadata, kernel metadata).
    """

    block_size: int
    dynamic_shared_bytes: int
    waves_per_simd: int | None = None  # AMD
    warps_per_sm: int | None = None  # NVIDIA
    blocks_per_cu: int  # workgroups per CU / blocks per SM
    max_per_unit: int  # the architecture's ceiling for the same unit
    pct: float  # of max_per_unit
    limiter: str
    limits: dict[str, int | None] = msgspec.field(default_factory=dict)
    assumptions: list[str] = msgspec.field(default_factory=list)

    @property
    def per_unit(self) -> str:
        """``4 waves/SIMD`` (AMD) or ``32 warps/SM`` (NVIDIA)."""
        return (
            f"{self.waves_per_simd} waves/SIMD" if self.waves_per_simd is not None else f"{self.warps_per_sm} warps/SM"
        )


class KernelCode(msgspec.Struct, kw_only=True):
    name: str
    arch: str
    vendor: CodeVendor
    # AMD (amdhsa metadata note)
    vgpr: int | None = None  # .vgpr_count: on gfx90a+ the unified total, AGPRs included
    arch_vgpr: int | None = None  # vgpr - agpr where the file is unified
    agpr: int | None = None
    sgpr: int | None = None
    vgpr_spill: int | None = None
    sgpr_spill: int | None = None
    lds_bytes: int | None = None  # static group segment
    scratch_bytes: int | None = None  # private segment per work-item
    wave_size: int | None = None
    max_workgroup_size: int | None = None
    kernarg_bytes: int | None = None
    dynamic_stack: bool | None = None
    # NVIDIA (cuobjdump --dump-resource-usage)
    registers: int | None = None
    shared_bytes: int | None = None  # static shared memory
    local_bytes: int | None = None
    stack_bytes: int | None = None
    constant_bytes: dict[str, int] = msgspec.field(default_factory=dict)
    # both
    instructions: int | None = None
    mix: dict[str, int] = msgspec.field(default_factory=dict)
    matrix_dtype: str | None = None  # the operand type its matrix instructions name (bf16, fp16, fp8, ...)
    matrix_dtype_evidence: str | None = None  # the instruction, and how many of the matrix ones name it
    occupancy: Occupancy | None = None
    metadata: dict[str, object] = msgspec.field(default_factory=dict)  # e.g. Triton's num_warps, shared


class CodeObject(msgspec.Struct, Tabular, kw_only=True):
    path: str
    format: str  # hsaco | offload-bundle | cubin | fatbin | elf-with-fatbin
    vendor: CodeVendor
    arch: str
    target: str | None = None  # full target id, e.g. amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-
    kernels: list[KernelCode] = msgspec.field(default_factory=list)
    disassembler: str | None = None  # tool and version that produced the mix
    notes: list[str] = msgspec.field(default_factory=list)  # e.g. why no instruction mix

    def _rows(self) -> list[dict[str, Any]]:
        """One row per kernel, with the code object's path, architecture and vendor."""
        return records(self.kernels, path=self.path, arch=self.arch, vendor=self.vendor)


class CodeObjects(msgspec.Struct, kw_only=True):
    """``kscope isa --json``: every code object read."""

    schema: str = "kernelscope.isa.v1"
    objects: list[CodeObject]


# --- the fit view: kernelscope.fit.v1 ------------------------------------------------------------------


class Gauge(msgspec.Struct, kw_only=True):
    label: str
    used: float
    limit: float | None  # None: the architecture's limit is UNKNOWN
    unit: str = ""


class KernelFit(msgspec.Struct, kw_only=True):
    name: str
    arch: str
    vendor: str
    gauges: list[Gauge]
    mix: dict[str, float]  # class -> share of instructions, percent
    matrix_share: float | None  # percent of instructions on the matrix units
    limiter: str | None
    readout: list[str]  # "left on the table", most important first


class FitReport(msgspec.Struct, kw_only=True):
    kernels: list[KernelFit]
    schema: str = "kernelscope.fit.v1"


# --- fit side by side: kernelscope.fit-compare.v1 ------------------------------------------------------


class FitInput(msgspec.Struct, kw_only=True):
    """One column of the comparison: a code object (a fat binary gives one per architecture)."""

    path: str
    arch: str
    vendor: str
    notes: list[str] = msgspec.field(default_factory=list)  # e.g. why this column has no instruction mix


class FitColumn(msgspec.Struct, kw_only=True):
    """One kernel in one input: its fit view, plus the counts the fit gauges fold together (spills,
    static/dynamic LDS or shared, scratch/local), copied from the code object, never recomputed."""

    fit: KernelFit
    occupancy: Occupancy | None
    resources: dict[str, int]


class KernelComparison(msgspec.Struct, kw_only=True):
    name: str
    columns: list[FitColumn | None]  # one per input, in input order; None: no such kernel there


class FitComparison(msgspec.Struct, kw_only=True):
    inputs: list[FitInput]
    kernels: list[KernelComparison]
    schema: str = "kernelscope.fit-compare.v1"
