"""The Triton tutorial's matmul (03-matrix-multiplication: grouped tile order, fp16 in, fp32 accumulate)
with an autotune space of 100+ configs, in the three forms ``kscope tune`` takes:

- ``kscope tune examples/tune/matmul.py:matmul_kernel --launch examples/tune/matmul.py:launch
  --reference examples/tune/matmul.py:reference --shape M=4096,N=4096,K=4096`` — the ``@triton.autotune``
  kernel: its configs are the space, ``launch(shape)`` gives the grid and arguments;
- ``kscope tune examples/tune/matmul.py:factory --space examples/tune/matmul_space.yaml
  --reference examples/tune/matmul.py:reference`` — the same search as a factory and a space file;
- ``bench/tune.py`` times both against Triton's own autotuner and a vLLM-style tuning script.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import triton
import triton.language as tl

if TYPE_CHECKING:
    import torch

SMEM_BYTES = 227 * 1024  # H100 (sm_90) dynamic shared memory per block, CUDA programming guide table 21


def space() -> list[dict[str, int]]:
    """BLOCK_M x BLOCK_N x BLOCK_K x warps x stages, without tile sets whose pipelined operands cannot fit
    in shared memory (fp16: 2 bytes, one A and one B tile per stage)."""
    out = []
    for bm, bn, bk, warps, stages in itertools.product(
        [16, 32, 64, 128, 256], [64, 128, 256], [32, 64], [4, 8], [3, 4]
    ):
        if (bm + bn) * bk * 2 * stages <= SMEM_BYTES and not (bm == 256 and bn == 256 and warps == 4):
            out.append(
                {
                    "BLOCK_SIZE_M": bm,
                    "BLOCK_SIZE_N": bn,
                    "BLOCK_SIZE_K": bk,
                    "GROUP_SIZE_M": 8,
                    "num_warps": warps,
                    "num_stages": stages,
                }
            )
    return out


def _configs() -> list[triton.Config]:
    return [
        triton.Config({k: v for k, v in c.items() if k.isupper()}, num_warps=c["num_warps"], num_stages=c["num_stages"])
        for c in space()
    ]


@triton.jit
def _matmul(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_SIZE_M: tl.constexpr,
    BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


matmul_kernel = triton.autotune(configs=_configs(), key=["M", "N", "K"])(_matmul)


def _operands(shape: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    import torch  # here, not above: the kernel itself is read without torch (tests/data/tune/matmul_autotune.py)

    g = torch.Generator(device="cuda").manual_seed(0)
    m, n, k = shape["M"], shape["N"], shape["K"]
    a = torch.randn((m, k), device="cuda", dtype=torch.float16, generator=g)
    b = torch.randn((k, n), device="cuda", dtype=torch.float16, generator=g)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)  # NaN: an unwritten tile shows
    return a, b, c


def _grid(m: int, n: int) -> Any:
    return lambda meta: (triton.cdiv(m, meta["BLOCK_SIZE_M"]) * triton.cdiv(n, meta["BLOCK_SIZE_N"]),)


def launch(shape: dict[str, Any]) -> dict[str, Any]:
    """For ``kscope tune ...:matmul_kernel --launch ...:launch``: the grid and arguments of one shape."""
    a, b, c = _operands(shape)
    m, n, k = shape["M"], shape["N"], shape["K"]
    args = [a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1)]
    return {"grid": _grid(m, n), "args": args, "output": c}


def factory(config: dict[str, Any], shape: dict[str, Any]) -> Any:
    """For ``kscope tune ...:factory --space``: compile and return the launch of one config."""
    a, b, c = _operands(shape)
    m, n, k = shape["M"], shape["N"], shape["K"]
    meta = {k_: v for k_, v in config.items() if k_.isupper()}
    grid = _grid(m, n)

    def run() -> torch.Tensor:
        _matmul[grid](
            a,
            b,
            c,
            m,
            n,
            k,
            a.stride(0),
            a.stride(1),
            b.stride(0),
            b.stride(1),
            c.stride(0),
            c.stride(1),
            **meta,
            num_warps=config["num_warps"],
            num_stages=config["num_stages"],
        )
        return c

    return run


def reference(shape: dict[str, Any]) -> torch.Tensor:
    a, b, _ = _operands(shape)
    return (a.float() @ b.float()).half()
