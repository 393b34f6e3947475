#!/usr/bin/env bash
# The optimization loop end to end on the H100, every step a kscope command with --json:
# profile -> gap -> isa/fit -> ncu + roofline -> suggest -> task -> eval (candidate) -> ledger -> memory.
# The workload is examples/softmax/softmax.py in a fresh git repository (baseline commit: the slow
# 3-pass kernel); the candidate edits BLOCK/WARPS in the working tree to the one-pass kernel.
# Everything lands in $OUT/e2e.tar.gz (JSON of each step, logs); a summary is printed.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
K=(python -m kernelscope)
W=$(mktemp -d); R=$W/repo; J=$W/json; mkdir -p "$R" "$J"
cp examples/softmax/softmax.py "$R/"
git -C "$R" init -q && git -C "$R" add softmax.py \
  && git -C "$R" -c user.name=kscope -c user.email=kscope@localhost commit -qm "slow softmax (baseline)"
step() {  # step NAME CMD...: run, keep stdout as $J/NAME.json, stderr as $J/NAME.err, print rc and time
  local name=$1; shift
  local t0=$SECONDS
  "$@" > "$J/$name.json" 2> "$J/$name.err"
  echo "== $name rc=$? $((SECONDS - t0)) s: $*"
}
cd "$R"
# 1. profile (PyTorch profiler injected) -> gap table of the workload
step 01_profile env TRITON_CACHE_DIR="$W/tc_base" "${K[@]}" profile --step-fn none --out "$W/prof" --json -- python softmax.py --iters 20
step 02_gap "${K[@]}" gap "$W"/prof/trace_*.json* --json
# 2. the code object of the hot kernel, from Triton's cache
step 03_isa "${K[@]}" isa "$W/tc_base" --json
step 04_fit "${K[@]}" fit "$W/tc_base" --json
# 3. Nsight Compute on one launch: stall reasons, hotspots, roofline from counters
step 05_ncu env TRITON_CACHE_DIR="$W/tc_base" "${K[@]}" profile --ncu -k softmax_kernel --launch-skip 2 \
  --launch-count 1 --out "$W/ncu" --json -- python softmax.py --iters 3
step 06_ncu_analysis "${K[@]}" ncu "$W/ncu/run.ncu-rep" --json
step 07_roofline "${K[@]}" roofline "$W/ncu/run.ncu-rep" --json
step 08_suggest "${K[@]}" suggest --ncu "$W/ncu/run.ncu-rep" --isa "$W/tc_base" --json
# 4. workspace and task (correctness: an odd shape must still match torch.softmax)
step 09_init "${K[@]}" init "$W/ws" --json
step 10_task "${K[@]}" task new softmax -w "$W/ws" --repo "$R" --baseline-ref HEAD --allowed softmax.py \
  --eval-command "python softmax.py --iters 50" --metric time_us --direction lower --timeout 300 \
  --correctness "python softmax.py --rows 1000 --cols 3000 --iters 1" --runs 10 --kernel softmax_kernel \
  --shapes "8192x4096 bf16" --lever algorithm --json
# 5. the candidate: one pass over the row, whole row per program, 8 warps
sed -i 's/^BLOCK = 128 /BLOCK = 0 /; s/^WARPS = 1$/WARPS = 8/' softmax.py
git diff --stat
TRITON_CACHE_DIR="$W/tc_cand" python softmax.py --iters 3
step 11_isa_candidate "${K[@]}" isa "$W/tc_cand" --json
step 12_eval "${K[@]}" eval softmax -w "$W/ws" --json
step 13_ledger "${K[@]}" ledger -w "$W/ws" --json
# 6. memory: the iteration, filled from the eval, with the evidence that led to it
step 14_memory_init "${K[@]}" memory init -w "$W/ws" --json
RUN=$(python -c "import json,sys; print(json.load(open(sys.argv[1]))['id'])" "$J/12_eval.json")
step 15_memory_new "${K[@]}" memory new -w "$W/ws" --task softmax --kernel softmax_kernel --category algorithm \
  --title "one pass over the row instead of three" --from-eval "$RUN" --json
# the evidence that led to the change (evidence -> inference -> action) and the code object's progress
python - "$J" "$W/ws" <<'PY'
import json, subprocess, sys
j, ws = sys.argv[1], sys.argv[2]
k = json.load(open(f"{j}/06_ncu_analysis.json"))["kernels"][0]
top, hot = k["stall_breakdown"][0], k["hotspots"][0]
roof = json.load(open(f"{j}/07_roofline.json"))["points"][0]
def isa(name):
    c = json.load(open(f"{j}/{name}.json"))["objects"][0]["kernels"][0]
    return {"registers": c["registers"], "instructions": c["instructions"], "occupancy_pct": c["occupancy"]["pct"]}
argv = [sys.executable, "-m", "kernelscope", "memory", "set", "1", "-w", ws, "--json",
        "--add-evidence",
        f"ncu: {top['label']} {top['pct']:.0f}% of warp-stall samples, hottest line {hot['source']}; "
        f"roofline: {roof['bound']}-bound at {roof['pct_of_roof']:.0f}% of the roof",
        "the row is read from memory three times (max, sum, write) in 128-wide chunks by one warp",
        "one pass with the whole row in registers, 8 warps per row",
        f"isa_metrics.before={json.dumps(isa('03_isa'))}", f"isa_metrics.after={json.dumps(isa('11_isa_candidate'))}",
        "isa_metrics.source=kscope isa on the Triton cache of each side"]
with open(f"{j}/15b_memory_set.json", "w") as out:
    print("== 15b_memory_set rc=", subprocess.run(argv, stdout=out).returncode)
PY
step 16_memory_summary "${K[@]}" memory summary -w "$W/ws" --json
cd - >/dev/null
cp "$W/ws/ledger.jsonl" "$J/" 2>/dev/null
cp -r "$W/ws/memory" "$J/memory" 2>/dev/null
python - "$J" <<'EOF'
import json, sys, pathlib
j = pathlib.Path(sys.argv[1])
def load(n):
    try:
        return json.loads((j / f"{n}.json").read_text())
    except Exception as exc:  # a failed step: show its stderr instead
        return {"error": str(exc), "stderr": (j / f"{n}.err").read_text()[-600:]}
gap = load("02_gap"); print("gap top:", [(k["name"][:40], k["pct"]) for k in gap.get("kernels", [])[:3]])
ev = load("12_eval")
print("eval:", {k: ev.get(k) for k in ("status", "speedup", "ci", "p_value")},
      "medians", ev.get("baseline", {}).get("median"), ev.get("candidate", {}).get("median"))
print("suggest top:", [(e["lever"], round(e["score"], 3)) for e in load("08_suggest").get("experiments", [])[:4]])
EOF
tar -czf "$OUT/e2e.tar.gz" -C "$W" json
