#!/usr/bin/env bash
# Old Nsight Systems reports (`.qdrep`, before nsys 2021.4 renamed them `.nsys-rep`) exported by today's nsys, the
# route kscope's nsys-rep reader takes (`nsys export --type sqlite`), with `nsys stats`' kernel summary of each export
# as the ground truth for kscope's reading of it.
# Usage (repository root, on the GPU machine; bench/_work carried with deb/ (Debian's libdw1/libelf1, which nsys's
# importers need there) and qdrep/ (the reports)):  OUT=/some/folder bash bench/gpu/qdrep_export.sh
set -u
: "${OUT:?set OUT to the folder for the results}"
. bench/gpu/_nsys_env.sh  # libdw/libelf for nsys, and $NSYS
{
  "$NSYS" --version
  for rep in bench/_work/qdrep/*.qdrep; do
    name=$(basename "$rep" .qdrep | tr -c "A-Za-z0-9_.\n-" "_")
    timeout 300 "$NSYS" export --type sqlite --force-overwrite true --output "$OUT/$name.sqlite" "$rep"
    echo "$name export rc=$?"
    if [ -f "$OUT/$name.sqlite" ]; then
      timeout 300 "$NSYS" stats --force-export false --report cuda_gpu_kern_sum --format csv \
        --output "$OUT/$name" "$OUT/$name.sqlite"
      echo "$name stats rc=$?"
      gzip -9 "$OUT/$name.sqlite"
    fi
  done
  ls -la "$OUT"
} >"$OUT/log.txt" 2>&1
grep -E "rc=|SKIPPED|ERROR|rror" "$OUT/log.txt"
