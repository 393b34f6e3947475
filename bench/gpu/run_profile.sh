#!/usr/bin/env bash
# Second device call: kscope profile on the H100 (gap + phases), its overhead, and an nsys importer check.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
W=examples/workloads/transformer.py
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# 1. kscope profile, step-windowed training, gap table + JSON
python3 -m kernelscope profile --out $OUT/steps --top 12 -- python3 $W --train-steps 20 --decode-steps 4
python3 -m kernelscope gap $OUT/steps/trace_rank0_*.json.gz --json > $OUT/steps_gap.json
# 2. phases: whole run traced, split by prefill/decode
python3 -m kernelscope profile --out $OUT/phases --step-fn none --phase-by 'prefill|decode' --top 5 -- python3 $W --train-steps 2 --decode-steps 8 | tail -40
# 3. overhead
python3 bench/gpu/profile_overhead.py
# 4. why nsys cannot export here
Q=/opt/nvidia/nsight-compute/2025.3.1/host/linux-desktop-glibc_2_11_3-x64/QdstrmImporter
ldd $Q 2>&1 | grep -i "not found" | head -5; $Q --version 2>&1 | head -3
rm -f $OUT/steps/*.json.gz.tmp
