#!/usr/bin/env bash
# The human (column and table) forms of `nsys stats`, the ones shared as .txt files and logs, written by NVIDIA's own
# nsys from the project's real exports, as ground truth for readers/nsys_stats.py: the default reports of
# `nsys stats` (column format, several reports in one output), `--format table`, `--timeunit usec`, the grid/block
# report, `--output` to a file, and the log of `nsys profile --stats=true` around a small PyTorch workload (with its
# export for the ground truth).
# Usage (repository root, on the GPU machine; bench/_work/deb carried with Debian's libdw1/libelf1, which nsys's
# QdstrmImporter needs there):  OUT=/some/folder bash bench/gpu/nsys_stats_text.sh
set -u
: "${OUT:?set OUT to the folder for the results}"
. bench/gpu/_nsys_env.sh  # libdw/libelf for nsys, and $NSYS
W=/tmp/nsys_text && mkdir -p "$W"
gunzip -c tests/data/nsys/h100_nsys_small.sqlite.gz >"$W/h100_nsys_small.sqlite"
gunzip -c tests/data/nsys/h200_transformer_export.sqlite.gz >"$W/h200_transformer.sqlite"
stats() { timeout 300 "$NSYS" stats --force-export false "$@"; }
{
  "$NSYS" --version
  cd "$W" || exit 1
  stats h100_nsys_small.sqlite >"$OUT/h100_default_reports.txt"
  stats --report cuda_gpu_kern_sum --format table h100_nsys_small.sqlite >"$OUT/h100_kern_sum_table.txt"
  stats --report cuda_gpu_kern_sum --format column --timeunit usec h100_nsys_small.sqlite >"$OUT/h100_kern_sum_column_us.txt"
  stats --report cuda_gpu_kern_gb_sum h100_nsys_small.sqlite >"$OUT/h100_kern_gb_sum_column.txt"
  stats --report cuda_gpu_kern_sum --format table --output "$OUT/h100_file" h100_nsys_small.sqlite
  stats h200_transformer.sqlite >"$OUT/h200_default_reports.txt"
  cd - >/dev/null || exit 1
  timeout 300 "$NSYS" profile --stats=true --trace cuda,nvtx --sample none --cpuctxsw none --force-overwrite true \
    -o "$W/profiled" python3 examples/workloads/transformer.py --train-steps 1 --decode-steps 2 --layers 2 \
    >"$OUT/profile_stats_log.txt" 2>&1
  echo "profile rc=$?"
  timeout 300 "$NSYS" export --type sqlite --force-overwrite true --output "$OUT/profiled.sqlite" "$W/profiled.nsys-rep"
  echo "export rc=$?"
  gzip -9 "$OUT/profiled.sqlite"
  ls -la "$OUT"
} >"$OUT/log.txt" 2>&1
tail -30 "$OUT/log.txt"
