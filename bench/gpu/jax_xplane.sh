#!/usr/bin/env bash
# A JAX XPlane from an NVIDIA GPU, for kscope's XPlane reader (readers/xplane.py) to be checked against XLA's own
# trace converter: a jitted bf16 block (two GEMMs, GELU, a norm, softmax attention) and a conv, five steps each,
# with a host-to-device copy before and a device-to-host copy after the step (every 50th of a longer run), under
# jax.profiler.trace (create_perfetto_trace=True: XLA also writes its own Chrome trace of the same capture).
# Usage (repository root, on the GPU machine):  OUT=/some/folder [STEPS=5] [STEP_MARKS=1] bash bench/gpu/jax_xplane.sh
# (STEP_MARKS=1: each step inside jax.profiler.StepTraceAnnotation("train", step_num=i), as training loops mark them)
# $OUT gets h200_jax.xplane.pb, h200_jax.perfetto.trace.json.gz and log.txt (with STEPS over 5, the capture is
# gzipped: h200_jax.xplane.pb.gz, for bench/xplane.py). Under a minute on an H200 for 5 steps.
set -uo pipefail
: "${OUT:?set OUT to the folder for the results}"
export PYTHONUNBUFFERED=1
python3 - "$OUT" "${STEPS:-5}" <<'PY' 2>&1 | tee "$OUT/log.txt"
import os
import sys
from contextlib import nullcontext

import jax
import jax.numpy as jnp
import numpy as np

out, steps = sys.argv[1], int(sys.argv[2])
print("jax", jax.__version__, jax.devices())


@jax.jit
def block(x, w1, w2, g):
    h = jax.nn.gelu(x @ w1) @ w2
    m = h.mean(-1, keepdims=True)
    h = (h - m) * jax.lax.rsqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5) * g
    return jax.nn.softmax(h @ h.T / 64.0, axis=-1) @ h


@jax.jit
def conv(img, k):
    return jax.lax.conv_general_dilated(img, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


rng = np.random.default_rng(0)
x_host = rng.standard_normal((4096, 2048), dtype=np.float32)
w1 = jnp.asarray(rng.standard_normal((2048, 8192), dtype=np.float32), dtype=jnp.bfloat16)
w2 = jnp.asarray(rng.standard_normal((8192, 2048), dtype=np.float32), dtype=jnp.bfloat16)
g = jnp.ones((2048,), jnp.bfloat16)
img_host = rng.standard_normal((16, 128, 128, 64), dtype=np.float32)
k = jnp.asarray(rng.standard_normal((3, 3, 64, 128), dtype=np.float32), dtype=jnp.bfloat16)


x_dev = jnp.asarray(x_host, dtype=jnp.bfloat16)
img_dev = jnp.asarray(img_host, dtype=jnp.bfloat16)


def step(copies: bool) -> float:
    x = jnp.asarray(x_host, dtype=jnp.bfloat16) if copies else x_dev  # host-to-device copy
    img = jnp.asarray(img_host, dtype=jnp.bfloat16) if copies else img_dev
    y, c = block(x, w1, w2, g), conv(img, k)
    return float(np.asarray(y[0, 0])) + (float(np.asarray(c).sum()) if copies else 0.0)  # device-to-host copies


for _ in range(3):
    step(True)
options = None
if steps > 5:  # a long capture: GPU work and runtime calls, no Python frames
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
with jax.profiler.trace(f"{out}/jaxprof", create_perfetto_trace=steps <= 5, profiler_options=options):
    for i in range(steps):
        with jax.profiler.StepTraceAnnotation("train", step_num=i) if os.environ.get("STEP_MARKS") else nullcontext():
            step(steps <= 5 or i % 50 == 0)
PY
bash "$(dirname "$0")/jax_keep_capture.sh" "$OUT" h200_jax | tee -a "$OUT/log.txt"
if [ "${STEPS:-5}" -gt 5 ]; then gzip -f "$OUT/h200_jax.xplane.pb"; rm -f "$OUT/h200_jax.perfetto.trace.json.gz"; fi
