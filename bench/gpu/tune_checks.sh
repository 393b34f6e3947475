#!/usr/bin/env bash
# kscope tune's GPU paths on one GPU (issue 14), each checked for real; results and logs under $OUT.
#   1. fault injection (bench/tune.py faults)
#   2. the @triton.autotune target: the tutorial matmul (115 configs) on two shapes, and the test fixture
#      whose oversized config cannot run on an H100
#   3. the launch ledger: profile a workload that calls the autotuned matmul, then tune --from-trace
#   4. TunableOp: record, tune, results file, A/B of a small bf16 MLP
# Needs PYTHONPATH with kernelscope and its wheels (msgspec, pyelftools), as bench/gpu/*.sh do.
set -uo pipefail
K="python3 -m kernelscope"
S=/tmp/tune-checks; rm -rf $S; mkdir -p $S
echo "== 1. faults"; timeout 240 python3 bench/tune.py faults --out $OUT > $S/faults.log 2>&1; tail -3 $S/faults.log
echo "== 2a. triton target, tutorial matmul"
timeout 300 $K tune examples/tune/matmul.py:matmul_kernel --launch examples/tune/matmul.py:launch \
  --reference examples/tune/matmul.py:reference --shape M=4096,N=4096,K=4096 --shape M=16,N=8192,K=4096 \
  --store $S/t.sqlite --json -o $OUT/tune_triton_target.json; echo "rc=$?"
timeout 60 $K tune show --store $S/t.sqlite --status compile_error | tail -5
echo "== 2b. triton target, fixture with an oversized config"
timeout 200 $K tune tests/data/tune/matmul_autotune.py:matmul_kernel --launch tests/data/tune/matmul_autotune.py:launch \
  --reference tests/data/tune/matmul_autotune.py:reference --shape M=2048,N=2048,K=2048 --store $S/f.sqlite --all 2>&1 | tail -25
echo "== 3. launch ledger"
timeout 200 $K profile --step-fn none --out $S/prof -- python3 examples/tune/matmul_workload.py --configs 6 2>&1 | tail -4
python3 - <<'PY'
from pathlib import Path
from kernelscope.readers.launch_ledger import read
from kernelscope.tune.ledger_shapes import shapes_from_trace
out = Path("/tmp/tune-checks/prof"); L = read(out)
print(len(L), "launches,", sum(bool(l.autotune) for l in L), "from the autotuner")
for s in shapes_from_trace(out, kernel="_matmul", keys=["M", "N", "K"]): print(s)
PY
timeout 200 $K tune examples/tune/matmul.py:matmul_kernel --launch examples/tune/matmul.py:launch \
  --from-trace $S/prof --kernel _matmul --store $S/l.sqlite 2>&1 | tail -12
echo "== 4. TunableOp"
timeout 400 $K tune --tunableop --out $S/top --write tunableop $S/top/final.csv --ab-runs 5 --metric mlp_ms \
  --json -o $OUT/tune_tunableop.json -- python3 examples/tune/gemm_workload.py; echo "rc=$?"
head -5 $S/top/final.csv; python3 -c "import json;d=json.load(open('$OUT/tune_tunableop.json'));print(d['notes']);print(d.get('ab'))"
