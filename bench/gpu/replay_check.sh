#!/usr/bin/env bash
# kscope replay on a GPU: does the replayed op launch the kernels the trace recorded, and take as long?
#  1. a small eager PyTorch workload (linear, mm with out= and on a transposed view, bmm, gelu, softmax on a
#     float copy, layer norm, SDPA, in-place add, cat, sum) runs under torch.profiler with record_shapes=True;
#  2. kscope replay writes one script per op (by --op, and by --kernel for the attention and GEMM kernels);
#  3. each script runs with --check (its kernels against the trace's: KSCOPE_METRIC kernel_match=1|0), then
#     timed (KSCOPE_METRIC time_us, device events, L2 flushed) next to the trace's kernel time per call;
#  4. kscope task new --from-replay makes a task of one script.
# Usage (repository root, on the GPU machine):  OUT=/some/folder bash bench/gpu/replay_check.sh
# $OUT gets trace.json, list.txt, scripts/, json/ (kscope --json per op), logs/ (each run), summary.txt,
# summary.json. About 2-3 minutes on an H100. Works on ROCm builds too (torch.cuda is HIP there).
set -uo pipefail
: "${OUT:?set OUT to the folder for the results}"
if compgen -G ".whl/*.whl" >/dev/null; then  # the device has no network: kernelscope comes as a wheel
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH="/tmp/site:$PWD"
else
  export PYTHONPATH="$PWD"
fi
export PYTHONUNBUFFERED=1
mkdir -p "$OUT/scripts" "$OUT/json" "$OUT/logs"
T0=$SECONDS

python3 - "$OUT/trace.json" <<'PY' 2>&1 | tee "$OUT/logs/workload.txt"
import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

torch.manual_seed(0)
cuda, bf16 = "cuda", torch.bfloat16
x = torch.randn(8, 1024, 1024, device=cuda, dtype=bf16)
w, b = torch.randn(4096, 1024, device=cuda, dtype=bf16), torch.randn(4096, device=cuda, dtype=bf16)
a, c = (torch.randn(4096, 4096, device=cuda, dtype=bf16) for _ in range(2))
out = torch.empty(4096, 4096, device=cuda, dtype=bf16)
ba, bb = torch.randn(64, 512, 256, device=cuda, dtype=bf16), torch.randn(64, 256, 512, device=cuda, dtype=bf16)
q, k, v = (torch.randn(8, 16, 1024, 64, device=cuda, dtype=bf16) for _ in range(3))
ln = torch.nn.LayerNorm(1024, device=cuda, dtype=bf16)


def step() -> None:
    h = F.linear(x, w, b)  # aten::linear -> aten::addmm
    torch.mm(a, c, out=out)  # aten::mm.out
    torch.mm(a, c.t())  # a transposed (non-contiguous) operand
    torch.bmm(ba, bb)
    F.gelu(h)
    torch.softmax(x.float(), dim=-1)  # aten::to -> aten::copy_, then aten::_softmax
    n = ln(x)  # aten::native_layer_norm
    F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x.clone().add_(n)  # in place
    torch.cat([q, k], dim=1)  # a tensor list
    x.sum(dim=-1)


with torch.no_grad():
    for _ in range(3):  # warm-up: libraries, autotuning
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        for _ in range(5):
            step()
        torch.cuda.synchronize()
prof.export_chrome_trace(sys.argv[1])
print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}: wrote {sys.argv[1]}")
PY
[ -s "$OUT/trace.json" ] || { echo "no trace written"; exit 1; }
python3 -m kernelscope replay "$OUT/trace.json" --list > "$OUT/list.txt" 2>&1
python3 -m kernelscope replay "$OUT/trace.json" --list --json > "$OUT/json/list.json" 2>>"$OUT/logs/errors.txt"

