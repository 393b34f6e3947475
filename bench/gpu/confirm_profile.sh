#!/usr/bin/env bash
# Final-code confirmation on the GPU: kscope profile (torch hook, step window) and the columnar gap of
# its trace, checked against the records path of the same trace.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
git log --oneline -1 2>/dev/null || true
python3 -m kernelscope profile --out /tmp/p --json -- python3 examples/workloads/transformer.py --train-steps 12 --decode-steps 2 > $OUT/profile.json
python3 - <<'PY'
import json, glob, os
from kernelscope import gap, read
doc = json.load(open(os.environ["OUT"] + "/profile.json"))
[trace] = doc["run"]["traces"]
rec = gap(read(trace))
cols = doc["gap"]
print("tracer", doc["run"]["tracer"], "rc", doc["run"]["returncode"], "wall_s", round(doc["run"]["wall_s"], 2))
print("columns path:", cols["totals"]["launches"], "launches", round(cols["totals"]["kernel_time_us"], 1), "us kernel", round(cols["totals"]["busy_time_us"], 1), "us busy")
print("records path:", rec.totals.launches, "launches", round(rec.totals.kernel_time_us, 1), "us kernel", round(rec.totals.busy_time_us, 1), "us busy")
print("identical rows:", [(r["name"], r["calls"], r["total_us"]) for r in cols["kernels"]] == [(r.name, r.calls, r.total_us) for r in rec.kernels])
PY
