"""kscope tune against the tuners people use today, measured side by side in one run (issue 14).

    python bench/tune.py single  --out DIR   # one GPU: kscope vs @triton.autotune vs a vLLM-style script
    python bench/tune.py repeat  --out DIR   # one GPU: 20 re-runs of each one's final choice
    python bench/tune.py scaling --out DIR --gpus N [--sweep batch|mlp|llm] [--counts 1,2]  # kscope local, Ray, static
    python bench/tune.py faults  --out DIR   # one GPU: candidates that fault, a worker killed mid-sweep
    python bench/tune.py overhead --out DIR  # CPU: the scheduler's cost per candidate

The kernel is the Triton tutorial's matmul (examples/tune/matmul.py) over its 115-config space and four
shapes (square, tall, skinny M, MLP); every binary is compiled once up front (in parallel processes, into
Triton's disk cache) so each method is measured tuning, not compiling.

- ``triton``: ``@triton.autotune`` as shipped: serial ``do_bench`` (25 ms warm-up, 100 ms of reps, the mean)
  per config, in the calling process.
- ``vllm``: what vLLM's and SGLang's MoE tuning scripts do per config: capture 10 calls in a CUDA graph,
  replay it 20 times, take the mean; over GPUs, shapes are handed out statically (``shapes[i::N]``).
- ``kscope``: ``kscope tune`` (the factory form, a fresh store): stage 1 per candidate in a worker process,
  stage 2 on the finalists.
- Referee: the union of every method's pick and kscope's stage-1 top 5 per shape, timed interleaved
  (30 rounds) in one worker; regret = referee time of a pick / the best referee time - 1.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "examples" / "tune")]
MATMUL = str(ROOT / "examples" / "tune" / "matmul.py")
SPACE = ROOT / "examples" / "tune" / "matmul_space.yaml"


def _space() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from kernelscope.tune.space import enumerate_candidates, read_space

    space = read_space(SPACE)
    configs = [c.config for c, why in enumerate_candidates(space, space.shapes[:1]) if why is None]
    return configs, list(space.shapes)


def _compile_one(config: dict[str, Any]) -> float:
    import matmul
    import torch

    t0 = time.perf_counter()
    matmul.factory(config, {"M": 256, "N": 256, "K": 256})()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def precompile(configs: list[dict[str, Any]], procs: int = 8) -> float:
    """Every config's binary into Triton's disk cache, in parallel processes: seconds of wall time."""
    t0 = time.perf_counter()
    ctx = __import__("multiprocessing").get_context("spawn")
    with cf.ProcessPoolExecutor(procs, mp_context=ctx) as pool:
        list(pool.map(_compile_one, configs))
    return time.perf_counter() - t0


def _key(c: dict[str, Any]) -> str:
    return json.dumps(c, sort_keys=True)


def triton_autotune(shape: dict[str, Any], configs: list[dict[str, Any]] | None = None) -> tuple[dict[str, Any], float]:
    """``@triton.autotune`` over ``configs`` (default: the kernel's own): its pick and its wall time."""
    import matmul
    import torch
    import triton

    kernel = matmul.matmul_kernel
    if configs is not None:
        kernel = triton.autotune(
            configs=[
                triton.Config(
                    {k: v for k, v in c.items() if k.isupper()}, num_warps=c["num_warps"], num_stages=c["num_stages"]
                )
                for c in configs
            ],
            key=["M", "N", "K"],
        )(matmul._matmul)
    kernel.cache.clear()
    spec = matmul.launch(shape)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    kernel[spec["grid"]](*spec["args"])
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    best = kernel.best_config
    pick = {**best.kwargs, "num_warps": best.num_warps, "num_stages": best.num_stages}
    return pick, wall


def vllm_style(shape: dict[str, Any], configs: list[dict[str, Any]]) -> tuple[dict[str, Any], float, int]:
    """vLLM's benchmark_config: a graph of 10 calls, 5 warm-up replays, the mean of 20 timed replays.
    Only Triton's OutOfResources is caught, as there. Its pick, wall time and configs that failed."""
    import matmul
    import torch
    from triton.runtime.errors import OutOfResources

    t0 = time.perf_counter()
    best, best_us, failed = None, float("inf"), 0
    for config in configs:
        try:
            fn = matmul.factory(config, shape)
            fn()
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(10):
                    fn()
            torch.cuda.synchronize()
            for _ in range(5):
                graph.replay()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            lat = []
            for _ in range(20):
                start.record()
                graph.replay()
                end.record()
                end.synchronize()
                lat.append(start.elapsed_time(end))
            us = sum(lat) / (20 * 10) * 1000
            del graph
        except OutOfResources:
            failed += 1
            continue
        if us < best_us:
            best, best_us = config, us
    assert best is not None
    return best, time.perf_counter() - t0, failed


def kscope_tune(
    store: Path, shapes: list[dict[str, Any]], workers: int | None, executor: str = "local", **kw: Any
) -> Any:
    from kernelscope import api

    return api.tune(
        f"{MATMUL}:factory",
        space=SPACE,
        shapes=shapes,
        reference=f"{MATMUL}:reference",
        device="cuda",
        store=store,
        workers=workers,
        executor=executor,
        **kw,
    )


def referee(shape: dict[str, Any], configs: list[dict[str, Any]], rounds: int = 30) -> dict[str, float]:
    """Interleaved re-timing of ``configs`` in one kscope worker: config key -> median µs over rounds."""
    times = compare_rounds(shape, configs, rounds, 30.0)
    return {_key(c): statistics.median(col) for c, col in zip(configs, zip(*times, strict=True), strict=True)}


_EXECUTOR: list[Any] = []  # one kscope worker for every referee and re-run, started on first use


def _executor() -> Any:
    if not _EXECUTOR:
        from kernelscope.tune.executors import LocalExecutor, probe_devices
        from kernelscope.tune.protocol import Setup

        setup = Setup(kind="factory", spec=f"{MATMUL}:factory", device="cuda", cwd=str(ROOT))
        _EXECUTOR.append(LocalExecutor(setup, probe_devices(), workers=1))
        _EXECUTOR[0].start()
    return _EXECUTOR[0]


def compare_rounds(
    shape: dict[str, Any], configs: list[dict[str, Any]], rounds: int, round_ms: float, seed: int = 0
) -> list[list[float]]:
    from kernelscope.tune.executors import Item
    from kernelscope.tune.protocol import Compare, CompareReply

    got: list[Any] = []
    job = Compare(shape=shape, configs=configs, rounds=rounds, round_ms=round_ms, seed=seed)
    _executor().map([Item(job=job, timeout_s=600)], lambda item, reply, w: got.append(reply) or [])
    reply = got[0]
    assert isinstance(reply, CompareReply) and len(reply.kept) == len(configs), reply
    return reply.times


def single(out: Path) -> dict[str, Any]:
    import torch

    configs, shapes = _space()
    result: dict[str, Any] = {"device": torch.cuda.get_device_name(), "configs": len(configs), "shapes": shapes}
    result["precompile_s"] = precompile(configs)
    rows = []
    for shape in shapes:
        t_pick, t_wall = triton_autotune(shape)
        v_pick, v_wall, v_failed = vllm_style(shape, configs)
        rows.append(
            {
                "shape": shape,
                "triton": {"pick": t_pick, "wall_s": t_wall},
                "vllm": {"pick": v_pick, "wall_s": v_wall, "failed": v_failed},
            }
        )
    store = Path(tempfile.mkdtemp()) / "tune.sqlite"
    t0 = time.perf_counter()
    r = kscope_tune(store, shapes, workers=1)
    result["kscope_wall_s"] = time.perf_counter() - t0
    result["kscope_counts"] = r.counts()
    for row, best in zip(rows, r.best, strict=True):
        ok = sorted((o for o in r.candidates if o.shape == best.shape and o.status == "ok"), key=lambda o: o.median_us)
        stage1_s = sum(o.seconds for o in r.candidates if o.shape == best.shape)
        row["kscope"] = {
            "pick": best.config,
            "tie": best.tie,
            "wall_s_shape_stage1": stage1_s,
            "rounds": best.rounds,
            "runner_up_ratio": best.runner_up_ratio,
        }
        pool = {
            _key(c): c for c in [row["triton"]["pick"], row["vllm"]["pick"], best.config, *[o.config for o in ok[:5]]]
        }
        ref = referee(row["shape"], list(pool.values()))
        best_us = min(ref.values())
        row["referee_us"] = {k: v for k, v in ref.items()}
        row["best_us"] = best_us
        for who in ("triton", "vllm", "kscope"):
            row[who]["regret"] = ref[_key(row[who]["pick"])] / best_us - 1
        row["finalists"] = [o.config for o in ok[:6]]
    result["rows"] = rows
    (out / "tune_single.json").write_text(json.dumps(result, indent=1))
    return result


def repeat(
    out: Path, runs: int = 20, single_json: Path | None = None, shapes: int | None = None, skip: int = 0
) -> dict[str, Any]:
    """``runs`` re-runs of each method's final choice among the same finalists (kscope's stage 2 + decide;
    @triton.autotune over the same configs): how often each returns its first answer (kscope: or a tie
    that contains it)."""
    from kernelscope.analyses.tune import decide

    first = json.loads((single_json or out / "tune_single.json").read_text())
    rows = []
    for row in first["rows"][skip:][:shapes]:
        shape, fin = row["shape"], row["finalists"]
        k_runs, t_runs = [], []
        for i in range(runs):
            b = decide(shape, fin, compare_rounds(shape, fin, 10, 20.0, seed=i))
            k_runs.append({"pick": b.config, "tie": b.tie})
            t_runs.append(triton_autotune(shape, fin)[0])
        w = k_runs[0]["pick"]
        same_k = sum(r["pick"] == w or w in r["tie"] for r in k_runs)
        modal = max(({_key(p): p for p in t_runs}).values(), key=lambda p: sum(q == p for q in t_runs))
        rows.append(
            {
                "shape": shape,
                "kscope_consistent": same_k,
                "kscope_ties": sum(bool(r["tie"]) for r in k_runs),
                "triton_modal_share": sum(q == modal for q in t_runs),
                "triton_agrees_with_kscope": sum(q == w or q in k_runs[0]["tie"] for q in t_runs),
                "runs": runs,
                "kscope": k_runs,
                "triton": t_runs,
            }
        )
        (out / "tune_repeat.json").write_text(json.dumps(rows, indent=1))  # each shape: a timeout keeps the rest
    return {"rows": rows}


def static_split(shapes: list[dict[str, Any]], configs: list[dict[str, Any]], gpus: int, how: str = "_static") -> float:
    """The vLLM way over ``gpus``: process i takes shapes[i::gpus], tunes them serially (``how``: the
    vLLM-style script, or ``_kstatic``: a one-worker kscope sweep); wall time."""
    t0 = time.perf_counter()
    procs = []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")  # run beside other runs of this host
    for i in range(gpus):
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": visible[i] if len(visible) > i and visible[i] else str(i)}
        procs.append(subprocess.Popen([sys.executable, __file__, how, json.dumps(shapes[i::gpus])], env=env))
    for p in procs:
        assert p.wait() == 0
    return time.perf_counter() - t0


# scaling --sweep batch: a vLLM-style batch-size sweep (their MoE tuners take M = 1..4096 per weight shape),
# here over a Llama-3-8B MLP up-projection (N=14336, K=4096); every M a multiple of 16, so one binary per config
BATCH_M = (16, 32, 64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096, 8192)
BATCH_SHAPES = [{"M": m, "N": 14336, "K": 4096} for m in BATCH_M]
# scaling --sweep mlp: the same batch sizes over both of the MLP's weight shapes (up/gate, then down): twice the
# work, since a sweep's fixed cost (starting the workers) weighs less the longer the sweep
MLP_SHAPES = BATCH_SHAPES + [{"M": m, "N": 4096, "K": 14336} for m in BATCH_M]
# scaling --sweep llm: twice the batch sizes of mlp over the same two weight shapes (48 shapes, ≈ 400 s of one
# GPU's work; SGLang's MoE tuner reports 44 min for one batch size), every M still a multiple of 16
LLM_M = (16, 32, 48, 64, 80, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768, 1024, 1536, 2048, 2560, 3072, 4096)
LLM_M += (5120, 6144, 8192)
LLM_SHAPES = [{"M": m, "N": 14336, "K": 4096} for m in LLM_M] + [{"M": m, "N": 4096, "K": 14336} for m in LLM_M]
SWEEPS = {"batch": BATCH_SHAPES, "mlp": MLP_SHAPES, "llm": LLM_SHAPES}
METHODS = ("kscope_local", "kscope_ray", "static", "kscope_static")


def scaling(
    out: Path,
    gpus: int,
    stage1_ms: float = 20.0,
    methods: tuple[str, ...] = METHODS,
    sweep: str = "small",
    counts: list[int] | None = None,
) -> dict[str, Any]:
    """kscope (local, Ray) and the static split on 1, 2 and ``gpus`` GPUs (or ``counts``); the JSON is
    rewritten after every run, so a run cut short keeps what it measured. ``static`` is the vLLM-style script
    split by shape; ``kscope_static`` is kscope's own sweep, one single-worker ``kscope tune`` per GPU over
    shapes[i::N]: the same timing, only the hand-out differs (its one-GPU run is kscope_local's)."""
    import msgspec

    from kernelscope.analyses.tune import busy_share

    configs, base = _space()
    shapes = base if sweep == "small" else SWEEPS[sweep]
    result: dict[str, Any] = {"gpus": gpus, "configs": len(configs), "shapes": shapes, "stage1_ms": stage1_ms}
    result["precompile_s"] = precompile(configs)
    runs: dict[str, dict[int, float]] = {m: {} for m in methods}
    result["wall_s"] = runs
    counts = counts or sorted({1, min(2, gpus), gpus})
    path = out / f"tune_scaling_{sweep}_{'-'.join(methods)}_{'-'.join(map(str, counts))}of{gpus}gpu.json"
    if "kscope_ray" in methods:  # the cluster is up before the sweep, as after `ray start`: its start is not tuning
        import ray

        t0 = time.perf_counter()
        ray.init(address="local", log_to_driver=False, include_dashboard=False)  # its own, beside other runs
        result["ray_start_s"] = time.perf_counter() - t0
    for n in counts:
        for name in methods:
            t0 = time.perf_counter()
            if name in ("static", "kscope_static"):
                runs[name][n] = static_split(shapes, configs, n, "_static" if name == "static" else "_kstatic")
                path.write_text(json.dumps(result, indent=1))
                continue
            r = kscope_tune(
                Path(tempfile.mkdtemp()) / "tune.sqlite",
                shapes,
                workers=n,
                executor="local" if name == "kscope_local" else "ray",
                stage1_ms=stage1_ms,
                warmup_ms=10.0,
            )
            runs[name][n] = time.perf_counter() - t0
            run = f"{name}_{n}"
            result.setdefault("counts", {})[run] = r.counts()
            result.setdefault("busy", {})[run] = busy_share(r)
            result.setdefault("usage", {})[run] = msgspec.to_builtins(r.usage)
            result.setdefault("phases", {})[run] = {
                "wall_s": r.wall_s,
                "stage1_end_s": r.stage1_end_s,
                "work_end_s": r.work_end_s,
            }
            result.setdefault("picks", {})[run] = [_key(b.config) for b in r.best]
            result.setdefault("ties", {})[run] = [[_key(c) for c in b.tie] for b in r.best]  # a pick that differs
            path.write_text(json.dumps(result, indent=1))
        result["efficiency"] = {
            k: {m: v[1] / (m * t) for m, t in v.items() if m > 1} for k, v in runs.items() if 1 in v
        }
        path.write_text(json.dumps(result, indent=1))
    return result


def faults(out: Path) -> dict[str, Any]:
    from kernelscope import api

    space = ROOT / "bench" / "data" / "tune_gpu_faults.yaml"
    target = ROOT / "bench" / "data" / "tune_gpu_faults.py"
    store = Path(tempfile.mkdtemp()) / "tune.sqlite"
    t0 = time.perf_counter()
    r = api.tune(
        f"{target}:factory",
        space=space,
        reference=f"{target}:reference",
        device="cuda",
        store=store,
        workers=1,
        timeout_s=20,
        stage1_ms=30,
    )
    wall = time.perf_counter() - t0
    rows = [
        {"config": o.config, "status": o.status, "seconds": o.seconds, "attempts": o.attempts, "detail": o.detail[:300]}
        for o in r.candidates
    ]
    lost = sum(1 for o in r.candidates if o.config["MODE"] == "ok" and o.status != "ok")
    result = {"wall_s": wall, "counts": r.counts(), "good_lost": lost, "rows": rows}
    (out / "tune_faults.json").write_text(json.dumps(result, indent=1))
    return result


def overhead(out: Path, n: int = 400) -> dict[str, Any]:
    """Per-candidate cost of the scheduler (protocol, store write, hand-out) around a no-op candidate."""
    from kernelscope import api
    from kernelscope.model.tune import Space

    target = ROOT / "bench" / "data" / "tune_noop.py"
    result = {}
    for workers in (1, 2):
        store = Path(tempfile.mkdtemp()) / "tune.sqlite"
        space = Space(params={"I": list(range(n))}, shapes=[{"N": 1}])
        t0 = time.perf_counter()
        r = api.tune(
            f"{target}:factory",
            space=space,
            device="cpu",
            store=store,
            workers=workers,
            stage1_ms=0.0,
            warmup_ms=0.0,
            rounds=2,
            round_ms=0.0,
        )
        wall = time.perf_counter() - t0
        work = sum(o.seconds for o in r.candidates)
        result[f"workers_{workers}"] = {
            "candidates": n,
            "wall_s": wall,
            "ms_per_candidate": 1e3 * wall / n,
            "worker_s": work,
        }
    (out / "tune_overhead.json").write_text(json.dumps(result, indent=1))
    return result


def _static(shapes_json: str) -> None:
    configs, _ = _space()
    for shape in json.loads(shapes_json):
        vllm_style(shape, configs)


def _kstatic(shapes_json: str) -> None:
    store = Path(tempfile.mkdtemp()) / "tune.sqlite"
    kscope_tune(store, json.loads(shapes_json), workers=1, stage1_ms=20.0, warmup_ms=10.0)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("_static", "_kstatic"):
        {"_static": _static, "_kstatic": _kstatic}[sys.argv[1]](sys.argv[2])
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["single", "repeat", "scaling", "faults", "overhead"])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--gpus", type=int, default=2)
    p.add_argument("--methods", default=",".join(METHODS), help="scaling: which of " + ", ".join(METHODS))
    p.add_argument(
        "--sweep", choices=["small", *SWEEPS], default="small", help="scaling: 4 shapes, 12 M, 12 M x 2 N, 24 M x 2 N"
    )
    p.add_argument("--counts", help="scaling: GPU counts to run, e.g. 1,4 (default 1, 2, --gpus)")
    p.add_argument("--single", type=Path, help="repeat: the tune_single.json of an earlier run")
    p.add_argument("--shapes", type=int, help="repeat: only the first N shapes of that run")
    p.add_argument("--skip", type=int, default=0, help="repeat: after skipping its first K shapes")
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    if a.what == "scaling":
        counts = [int(c) for c in a.counts.split(",")] if a.counts else None
        res = scaling(a.out, a.gpus, methods=tuple(a.methods.split(",")), sweep=a.sweep, counts=counts)
    elif a.what == "repeat":
        res = repeat(a.out, single_json=a.single, shapes=a.shapes, skip=a.skip)
    else:
        res = {"single": single, "faults": faults, "overhead": overhead}[a.what](a.out)
    print(json.dumps(res, indent=1, default=str)[:6000])
    for ex in _EXECUTOR:
        ex.close()


if __name__ == "__main__":
    main()