# name | selection (kscope replay options)
CASES=(
  "addmm|--op aten::addmm"
  "linear|--op aten::linear"
  "mm_1|--op aten::mm --rank 1"
  "mm_2|--op aten::mm --rank 2"
  "bmm|--op aten::bmm"
  "gelu|--op aten::gelu"
  "softmax|--op aten::_softmax"
  "copy|--op aten::copy_"
  "layer_norm|--op aten::native_layer_norm"
  "sdpa|--op aten::scaled_dot_product_attention"
  "attention_kernel|--kernel flash|fmha|sdpa|attention"
  "gemm_kernel|--kernel gemm|nvjet|cutlass|Cijk|sm90_xmma"
  "add_|--op aten::add_"
  "cat|--op aten::cat"
  "sum|--op aten::sum"
)
for case in "${CASES[@]}"; do
  name=${case%%|*}; sel=${case#*|}
  read -r flag value rest <<<"$sel"  # the regex may hold '|': pass it as one argument
  # shellcheck disable=SC2086
  python3 -m kernelscope replay "$OUT/trace.json" "$flag" "$value" $rest -o "$OUT/scripts/replay_$name.py" --json \
    > "$OUT/json/$name.json" 2> "$OUT/logs/$name.replay.txt" || echo "kscope replay $sel: $(cat "$OUT/logs/$name.replay.txt")"
done

# --check runs side by side (which kernels launch does not depend on a busy GPU); timings one at a time
ls "$OUT"/scripts/replay_*.py | xargs -P 4 -I{} sh -c 'python3 "$1" --check > "$2/logs/$(basename "$1" .py).check.txt" 2>&1; echo "rc=$?" >> "$2/logs/$(basename "$1" .py).check.txt"' _ {} "$OUT"
for s in "$OUT"/scripts/replay_*.py; do
  python3 "$s" > "$OUT/logs/$(basename "$s" .py).time.txt" 2>&1; echo "rc=$?" >> "$OUT/logs/$(basename "$s" .py).time.txt"
done

# a task from one script: eval command, metric, direction, kernel and shapes come from its header
W=$(mktemp -d); git -C "$W" init -q && touch "$W/kernel.py" && git -C "$W" add kernel.py \
  && git -C "$W" -c user.name=kscope -c user.email=kscope@localhost commit -qm base
python3 -m kernelscope init "$W/ws" > /dev/null
if python3 -m kernelscope task new gemm -w "$W/ws" --repo "$W" --baseline-ref HEAD --allowed kernel.py \
  --timeout 120 --from-replay "$OUT/scripts/replay_gemm_kernel.py" --json > "$OUT/json/task.json" 2> "$OUT/logs/task.txt"
then
  python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); print("task new --from-replay:", t["eval_command"], t["metric"], t["direction"], t["shapes"])' "$OUT/json/task.json"
else
  echo "task new --from-replay failed: $(cat "$OUT/logs/task.txt")"
fi

python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, re, sys
from pathlib import Path

out = Path(sys.argv[1])
rows = []
for j in sorted((out / "json").glob("*.json")):
    if j.stem in ("list", "task"):
        continue
    name, log = j.stem, out / "logs"
    try:
        rec = json.loads(j.read_text())
    except ValueError:
        rows.append({"case": name, "error": (log / f"{name}.replay.txt").read_text().strip()})
        continue
    check = (log / f"replay_{name}.check.txt").read_text() if (log / f"replay_{name}.check.txt").exists() else ""
    timed = (log / f"replay_{name}.time.txt").read_text() if (log / f"replay_{name}.time.txt").exists() else ""
    match = re.search(r"KSCOPE_METRIC kernel_match=(\d)", check)
    us = re.search(r"KSCOPE_METRIC time_us=([\d.]+)", timed)
    call = (timed.splitlines() or [""])[0]
    rows.append({
        "case": name, "op": rec["op"], "selection": rec["selection"], "call": call,
        "kernel_match": int(match[1]) if match else None,
        "replay_us": float(us[1]) if us else None, "trace_us": rec["kernel_ns"] / 1e3,
        "kernels": rec["kernels"], "notes": rec["notes"],
        "check_tail": check.strip().splitlines()[-8:], "time_tail": timed.strip().splitlines()[-4:],
    })
(out / "summary.json").write_text(json.dumps(rows, indent=2))
print(f"{'case':18} {'op':38} {'match':>5} {'replay µs':>10} {'trace µs':>10} {'ratio':>6}")
for r in rows:
    if "error" in r:
        print(f"{r['case']:18} ERROR {r['error'][:150]}")
        continue
    ratio = f"{r['replay_us'] / r['trace_us']:.2f}" if r["replay_us"] and r["trace_us"] else ""
    print(f"{r['case']:18} {r['op']:38} {r['kernel_match']!s:>5} {r['replay_us'] or '':>10} {r['trace_us']:>10.1f} {ratio:>6}")
ok = [r for r in rows if r.get("kernel_match") == 1]
print(f"{len(ok)} of {len(rows)} replayed ops launched the trace's kernels "
      "(replay µs: device events around the call, L2 flushed; trace µs: kernel durations)")
PY
echo "done in $((SECONDS - T0)) s; results in $OUT"
