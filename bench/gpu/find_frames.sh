#!/usr/bin/env bash
# Issue 16: the same two projects' drifted copies of `_reduce_stage2` (examples/workloads/copies), each run
# recorded by the PyTorch profiler itself with Python stacks (no kscope hook, no launch ledger), as vLLM's and
# SGLang's profilers record. `kscope gap --find-sources` reads the trace's Python frames to pick the copy.
set -eu
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
for p in a b; do
  python3 examples/workloads/copies/run.py --project $p --torch-trace $OUT/frames_$p.json
  gzip -9 $OUT/frames_$p.json
done
ls -la $OUT
