#!/usr/bin/env bash
# Keep what jax.profiler.trace wrote under $1/jaxprof as $1/$2.xplane.pb and $1/$2.perfetto.trace.json.gz (XLA's own
# Chrome trace, where create_perfetto_trace=True), then remove the profiler's folder. Used by jax_xplane.sh and
# jax_two_gpus.sh.  Usage: bash bench/gpu/jax_keep_capture.sh OUT NAME
set -uo pipefail
out=$1 name=$2
for pair in "xplane.pb:xplane.pb" "trace.json.gz:perfetto.trace.json.gz"; do
  found=$(ls "$out"/jaxprof/plugins/profile/*/*."${pair%%:*}" 2>/dev/null | head -1)
  echo "*.${pair%%:*}: ${found:-none}"
  [ -n "$found" ] && cp "$found" "$out/$name.${pair#*:}"
done
rm -rf "$out/jaxprof"
