#!/usr/bin/env bash
# A JAX XPlane from two NVIDIA GPUs of one process, for kscope's module ranges (readers/xplane.py: each run of a
# compiled module is a host range named by the module) to be checked where runs could overlap: a jitted GEMM block
# committed to GPU 0, a jitted elementwise scan committed to GPU 1, and one SPMD module sharded over both (XLA runs
# its per-GPU parts from a thread per GPU), issued back to back without waiting, five steps, under
# jax.profiler.trace (create_perfetto_trace=True: XLA's own Chrome trace stamps each kernel with its hlo_module).
# Usage (repository root, on a machine with two GPUs):  OUT=/some/folder bash bench/gpu/jax_two_gpus.sh
# $OUT gets jax_two_gpus.xplane.pb, jax_two_gpus.perfetto.trace.json.gz and log.txt. Under a minute.
set -uo pipefail
: "${OUT:?set OUT to the folder for the results}"
export PYTHONUNBUFFERED=1
python3 - "$OUT" <<'PY' 2>&1 | tee "$OUT/log.txt"
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

out = sys.argv[1]
d0, d1 = jax.devices()[:2]
print("jax", jax.__version__, jax.devices())


@jax.jit
def gemm_block(x, w):
    return jax.nn.gelu(x @ w) @ w.T


@jax.jit
def scan_block(y):
    return jnp.cumsum(jnp.sin(y) * 2.0, axis=0).sum(0)


@jax.jit
def spmd_block(z):
    return jnp.tanh(z @ z.T).sum(-1)


rng = np.random.default_rng(0)
x = jax.device_put(jnp.asarray(rng.standard_normal((4096, 4096), dtype=np.float32), jnp.bfloat16), d0)
w = jax.device_put(jnp.asarray(rng.standard_normal((4096, 4096), dtype=np.float32), jnp.bfloat16), d0)
y = jax.device_put(jnp.asarray(rng.standard_normal((8192, 4096), dtype=np.float32)), d1)
mesh = Mesh(np.array([d0, d1]), ("d",))
z = jax.device_put(jnp.asarray(rng.standard_normal((8192, 2048), dtype=np.float32), jnp.bfloat16),
                   NamedSharding(mesh, PartitionSpec("d", None)))


def step():
    return gemm_block(x, w), scan_block(y), spmd_block(z)  # queued, not waited for


for _ in range(3):
    jax.block_until_ready(step())
with jax.profiler.trace(f"{out}/jaxprof", create_perfetto_trace=True):
    results = [step() for _ in range(5)]
    jax.block_until_ready(results)
PY
bash "$(dirname "$0")/jax_keep_capture.sh" "$OUT" jax_two_gpus | tee -a "$OUT/log.txt"
