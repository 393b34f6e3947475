#!/usr/bin/env bash
# Issue 4 on the GPU: kscope ceilings (measured bandwidth and matrix throughput beside torch) and the
# CUDA occupancy API's answers for the corpus cubins (ground truth for kscope's occupancy formula).
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
python3 bench/gpu/cuda_occupancy.py $OUT/h100_cuda_occupancy.json tests/data/codeobj/*.cubin
KSCOPE_CEILINGS=$OUT python3 -m kernelscope ceilings --json -o $OUT/ceilings.json
python3 -m kernelscope ceilings --no-save
