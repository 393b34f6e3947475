"""Measured hardware ceilings on the present GPU: memory bandwidth and dense matrix throughput.

Bandwidth is measured with kscope's own Triton streaming kernels (copy: read+write; read-only: a
blocked sum) on buffers far above L2, and compared in the same run with ``torch`` (``copy_``,
``sum``). Matrix throughput is the best of a shape sweep through the vendor BLAS (``torch.matmul``;
fp8 through ``torch._scaled_mm``), compared with ``torch.matmul`` at 8192^3. Every figure is the
median of timed repeats after warm-up, through ``kernelscope.timing``. Needs torch with a GPU, and triton.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import msgspec

from kernelscope.errors import InputError, MissingToolError
from kernelscope.timing import bench

CEILINGS_SCHEMA = "kernelscope.ceilings.v1"


class Ceiling(msgspec.Struct, kw_only=True):
    what: str  # copy_gbs | read_gbs | bf16_tflops | ...
    value: float  # kscope's measurement
    peer: float | None = None  # the same quantity through torch in the same run
    peer_method: str = ""
    method: str = ""
    detail: dict[str, Any] = msgspec.field(default_factory=dict)


class CeilingProfile(msgspec.Struct, kw_only=True):
    device: str
    capability: str
    driver: str
    torch: str
    triton: str | None
    date: str
    ceilings: list[Ceiling]
    schema: str = CEILINGS_SCHEMA


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise MissingToolError(
            "torch", "kscope ceilings measures through PyTorch on a GPU: pip install torch"
        ) from None
    if not torch.cuda.is_available():
        raise InputError("no GPU: kscope ceilings measures the present GPU (torch.cuda.is_available() is False)")
    return torch


def _time(fn: Callable[[], object], repeats: int) -> float:
    """Median seconds of ``fn`` over ``repeats`` calls, timed by kscope's one engine (``timing.bench``:
    device events with a spin kernel ahead of each, so host launch time is not counted; warm caches)."""
    return bench(fn, mode="hot", warmup_ms=0.0, calls=repeats).summary.median / 1e6


def bandwidth(torch: Any, gib: float, repeats: int) -> list[Ceiling]:
    import triton

    from kernelscope.ceilings.kernels import copy_kernel, read_kernel

    n = int(gib * 2**30) // 4
    src = torch.empty(n, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    out: list[Ceiling] = []
    best_copy = (0.0, 0)
    for block in (2048, 4096, 8192):
        grid = (triton.cdiv(n, block),)

        def run_copy(b: int = block, g: tuple[int] = grid) -> object:
            return copy_kernel[g](src, dst, n, BLOCK=b, num_warps=8)

        t = _time(run_copy, repeats)
        best_copy = max(best_copy, (2 * n * 4 / t / 1e9, block))
    assert torch.equal(src, dst), "copy kernel wrote wrong data"
    peer = 2 * n * 4 / _time(lambda: dst.copy_(src), repeats) / 1e9
    out.append(
        Ceiling(
            what="copy_gbs",
            value=best_copy[0],
            peer=peer,
            peer_method="torch Tensor.copy_",
            method=f"Triton streaming copy, BLOCK={best_copy[1]}, fp32, {gib:g} GiB per buffer",
            detail={"bytes_moved": 2 * n * 4},
        )
    )
    best_read = (0.0, 0)
    per = 8
    for block in (1024, 2048, 4096):
        progs = triton.cdiv(n, block * per)
        part = torch.empty(progs, dtype=torch.float32, device="cuda")

        def run(b: int = block, p: Any = part, g: tuple[int] = (progs,)) -> object:
            return read_kernel[g](src, p, n, BLOCK=b, PER=per, num_warps=8)

        t = _time(run, repeats)
        best_read = max(best_read, (n * 4 / t / 1e9, block))
    check = float(part.sum()) / float(src.sum())
    peer = n * 4 / _time(src.sum, repeats) / 1e9
    out.append(
        Ceiling(
            what="read_gbs",
            value=best_read[0],
            peer=peer,
            peer_method="torch Tensor.sum",
            method=f"Triton blocked sum, BLOCK={best_read[1]}x{per}, fp32, {gib:g} GiB",
            detail={"bytes_read": n * 4, "sum_ratio_vs_torch": round(check, 6)},
        )
    )
    return out


def _matmul(torch: Any, dtype: str, m: int) -> Callable[[], object] | None:
    if dtype == "fp8":
        if not hasattr(torch, "float8_e4m3fn") or torch.cuda.get_device_capability() < (8, 9):
            return None
        a = torch.randn(m, m, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(m, m, device="cuda").to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm needs
        one = torch.ones((), device="cuda")
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}[dtype]
    a, b = torch.randn(m, m, device="cuda", dtype=dt), torch.randn(m, m, device="cuda", dtype=dt)
    return lambda: torch.matmul(a, b)


def matrix(torch: Any, repeats: int, sizes: tuple[int, ...]) -> list[Ceiling]:
    out = []
    torch.backends.cuda.matmul.allow_tf32 = True
    for dtype in ("bf16", "fp16", "tf32", "fp8"):
        results = {}
        for m in sizes:
            fn = _matmul(torch, dtype, m)
            if fn is None:
                break
            results[m] = 2 * m**3 / _time(fn, repeats) / 1e12
            del fn
            torch.cuda.empty_cache()
        if not results:
            continue
        best = max(results, key=results.__getitem__)
        peer_fn = _matmul(torch, dtype, 8192)
        peer = 2 * 8192**3 / _time(peer_fn, repeats) / 1e12 if peer_fn else None
        out.append(
            Ceiling(
                what=f"{dtype}_tflops",
                value=results[best],
                peer=peer,
                peer_method="torch.matmul 8192^3" if dtype != "fp8" else "torch._scaled_mm 8192^3",
                method=f"best of square GEMMs {sorted(results)} through the vendor BLAS",
                detail={"by_size": {str(k): round(v, 1) for k, v in results.items()}, "best_size": best},
            )
        )
    return out


def _driver() -> str:
    """The CUDA driver version as the driver reports it (e.g. 13000), or the HIP runtime's."""
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1")
        v = ctypes.c_int()
        lib.cuDriverGetVersion(ctypes.byref(v))
        return f"CUDA driver {v.value // 1000}.{v.value % 1000 // 10}"
    except OSError:
        return "unknown"


def measure(gib: float = 2.0, repeats: int = 20, sizes: tuple[int, ...] = (4096, 8192, 12288, 16384)) -> CeilingProfile:
    torch = _torch()
    try:
        import triton

        triton_version: str | None = triton.__version__
    except ImportError:
        raise MissingToolError("triton", "kscope ceilings' bandwidth kernels are Triton: pip install triton") from None
    cap = torch.cuda.get_device_capability()
    ceilings = bandwidth(torch, gib, repeats)
    torch.cuda.empty_cache()  # the bandwidth buffers are gone with bandwidth()'s frame
    ceilings += matrix(torch, repeats, sizes)
    return CeilingProfile(
        device=torch.cuda.get_device_name(),
        capability=f"{cap[0]}.{cap[1]}",
        driver=_driver(),
        torch=str(torch.__version__),
        triton=triton_version,
        date=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        ceilings=ceilings,
    )
