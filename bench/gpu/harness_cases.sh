#!/usr/bin/env bash
# Issue 15 item 2 on the GPU: examples/workloads/harnessed.py under each harness, recorded by kscope profile
# (its hook, as `kscope profile --step-fn none` injects it: whole run, harness marks on), plus the cached TunableOp twin; the traces come back under $OUT.
set -u
export PYTHONUNBUFFERED=1
H=$PWD/kernelscope/profiling/hook
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
W=examples/workloads/harnessed.py
run() {  # name, timeout, workload arguments...
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  PYTHONPATH=$H KSCOPE_TRACE_DIR=$OUT/$name KSCOPE_STEP_FN=none timeout $limit python3 $W "$@" 2>&1 | tail -8
  echo "== $name: $(( $(date +%s) - t0 )) s"
}
for h in none do_bench timer graphed; do run $h 120 --harness $h; done
run tunableop 240 --harness tunableop --tunableop-results $OUT/tunableop_results.csv
run tunableop_tuned 120 --harness tunableop --tuned --tunableop-results $OUT/tunableop_results.csv
run compile 300 --harness compile
# a hand-written tuner's timing (no L2 flush): the tutorial matmul autotuned with a plain loop
W=examples/tune/matmul_workload.py
run autotune_plain 120 --configs 8 --calls 21 --plain-bench
rm -f $OUT/*/*.tmp
du -sh $OUT/*
