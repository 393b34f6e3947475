#!/usr/bin/env bash
# One device call: timing harness vs CUPTI/do_bench, then the ncu captures. Outputs under $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
case "${1:-all}" in
  timing|all)
    python -m kernelscope bench examples/softmax/softmax.py:make --arg block=0 --arg warps=8 --metric time_us 2>&1 | tee "$OUT/bench_cli.txt"
    python bench/gpu/timing_vs_cupti.py --out "$OUT/timing_vs_cupti.json" 2>&1 | tee "$OUT/timing.log" ;;&
  ncu|all) bash bench/gpu/ncu_capture.sh 2>&1 | tee "$OUT/ncu.log" ;;
esac
