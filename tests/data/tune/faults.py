"""A CPU stand-in kernel for kscope tune's tests: ``MODE`` picks how a candidate behaves (runs, segfaults,
hangs, exits, answers wrong, runs out of memory, refuses), ``BLOCK`` how fast it is; ``SLEEP`` (seconds)
makes every call of the set-up slow, to have sweeps that can be interrupted."""

import os
import signal
import time

import numpy as np

from kernelscope import Skip


def factory(config, shape):
    n, block, mode = shape["N"], config["BLOCK"], config.get("MODE", "ok")
    time.sleep(config.get("SLEEP", 0))
    if mode == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "skip":
        raise Skip("this block does not divide the row")
    if mode == "compile":
        raise RuntimeError("ptxas: too many resources requested")
    x = np.arange(n, dtype=np.float64)

    def fn():
        if mode == "hang":
            time.sleep(10_000)
        if mode == "exit":
            os._exit(7)
        if mode == "oom":
            raise MemoryError("cannot allocate 1 TiB")
        if mode == "wrong":
            return x * 3
        steps = 0
        for _ in range(0, n, block):  # fewer steps for a bigger block: the search has a real optimum
            steps += 1
        return x * 2

    return fn


def reference(shape):
    return np.arange(shape["N"], dtype=np.float64) * 2
