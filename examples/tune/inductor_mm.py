"""A ``kscope tune`` factory for NVIDIA GEMMs: Inductor's GEMM autotuning per recorded shape.

TunableOp offers only cuBLAS's ``Default`` on CUDA, so the search that can win there is Inductor's:
``torch.compile(mode="max-autotune-no-cudagraphs")`` benchmarks its Triton GEMM templates and cuBLAS and
keeps the fastest. The tuned param is ``backends`` (Inductor's ``max_autotune_gemm_backends``): ``ATEN``
is cuBLAS alone (what eager runs, the incumbent), ``TRITON`` the templates alone, ``ATEN,TRITON`` the best
of both. The shapes are those ``kscope tune --tunableop`` recorded (``gemm_shape``: op, M, N, K, batch,
dtype, layout in torch's terms), written with ``inductor_mm_space.yaml``'s params to ``inductor_space.yaml``.

    kscope tune examples/tune/inductor_mm.py:factory --reference examples/tune/inductor_mm.py:reference \
        --space examples/tune/inductor_mm_space.yaml --device cuda

Compilation and Inductor's own autotuning happen in ``factory``, outside the timed calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

DTYPES = {"float32": torch.float32, "tf32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def _operand(rows: int, cols: int, transposed: bool, batch: int, dtype: torch.dtype) -> torch.Tensor:
    """A ``rows x cols`` operand (per batch), stored transposed when the recorded layout says so."""
    lead = (batch,) if batch > 1 else ()
    if transposed:
        return torch.randn(*lead, cols, rows, device="cuda", dtype=dtype).transpose(-1, -2)
    return torch.randn(*lead, rows, cols, device="cuda", dtype=dtype)


def _inputs(shape: dict[str, Any]) -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)  # the reference and every candidate see the same operands
    torch.backends.cuda.matmul.allow_tf32 = shape["dtype"] == "tf32"
    dtype, batch, layout = DTYPES[shape["dtype"]], int(shape["batch"]), str(shape["layout"])
    a = _operand(shape["M"], shape["K"], layout[0] == "T", batch, dtype)
    b = _operand(shape["K"], shape["N"], layout[1] == "T", batch, dtype)
    if shape["op"] == "addmm":
        return torch.addmm, (torch.randn(shape["N"], device="cuda", dtype=dtype), a, b)
    return (torch.bmm if shape["op"] == "bmm" else torch.mm), (a, b)


def factory(config: dict[str, Any], shape: dict[str, Any]) -> Callable[[], torch.Tensor]:
    import torch._dynamo
    import torch._inductor.config as inductor

    op, args = _inputs(shape)
    torch._dynamo.reset()  # a fresh compile per candidate: the previous backends' choice must not be reused
    compiled = torch.compile(op, mode="max-autotune-no-cudagraphs", dynamic=False, fullgraph=True)
    with inductor.patch(max_autotune_gemm_backends=config["backends"]):
        compiled(*args)  # compile and autotune now, under this candidate's backends
    return lambda: compiled(*args)


def reference(shape: dict[str, Any]) -> torch.Tensor:
    op, args = _inputs(shape)
    return op(*args)
