#!/usr/bin/env bash
# Issue 15 item 1 on the GPU: the autotuned Triton matmul (examples/tune/matmul_workload.py) under kscope's
# hook twice with TRITON_CACHE_AUTOTUNING=1 and an empty Triton cache: the second run finds the autotune
# results cached, so its trace and launch ledger hold the workload's 42 calls with their constexprs.
set -u
export PYTHONUNBUFFERED=1 TRITON_CACHE_AUTOTUNING=1 TRITON_CACHE_DIR=/tmp/triton_cache
rm -rf $TRITON_CACHE_DIR
H=$PWD/kernelscope/profiling/hook
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for run in tuning cached; do
  PYTHONPATH=$H KSCOPE_TRACE_DIR=$OUT/$run KSCOPE_STEP_FN=none python3 examples/tune/matmul_workload.py --configs 8 --calls 21 2>&1 | tail -2
done
rm -rf $OUT/tuning  # large; only the cached run is kept
ls -la $OUT/cached
