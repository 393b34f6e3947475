"""GPU candidates that fault, for bench/tune.py faults: an illegal memory access, a segfault, a kernel that
never ends, an allocation past the GPU's memory, a wrong answer, and a worker killed from outside while
it times; the good candidates around them must all finish."""

import os
import signal
import threading

import torch
import triton
import triton.language as tl


@triton.jit
def _copy(x, y, n, OFFSET: tl.constexpr, SPIN: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if SPIN:  # never ends; the store is a side effect, so the compiler may not delete the loop
        k = tl.load(x + 0)
        while k > -1.0:
            tl.store(y + 0, k)
            k = tl.load(y + 0) + 1.0
    tl.store(y + i + OFFSET, tl.load(x + i, mask=i < n) * 2, mask=i < n)


def factory(config, shape):
    n, mode, block = shape["N"], config["MODE"], config["BLOCK"]
    x = torch.arange(n, device="cuda", dtype=torch.float32)
    y = torch.full_like(x, float("nan"))
    if mode == "oom":
        torch.empty(1 << 40, device="cuda", dtype=torch.uint8)  # 1 TiB
    offset = 1 << 34 if mode == "illegal" else 0  # 64 GiB past the buffer

    def run():
        if mode == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        if mode == "killed":
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGKILL)).start()
        _copy[(triton.cdiv(n, block),)](x, y, n, OFFSET=offset, SPIN=mode == "hang", BLOCK=block)
        return y + (1 if mode == "wrong" else 0)

    return run


def reference(shape):
    return torch.arange(shape["N"], device="cuda", dtype=torch.float32) * 2
