#!/usr/bin/env bash
# `nsys stats --report cuda_gpu_trace` (a row per kernel, copy and fill: the timeline nsys users export to CSV) of the
# project's real exports, written by NVIDIA's nsys as ground truth for readers/nsys_gpu_trace.py: CSV in ns and usec,
# TSV, and the column form.
# Usage (repository root, on the GPU machine; bench/_work/deb carried with Debian's libdw1/libelf1):
#   OUT=/some/folder bash bench/gpu/nsys_gpu_trace.sh
set -u
: "${OUT:?set OUT to the folder for the results}"
. bench/gpu/_nsys_env.sh  # libdw/libelf for nsys, and $NSYS
W=/tmp/nsys_trace && mkdir -p "$W"
gunzip -c tests/data/nsys/h100_nsys_small.sqlite.gz >"$W/h100_nsys_small.sqlite"
stats() { timeout 300 "$NSYS" stats --force-export false --report cuda_gpu_trace "$@" "$W/h100_nsys_small.sqlite"; }
{
  "$NSYS" --version
  stats --format csv >"$OUT/h100_gpu_trace.csv"
  stats --format csv --timeunit usec >"$OUT/h100_gpu_trace_us.csv"
  stats --format tsv >"$OUT/h100_gpu_trace.tsv"
  stats --format column >"$OUT/h100_gpu_trace_column.txt"
  ls -la "$OUT"
} >"$OUT/log.txt" 2>&1
cd "$OUT" && gzip -9 h100_gpu_trace*.csv h100_gpu_trace.tsv h100_gpu_trace_column.txt && tail -12 log.txt
