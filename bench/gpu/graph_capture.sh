#!/usr/bin/env bash
# Three PyTorch profiler traces of one model, for kscope roofline --capture: one taken while its CUDA graph is
# captured (torch.cuda.graph), one of three replays (CUDAGraph.replay), and one eager forward (which kernels each
# op launches, the ground truth of the attribution); all with record_shapes=True.
# Usage (repository root, on the GPU machine):  OUT=/some/folder bash bench/gpu/graph_capture.sh
# $OUT gets capture.json.gz, replay.json.gz, eager.json.gz and log.txt. Under a minute.
set -u
: "${OUT:?set OUT to the folder for the results}"
export PYTHONUNBUFFERED=1
python3 - "$OUT" <<'PY' 2>&1 | tee "$OUT/log.txt"
import sys

import torch
from torch.profiler import ProfilerActivity, profile

out = sys.argv[1]
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(2048, 8192), torch.nn.GELU(), torch.nn.Linear(8192, 2048), torch.nn.LayerNorm(2048)
).cuda().to(torch.bfloat16)
x = torch.randn(64, 2048, device="cuda", dtype=torch.bfloat16)
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side), torch.no_grad():  # warm up off the default stream, as torch.cuda.graph asks
    for _ in range(3):
        model(x)
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
with profile(activities=acts, record_shapes=True) as cap, torch.no_grad(), torch.cuda.graph(graph):
    y = model(x)
cap.export_chrome_trace(f"{out}/capture.json")
with profile(activities=acts, record_shapes=True) as run:
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
run.export_chrome_trace(f"{out}/replay.json")
with profile(activities=acts, record_shapes=True) as eager, torch.no_grad():
    model(x)
    torch.cuda.synchronize()
eager.export_chrome_trace(f"{out}/eager.json")
print(torch.__version__, torch.cuda.get_device_name(), float(y.float().abs().sum()))
PY
gzip -f "$OUT/capture.json" "$OUT/replay.json" "$OUT/eager.json"
ls -la "$OUT"
