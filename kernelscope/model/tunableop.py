"""Typed records of PyTorch TunableOp files and of ``kscope tune --tunableop``.

A TunableOp results file (``aten/src/ATen/cuda/tunable``) is ``Validator,KEY,VALUE`` lines — the build that
produced it: ``PT_VERSION`` always, plus ``HIP_VERSION``/``ROCM_VERSION``, ``GCN_ARCH_NAME``,
``ROCBLAS_VERSION``, ``HIPBLASLT_VERSION`` on ROCm — then one line per tuned GEMM:
``OpSignature,ParamSignature,SolutionName,TimeMs``. With ``PYTORCH_TUNABLEOP_BLAS_LOG=1`` (torch 2.7+) a
fifth field ``BLAS_PARAMS: - { function: matmul, M: .., ... }`` follows, itself holding commas. An untuned
file (record mode) has no validators and two fields, ``OpSignature,ParamSignature`` (plus ``BLAS_PARAMS``).
"""

from __future__ import annotations

import msgspec

from kernelscope.model.stats import Comparison
from kernelscope.model.tune import Params

TUNABLEOP_SCHEMA = "kernelscope.tunableop.v1"
DEFAULT_SOLUTION = "Default"  # TunableOp's name for the untuned library call (cuBLAS / rocBLAS default)


class Gemm(msgspec.Struct, frozen=True, kw_only=True):
    """One GEMM as TunableOp names it: ``GemmTunableOp_BFloat16_TN`` and ``tn_4096_1024_512_ld_...``."""

    op: str
    params: str
    blas: str = ""  # the BLAS_PARAMS field, when PYTORCH_TUNABLEOP_BLAS_LOG=1 wrote one

    @property
    def key(self) -> tuple[str, str]:
        return self.op, self.params


class Solution(msgspec.Struct, frozen=True, kw_only=True):
    """A results line: the GEMM, the solution TunableOp chose for it and its mean time (ms; None if absent)."""

    gemm: Gemm
    solution: str
    time_ms: float | None = None


class Results(msgspec.Struct, kw_only=True):
    """A TunableOp results file: the validators of the build that wrote it, then its solutions."""

    validators: dict[str, str]
    solutions: list[Solution]


class TunedGemm(msgspec.Struct, kw_only=True):
    """One recorded GEMM after offline tuning. ``alternatives``: whether TunableOp had any solution other than
    ``Default`` to try for it (False on CUDA builds, which register only ``Default``); ``shape`` is the GEMM in
    torch's row-major terms (``gemm_shape``), None for the ops no Inductor template covers."""

    gemm: Gemm
    shape: Params | None
    solution: str | None  # None: not tuned (its worker crashed or TunableOp skipped it offline)
    time_ms: float | None = None
    alternatives: bool = False
    worker: str = ""


class WorkerRun(msgspec.Struct, kw_only=True):
    """One tuning process: its GPU, how many GEMMs it had, how it ended (``detail``: its stderr tail)."""

    name: str
    gpu: str
    gemms: int
    returncode: int | None
    timed_out: bool
    wall_s: float
    tuned: int = 0
    detail: str = ""


class AB(msgspec.Struct, kw_only=True):
    """The workload without (``baseline``) and with (``tuned``) the results file, interleaved runs;
    ``metric`` is the reported KSCOPE_METRIC or ``wall_s``; ``comparison`` is tuned vs baseline."""

    metric: str
    baseline: list[float]
    tuned: list[float]
    comparison: Comparison | None = None
    skipped: str = ""  # why no A/B ran


class TunableOpResult(msgspec.Struct, kw_only=True):
    """``kscope tune --tunableop --json``. ``env`` is what a workload sets to use ``results_path``."""

    command: list[str]
    untuned_files: list[str]
    gemms: list[TunedGemm]
    workers: list[WorkerRun]
    validators: dict[str, str] = {}
    results_path: str | None = None
    env: dict[str, str] = {}
    ab: AB | None = None
    inductor_shapes: list[Params] = []
    inductor_space: str | None = None
    notes: list[str] = []
    wall_s: float = 0.0
    schema: str = TUNABLEOP_SCHEMA
