#!/usr/bin/env bash
# kscope reads an Nsight Systems report (.nsys-rep) through `nsys export`, checked against `nsys stats` of the same
# report: a small PyTorch transformer (1 training step, 2 decode steps) under `nsys profile` (its default output,
# a .nsys-rep), then `python -m kernelscope gap REPORT.nsys-rep --json` (kscope finds nsys and exports it) and
# `nsys stats --report cuda_gpu_kern_sum` (Nsight's own per-kernel totals).
# Usage (repository root, on the GPU machine, .whl/ carried: msgspec, pyelftools, zstandard wheels and Debian's
# libdw1/libelf1 in .whl/deb, which nsys's QdstrmImporter needs there):  OUT=/some/folder bash bench/gpu/nsys_rep.sh
# $OUT gets h200_transformer.nsys-rep, h200_transformer.sqlite (nsys export), h200_transformer_stats.csv,
# kscope_gap.json and log.txt.
set -u
: "${OUT:?set OUT to the folder for the results}"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/dw && for f in .whl/deb/*.deb; do dpkg -x "$f" /tmp/dw; done
export LD_LIBRARY_PATH=/tmp/dw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
NSYS=$(command -v nsys || ls /opt/nvidia/nsight-systems/*/bin/nsys /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2>/dev/null | head -1)
export NSYS
{
  "$NSYS" --version
  timeout 300 "$NSYS" profile --trace cuda,nvtx --sample none --cpuctxsw none --force-overwrite true \
    -o "$OUT/h200_transformer" python3 examples/workloads/transformer.py --train-steps 1 --decode-steps 2 --layers 2 | tail -3
  ls -la "$OUT"
  timeout 300 python3 -m kernelscope gap "$OUT/h200_transformer.nsys-rep" --json >"$OUT/kscope_gap.json"
  echo "kscope gap rc=$?"
  timeout 300 "$NSYS" stats --report cuda_gpu_kern_sum --format csv --output "$OUT/h200_transformer" \
    "$OUT/h200_transformer.nsys-rep"
  mv "$OUT/h200_transformer_cuda_gpu_kern_sum.csv" "$OUT/h200_transformer_stats.csv"
  timeout 300 "$NSYS" export --type sqlite --force-overwrite true --output "$OUT/h200_transformer.sqlite" \
    "$OUT/h200_transformer.nsys-rep"
  echo "export rc=$?"
  ls -la "$OUT"
} >"$OUT/log.txt" 2>&1
tail -25 "$OUT/log.txt"
