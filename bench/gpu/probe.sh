#!/usr/bin/env bash
# First device call: tool inventory, real Kineto fixtures through kscope's hook, an nsys SQLite try,
# and a first look at the hook's overhead. Output under $OUT.
set -u
export PYTHONUNBUFFERED=1
W=examples/workloads/transformer.py
HOOK=kernelscope/profiling/hook
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
for t in ncu nsys cuobjdump nvdisasm nvcc; do printf '%s: %s\n' $t "$(command -v $t)"; done
ls /opt/nvidia 2>/dev/null; ls /opt/nvidia/nsight-compute/*/host/target-linux-x64/ 2>/dev/null | head -40
find / \( -name 'QdstrmImporter*' -o -name nsys -o -name 'nsys-exporter*' \) -not -path '/proc/*' 2>/dev/null | head
mkdir -p $OUT/t1 $OUT/t2
# 1. step-windowed training trace (3 active optimizer steps)
KSCOPE_TRACE_DIR=$OUT/t1 KSCOPE_WAIT=2 KSCOPE_WARMUP=1 KSCOPE_ACTIVE=3 PYTHONPATH=$HOOK python3 $W --train-steps 8 --decode-steps 2
# 2. whole-run trace with prefill/decode annotations
KSCOPE_TRACE_DIR=$OUT/t2 KSCOPE_STEP_FN=none PYTHONPATH=$HOOK python3 $W --train-steps 2 --decode-steps 6
ls -la $OUT/t1 $OUT/t2
# 3. nsys, if any binary can be found
NSYS=$(command -v nsys || find / -name nsys -type f -perm -u+x -not -path '/proc/*' 2>/dev/null | head -1)
if [ -n "$NSYS" ]; then
  timeout 180 $NSYS profile -t cuda,nvtx --export sqlite -o $OUT/nsys_run python3 $W --train-steps 3 --decode-steps 2 2>&1 | tail -20
  ls -la $OUT/nsys_run* 2>/dev/null
fi
# 4. first overhead look: plain vs hooked (default window), 2 runs each
for i in 1 2; do
  /usr/bin/time -f "plain %e s" python3 $W --train-steps 60 --decode-steps 16 2>&1 | tail -2
  /usr/bin/time -f "hooked %e s" env KSCOPE_TRACE_DIR=/tmp/ov PYTHONPATH=$HOOK python3 $W --train-steps 60 --decode-steps 16 2>&1 | tail -3
done
