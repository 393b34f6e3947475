#!/usr/bin/env bash
# On the H100: `kscope profile --ncu` of the example softmax, slow and improved, plus the exports the
# tests use as ground truth (ncu's own CSV pages of the same reports). Everything in $OUT/ncu.tar.gz.
set -uo pipefail
python -c "import ncu_report; print('ncu_report', ncu_report.__file__)"  # the ncu-report wheel from .whl
ncu --version | tail -1
W=$(mktemp -d)
for v in slow fast; do
  extra=(); [ "$v" = fast ] && extra=(--block 0 --warps 8)
  /usr/bin/time -f "$v wall %e s" python -m kernelscope profile --ncu -k softmax_kernel --launch-skip 2 --launch-count 1 \
    --out "$W/$v" -- python examples/softmax/softmax.py --iters 3 "${extra[@]}" > "$W/${v}_profile.txt" 2>&1
  echo "profile $v rc=$?"; tail -25 "$W/${v}_profile.txt"
  ncu --import "$W/$v/run.ncu-rep" --page source --csv --print-source sass > "$W/${v}_source_sass.csv" 2>&1
  ncu --import "$W/$v/run.ncu-rep" --page details --csv > "$W/${v}_details.csv" 2>&1
  ncu --import "$W/$v/run.ncu-rep" --page raw --csv > "$W/${v}_raw.csv" 2>&1
done
tar -czf "$OUT/ncu.tar.gz" -C "$W" .
