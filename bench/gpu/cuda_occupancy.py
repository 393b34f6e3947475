"""Ground truth for kscope's NVIDIA occupancy: the CUDA driver's own occupancy API on the GPU.

Loads each cubin given (corpus Triton kernels), reads the driver's function attributes (registers,
static shared, local) and asks cuOccupancyMaxActiveBlocksPerMultiprocessor for a sweep of block sizes
and dynamic shared memory sizes (dynamic shared above 48 KiB is opted in first, as Triton does).
Writes JSON: device, driver, attributes, and one row per (kernel, block, dynamic shared) -> blocks/SM.
Usage (on the GPU): python bench/gpu/cuda_occupancy.py OUT.json CUBIN...
"""

from __future__ import annotations

import ctypes
import json
import sys
import time
from pathlib import Path

import torch

torch.cuda.init()
torch.zeros(1, device="cuda")  # a primary context the driver calls below run in
cuda = ctypes.CDLL("libcuda.so.1")


def check(rc: int, what: str) -> None:
    if rc != 0:
        msg = ctypes.c_char_p()
        cuda.cuGetErrorString(rc, ctypes.byref(msg))
        raise RuntimeError(f"{what}: {rc} {msg.value.decode() if msg.value else ''}")


ATTR = {"registers": 4, "static_shared": 1, "local": 3, "max_threads": 0, "max_dynamic_shared": 8}
SET_MAX_DYNAMIC = 8


def main() -> None:
    out_path, cubins = Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]
    ver = ctypes.c_int()
    cuda.cuDriverGetVersion(ctypes.byref(ver))
    doc = {
        "device": torch.cuda.get_device_name(),
        "capability": list(torch.cuda.get_device_capability()),
        "driver": ver.value,
        "date": time.strftime("%Y-%m-%d"),
        "kernels": [],
    }
    for cubin in cubins:
        mod = ctypes.c_void_p()
        check(cuda.cuModuleLoadData(ctypes.byref(mod), cubin.read_bytes()), f"load {cubin}")
        # the single kernel symbol: try the file's kernel names
        for name in sys_names(cubin):
            fn = ctypes.c_void_p()
            if cuda.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()) != 0:
                continue
            attrs = {}
            for key, code in ATTR.items():
                v = ctypes.c_int()
                check(cuda.cuFuncGetAttribute(ctypes.byref(v), code, fn), key)
                attrs[key] = v.value
            rows = []
            for dyn in (0, 32, 16384, 49152, 65536, 98304, 131072, 200704):
                if dyn > 48 * 1024 and cuda.cuFuncSetAttribute(fn, SET_MAX_DYNAMIC, dyn) != 0:
                    continue
                for block in (32, 64, 96, 128, 256, 384, 512, 768, 1024):
                    if block > attrs["max_threads"]:
                        continue
                    n = ctypes.c_int()
                    if (
                        cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                            ctypes.byref(n), fn, block, ctypes.c_size_t(dyn)
                        )
                        == 0
                    ):
                        rows.append({"block": block, "dynamic_shared": dyn, "blocks_per_sm": n.value})
            doc["kernels"].append({"cubin": cubin.name, "name": name, "attributes": attrs, "occupancy": rows})
    out_path.write_text(json.dumps(doc, indent=1))
    print(json.dumps({k: v for k, v in doc.items() if k != "kernels"}), len(doc["kernels"]), "kernels")


def sys_names(cubin: Path) -> list[str]:
    import re

    data = cubin.read_bytes()
    return sorted({m.decode() for m in re.findall(rb"\.text\.([A-Za-z_][A-Za-z0-9_]*)\x00", data)})


if __name__ == "__main__":
    main()
