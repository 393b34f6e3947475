"""Write a graph-capture trace with only the events ``kineto.read_captured`` reads, each unchanged.

Kept: the header keys; every runtime call that names a kernel (a launch recorded while a graph was captured)
or begins or ends a capture; every op whose External id such a launch names. Dropped: everything else (other
runtime calls, Python frames, ops that launched nothing, the few kernels run outside the capture).
Usage: ``python trim_capture.py IN.json.gz OUT.json.gz``.
"""

import gzip
import json
import sys

API = {"cuda_runtime", "cuda_driver", "Runtime", "runtime"}
OPS = {"cpu_op", "Operator"}

doc = json.loads(gzip.decompress(open(sys.argv[1], "rb").read()))
events = doc["traceEvents"]
launches = [e for e in events if e.get("cat") in API and (e.get("args") or {}).get("kernel")]
capture = ("StreamBeginCapture", "StreamEndCapture")
bounds = [e for e in events if e.get("cat") in API and any(c in e.get("name", "") for c in capture)]
wanted = {e["args"].get("External id") for e in launches}
ops = [e for e in events if e.get("cat") in OPS and (e.get("args") or {}).get("External id") in wanted]
doc["traceEvents"] = sorted(launches + bounds + ops, key=lambda e: e["ts"])
with open(sys.argv[2], "wb") as f:
    f.write(gzip.compress(json.dumps(doc).encode(), mtime=0))
