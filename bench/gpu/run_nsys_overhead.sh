#!/usr/bin/env bash
# Third device call: a real Nsight Systems SQLite export (QdstrmImporter needs libdw.so.1, carried
# as Debian's libdw1/libelf1 packages), read by kscope; then the profile overhead with 5 repeats.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/dw && for f in .whl/deb/*.deb; do dpkg -x $f /tmp/dw; done
export LD_LIBRARY_PATH=/tmp/dw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
NSYS=/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys
Q=/opt/nvidia/nsight-compute/2025.3.1/host/linux-desktop-glibc_2_11_3-x64/QdstrmImporter
ldd $Q | grep "not found"; $NSYS --version
# small run: 1 training step, 2 decode steps; NVTX ranges from torch's emit_nvtx are not enabled here
timeout 300 $NSYS profile --trace cuda,nvtx --sample none --cpuctxsw none --export sqlite --force-overwrite true \
  -o /tmp/nsys_small python3 examples/workloads/transformer.py --train-steps 1 --decode-steps 2 --layers 2 2>&1 | tail -5
ls -la /tmp/nsys_small* 2>/dev/null
if [ -f /tmp/nsys_small.sqlite ]; then
  sqlite3 /tmp/nsys_small.sqlite ".schema CUPTI_ACTIVITY_KIND_KERNEL" 2>/dev/null | head -5 || true
  python3 -m kernelscope gap /tmp/nsys_small.sqlite --top 5
  python3 -c "
import sqlite3; c=sqlite3.connect('/tmp/nsys_small.sqlite')
print('tables', sorted(r[0] for r in c.execute(\"select name from sqlite_master where type='table'\") if 'CUPTI' in r[0] or r[0] in ('StringIds','NVTX_EVENTS','TARGET_INFO_GPU')))
print('kernels', c.execute('select count(*), sum(end-start) from CUPTI_ACTIVITY_KIND_KERNEL').fetchone())"
  gzip -c /tmp/nsys_small.sqlite > $OUT/h100_nsys_small.sqlite.gz
fi
REPEATS=5 python3 bench/gpu/profile_overhead.py
