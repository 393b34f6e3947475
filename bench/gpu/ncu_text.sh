#!/usr/bin/env bash
# Nsight Compute's printed (human) output, the form ncu results are pasted in as logs and issues, beside its details
# page as CSV for the same reports: ground truth for readers/ncu_text.py. Prints the project's real H100 reports
# (`ncu -i REPORT`, default sections as captured; `--print-units base`; `--page details --csv`).
# Usage (repository root, on the GPU machine):  OUT=/some/folder bash bench/gpu/ncu_text.sh
set -u
: "${OUT:?set OUT to the folder for the results}"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
{
  "$NCU" --version
  for rep in tests/data/ncu/*.ncu-rep; do
    name=$(basename "$rep" .ncu-rep)
    timeout 300 "$NCU" -i "$rep" >"$OUT/$name.ncu.txt"
    timeout 300 "$NCU" -i "$rep" --print-units base >"$OUT/${name}_base.ncu.txt"
    timeout 300 "$NCU" -i "$rep" --page details --csv >"$OUT/${name}_details.csv"
    echo "$name rc=$?"
  done
  # a live run as a log holds it (==PROF== lines, the program's own output), with the report it wrote beside it
  cat >/tmp/ncu_work.py <<'PY'
import torch
x = torch.randn(2048, 2048, device="cuda")
print("step", torch.softmax(x @ x, dim=1).sum().item())
PY
  timeout 300 "$NCU" -k regex:softmax --launch-count 2 -f -o "$OUT/live" python3 /tmp/ncu_work.py
  timeout 300 "$NCU" -k regex:softmax --launch-count 2 python3 /tmp/ncu_work.py >"$OUT/live_log.ncu.txt" 2>&1
  timeout 300 "$NCU" -i "$OUT/live.ncu-rep" --page details --csv >"$OUT/live_report_details.csv"
  timeout 300 "$NCU" -i "$OUT/live.ncu-rep" >"$OUT/live_report.ncu.txt"
  rm -f "$OUT/live.ncu-rep"
  ls -la "$OUT"
} >"$OUT/log.txt" 2>&1
cd "$OUT" && tar czf ncu_text.tgz ./*.ncu.txt ./*.csv && rm -f ./*.ncu.txt ./*.csv && tail -20 log.txt
