#!/usr/bin/env bash
# Issue 16: two projects carry a drifted copy of one Triton kernel (examples/workloads/copies); each run under
# kscope's hook imports one of them. The trace names only `_reduce_stage2`; the launch ledger beside it names
# the module, which `kscope gap --find-sources` uses to pick the copy that ran.
set -u
export PYTHONUNBUFFERED=1
H=$PWD/kernelscope/profiling/hook
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for p in a b; do
  PYTHONPATH=$H KSCOPE_TRACE_DIR=$OUT/copies_$p KSCOPE_STEP_FN=none python3 examples/workloads/copies/run.py --project $p 2>&1 | tail -2
done
ls -la $OUT/copies_a $OUT/copies_b
