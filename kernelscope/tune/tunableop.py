"""``kscope tune --tunableop -- CMD``: record a workload's GEMMs, tune them offline over the GPUs, write a
results file PyTorch loads, say what it can change, and A/B the workload without and with it.

1. Record: CMD runs once with ``PYTORCH_TUNABLEOP_ENABLED=1 TUNING=0 RECORD_UNTUNED=1`` (the offline-tuning
   switches of ``torch.cuda.tunable``, torch 2.6+); each device writes ``tunableop_untuned<ordinal>.csv``.
2. Tune: the unique GEMMs are split over one kscope process per GPU (pinned by ``CUDA_VISIBLE_DEVICES`` /
   ``HIP_VISIBLE_DEVICES``), each calling ``tune_gemm_in_file`` on its share and ``write_file``. Not
   ``mgpu_tune_gemm_in_file``: its process pool fails as a whole when one worker dies; here a crashed or
   hung worker costs only its own share, which is reported as not tuned.
3. Merge: the workers' rows, under the validators they wrote — identical on one machine, and never made up.
4. Report per GEMM the chosen solution and whether TunableOp had anything but ``Default`` to try. CUDA builds
   register only ``Default`` (``TunableGemm.h``; so on our H100 with torch 2.11): there the file cannot
   change a GEMM, the result says so, and the recorded shapes become a ``kscope tune`` space for Inductor's
   GEMM autotuning (Triton templates against cuBLAS, ``examples/tune/inductor_mm.py``) — NVIDIA's real search.
5. A/B: the workload runs interleaved without and with the file (``ab_runs`` each after one warm-up per side),
   compared with ``analyses.stats.compare``. Not ``kscope eval``: its two sides are git trees under allowed
   globs, while these differ only by environment. Skipped when every GEMM runs ``Default`` on both sides.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import msgspec
import yaml

from kernelscope.analyses.stats import compare
from kernelscope.errors import FormatError, InputError, ToolFailedError
from kernelscope.loop import runner
from kernelscope.model.stats import MIN_SAMPLES
from kernelscope.model.tunableop import (
    AB,
    DEFAULT_SOLUTION,
    Gemm,
    Results,
    Solution,
    TunableOpResult,
    TunedGemm,
    WorkerRun,
)
from kernelscope.model.tune import Params, Space, key
from kernelscope.process import run_group
from kernelscope.tune.executors import probe_devices
from kernelscope.tune.slot import pinned_env
from kernelscope.tune.writers import read_tunableop, read_untuned, write_tunableop, write_untuned

Progress = Callable[[str], None]
PREFIX = "PYTORCH_TUNABLEOP_"
ROCM_VALIDATORS = ("ROCBLAS_VERSION", "HIPBLASLT_VERSION")  # present iff the build registers non-Default solutions
RESULTS = "tunableop_results%d.csv"  # TunableOp puts the device ordinal at %d, so each rank reads its own copy
TAIL = 400

# The worker: tune one share of the GEMMs on the one visible GPU, then write every result with its validators.
# torch < 2.10 keeps results in memory until write_file; newer builds (write_file removed: seen on 2.11, H100)
# append each tuned row to PYTORCH_TUNABLEOP_FILENAME as it goes, which _partial then reads
_TUNE = (
    "import sys, torch.cuda.tunable as t; t.tune_gemm_in_file(sys.argv[1]); "
    "w = getattr(t, 'write_file', None); w is None or w(sys.argv[2])"
)

# Inductor's GEMM search: cuBLAS alone (eager's choice, the incumbent), Triton templates alone, the best of both.
INDUCTOR_SPACE = Space(params={"backends": ["ATEN", "TRITON", "ATEN,TRITON"]}, incumbent={"backends": "ATEN"})

_DTYPES = {"float": "float32", "double": "float64", "Half": "float16", "BFloat16": "bfloat16", "tf32": "tf32"}
_OPS = {"GemmTunableOp": "mm", "GemmAndBiasTunableOp": "addmm", "GemmStridedBatchedTunableOp": "bmm"}
_PARAMS = re.compile(r"([nt])([nt])_(\d+)_(\d+)_(\d+)(?:_B_(\d+))?_ld_\d+_\d+_\d+$")


def gemm_shape(gemm: Gemm) -> Params | None:
    """The GEMM as torch sees it, ``{"op", "M", "N", "K", "batch", "dtype", "layout"}``; None for the ops no
    Inductor mm template covers (scaled FP8, complex).

    TunableOp signs the column-major BLAS call that computes torch's row-major ``C = A @ B`` as
    ``C^T = B^T A^T``: its ``m`` is torch's N, its first operand torch's B. ``layout`` is torch's: a letter
    for A then B, ``T`` where the operand is a transposed view (``x @ W.t()`` of a Linear is ``NT``).
    """
    kind, _, rest = gemm.op.partition("_")
    type_name, _, _ = rest.rpartition("_")
    found = _PARAMS.match(gemm.params)
    if kind not in _OPS or type_name not in _DTYPES or found is None:
        return None
    ta, tb, m, n, k, batch = found.groups()
    return {
        "op": _OPS[kind],
        "M": int(n),
        "N": int(m),
        "K": int(k),
        "batch": int(batch or 1),
        "dtype": _DTYPES[type_name],
        "layout": (tb + ta).upper(),
    }


def _cost(gemm: Gemm) -> int:
    shape = gemm_shape(gemm)
    if shape is None:
        return 1
    return int(shape["M"]) * int(shape["N"]) * int(shape["K"]) * int(shape["batch"])


def split(gemms: Sequence[Gemm], workers: int) -> list[list[Gemm]]:
    """The GEMMs in at most ``workers`` shares of near-equal work: largest first (M·N·K·batch), each to the
    least loaded share, so one worker does not get all the big ones."""
    if workers < 1:
        raise InputError(f"{workers} tuning workers: expected at least 1")
    shares: list[list[Gemm]] = [[] for _ in range(min(workers, len(gemms)))]
    load = [0] * len(shares)
    for g in sorted(gemms, key=_cost, reverse=True):
        i = load.index(min(load))
        shares[i].append(g)
        load[i] += _cost(g)
    return shares


def merge(parts: Sequence[tuple[str, Results]]) -> Results:
    """One results set from the workers': their validators (which must agree) and every GEMM's first row."""
    if not parts:
        raise InputError("no worker results to merge")
    first, validators = parts[0][0], parts[0][1].validators
    rows: dict[tuple[str, str], Solution] = {}
    for name, part in parts:
        if part.validators != validators:
            raise ToolFailedError(f"workers {first} and {name} report different TunableOp validators: not one build")
        for s in part.solutions:
            rows.setdefault(s.gemm.key, s)
    return Results(validators=dict(validators), solutions=list(rows.values()))


def alternatives(solution: str | None, validators: Mapping[str, str]) -> bool:
    """Whether TunableOp had a solution other than ``Default`` for a GEMM: always on ROCm builds (rocBLAS and
    hipBLASLt register theirs), never on CUDA builds unless one was chosen."""
    return solution not in (None, DEFAULT_SOLUTION) or any(v in validators for v in ROCM_VALIDATORS)


def outcomes(gemms: Sequence[Gemm], merged: Results, owner: Mapping[tuple[str, str], str]) -> list[TunedGemm]:
    """Each recorded GEMM with the solution the merged results give it (None: not tuned)."""
    chosen = {s.gemm.key: s for s in merged.solutions}
    report = []
    for g in gemms:
        s = chosen.get(g.key)
        solution = s.solution if s else None
        report.append(
            TunedGemm(
                gemm=g,
                shape=gemm_shape(g),
                solution=solution,
                time_ms=s.time_ms if s else None,
                alternatives=alternatives(solution, merged.validators),
                worker=owner.get(g.key, ""),
            )
        )
    return report


def write_inductor_space(shapes: Sequence[Params], path: Path) -> Path:
    """``INDUCTOR_SPACE`` with ``shapes``: the file ``kscope tune examples/tune/inductor_mm.py:factory --space``
    takes."""
    doc = msgspec.to_builtins(msgspec.structs.replace(INDUCTOR_SPACE, shapes=list(shapes)))
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _tail(path: Path) -> str:
    return path.read_bytes().decode(errors="replace").strip()[-TAIL:] if path.exists() else ""


def _clean_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without TunableOp switches, so each phase sets exactly its own."""
    return {k: v for k, v in env.items() if not k.startswith(PREFIX)}


def record(cmd: list[str], out: Path, *, cwd: Path, env: Mapping[str, str], timeout_s: float) -> list[Path]:
    """Run ``cmd`` once recording its untuned GEMMs; the untuned files it wrote (one per device)."""
    folder = out / "untuned"
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("tunableop_untuned*.csv"):  # TunableOp appends; a previous run's rows would stay
        stale.unlink()
    switches = {"ENABLED": "1", "TUNING": "0", "RECORD_UNTUNED": "1"}
    run_env = {**_clean_env(env), **{PREFIX + k: v for k, v in switches.items()}}
    run_env[PREFIX + "UNTUNED_FILENAME"] = str(folder / "tunableop_untuned.csv")
    run_env[PREFIX + "FILENAME"] = str(folder / RESULTS)  # never a stray results file in the cwd
    with (out / "record.stdout").open("wb") as so, (out / "record.stderr").open("wb") as se:
        try:
            rc, _ = run_group(cmd, cwd=cwd, env=run_env, timeout_s=timeout_s, stdout=so, stderr=se)
        except OSError as exc:
            raise InputError(f"{cmd[0]}: cannot start ({exc.strerror or exc})") from None
    if rc != 0:
        why = f"ran past {timeout_s:g} s" if rc is None else f"exited with status {rc}"
        tail = _tail(out / "record.stderr")
        raise ToolFailedError(f"the workload {why} while recording GEMMs; its stderr ends: {tail}")
    files = sorted(folder.glob("tunableop_untuned*.csv"))
    if not files:
        raise InputError(
            f"`{' '.join(cmd)}` ran no GEMM through TunableOp (no untuned file in {folder}); it must run torch "
            "matmuls on a GPU in this process tree with torch 2.6 or newer"
        )
    return files


def _tune_one(
    name: str, gpu: str, vendor: str, share: list[Gemm], folder: Path, env: Mapping[str, str], timeout_s: float
) -> tuple[WorkerRun, Results | None]:
    folder.mkdir(parents=True, exist_ok=True)
    untuned, written = write_untuned(share, folder / "untuned.csv"), folder / "results.csv"
    switches = {"ENABLED": "1", "TUNING": "1", "RECORD_UNTUNED": "0", "FILENAME": str(folder / RESULTS)}
    run_env = pinned_env({**_clean_env(env), **{PREFIX + k: v for k, v in switches.items()}}, gpu, vendor)
    with (folder / "stdout").open("wb") as so, (folder / "stderr").open("wb") as se:
        rc, wall = run_group(
            [sys.executable, "-c", _TUNE, str(untuned), str(written)],
            cwd=folder,
            env=run_env,
            timeout_s=timeout_s,
            stdout=so,
            stderr=se,
        )
    results = read_tunableop(written) if written.exists() else _partial(folder)
    run = WorkerRun(
        name=name,
        gpu=gpu,
        gemms=len(share),
        returncode=rc,
        timed_out=rc is None,
        wall_s=round(wall, 3),
        tuned=len(results.solutions) if results else 0,
        detail="" if rc == 0 else _tail(folder / "stderr"),
    )
    return run, results


def _partial(folder: Path) -> Results | None:
    """What a worker that died mid-way appended in real time (torch 2.8+); None if it left a line half-written."""
    for path in sorted(folder.glob(RESULTS.replace("%d", "*"))):
        try:
            return read_tunableop(path)
        except FormatError:
            return None
    return None


def _ab(
    cmd: list[str],
    cwd: Path,
    env: Mapping[str, str],
    use: Mapping[str, str],
    runs: int,
    metric: str | None,
    timeout_s: float,
    progress: Progress | None,
) -> AB:
    name = metric or "wall_s"
    sides = {"baseline": _clean_env(env), "tuned": {**_clean_env(env), **use}}
    samples: dict[str, list[float]] = {"baseline": [], "tuned": []}
    for i in range(runs + 1):  # the first round warms both sides (caches, compilation) and is not counted
        for side, side_env in sides.items():
            if progress:
                progress(f"A/B {side} {'warm-up' if i == 0 else f'{i}/{runs}'}")
            o = runner.run(cmd, shell=False, cwd=cwd, env=side_env, timeout_s=timeout_s)
            value = o.wall_s if metric is None else o.metrics.get(metric)
            if o.returncode != 0 or value is None:
                why = f"the {side} run {_failed(o, name)}"
                return AB(metric=name, baseline=samples["baseline"], tuned=samples["tuned"], skipped=why)
            if i:
                samples[side].append(value)
    base, tuned = samples["baseline"], samples["tuned"]
    return AB(metric=name, baseline=base, tuned=tuned, comparison=compare(base, tuned, seed=0))


def _failed(o: runner.Outcome, metric: str) -> str:
    if o.timed_out:
        return "timed out"
    if o.returncode is None:
        return "; ".join(o.problems)
    if o.returncode:
        return f"exited with status {o.returncode}: {o.stderr_tail[-TAIL:]}"
    return f"reported no {metric} (print KSCOPE_METRIC {metric}=VALUE)"


def tune_tunableop(
    cmd: list[str],
    out_dir: Path,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    gpus: int | None = None,
    record_timeout_s: float = 1800.0,
    tune_timeout_s: float = 3600.0,
    ab_runs: int = MIN_SAMPLES,
    metric: str | None = None,
    progress: Progress | None = None,
) -> TunableOpResult:
    """Record, tune, merge, report and A/B ``cmd`` (see the module); everything is written under ``out_dir``.

    Args:
        cmd: the workload, argv.
        out_dir: created if needed; holds ``untuned/``, ``workers/wN/`` (each worker's files and output),
            the merged ``tunableop_results<i>.csv`` (one identical copy per device, as TunableOp reads the
            file named for its ordinal) and ``inductor_space.yaml``.
        cwd, env: where and with what the workload runs (default: here, this environment, less any
            ``PYTORCH_TUNABLEOP_*`` switch, which each phase sets itself).
        gpus: tuning workers, one per GPU (default: every visible GPU).
        record_timeout_s, tune_timeout_s: limits for the recording run and for each worker.
        ab_runs: timed runs per side (0: no A/B); at least ``MIN_SAMPLES`` for a verdict.
        metric: a ``KSCOPE_METRIC`` name the workload prints to compare; default its wall time.
    """
    if ab_runs and ab_runs < MIN_SAMPLES:
        raise InputError(f"--ab-runs {ab_runs}: 0 (no A/B) or at least {MIN_SAMPLES} per side")
    t0 = time.monotonic()
    base = dict(os.environ if env is None else env)
    where = Path.cwd() if cwd is None else cwd
    out_dir.mkdir(parents=True, exist_ok=True)
    devices = probe_devices()
    if not devices.ids:
        raise InputError("kscope tune --tunableop needs a GPU visible to PyTorch; none is")
    if progress:
        progress("recording the workload's GEMMs")
    files = record(cmd, out_dir, cwd=where, env=base, timeout_s=record_timeout_s)
    gemms = list({g.key: g for f in files for g in read_untuned(f)}.values())
    if not gemms:
        raise InputError(f"the workload recorded no GEMM ({', '.join(map(str, files))} are empty)")
    shares = split(gemms, min(gpus or len(devices.ids), len(devices.ids)))
    if progress:
        progress(f"tuning {len(gemms)} GEMMs on {len(shares)} GPUs")
    with ThreadPoolExecutor(max_workers=len(shares)) as pool:
        folders = [out_dir / "workers" / f"w{i}" for i in range(len(shares))]
        jobs = [
            pool.submit(_tune_one, f.name, gpu, devices.vendor, share, f, base, tune_timeout_s)
            for f, gpu, share in zip(folders, devices.ids, shares, strict=False)
        ]
        done = [j.result() for j in jobs]
    workers = [run for run, _ in done]
    parts = [(run.name, res) for run, res in done if res is not None]
    if not parts:
        raise ToolFailedError(f"no tuning worker wrote results; {workers[0].name} ended: {workers[0].detail}")
    merged = merge(parts)
    paths = [write_tunableop(merged, out_dir / (RESULTS % i)) for i in range(len(devices.ids))]
    use = {PREFIX + "ENABLED": "1", PREFIX + "TUNING": "0", PREFIX + "FILENAME": str(out_dir / RESULTS)}

    owner = {g.key: run.name for run, share in zip(workers, shares, strict=True) for g in share}
    report = outcomes(gemms, merged, owner)
    shapes = list({key(t.shape): t.shape for t in report if t.shape is not None}.values())
    space = write_inductor_space(shapes, out_dir / "inductor_space.yaml")
    notes = _notes(report, workers, space)
    if not ab_runs:
        ab = None
    elif not any(t.alternatives for t in report):
        ab = AB(metric=metric or "wall_s", baseline=[], tuned=[], skipped="every GEMM runs Default on both sides")
    else:
        ab = _ab(cmd, where, base, use, ab_runs, metric, record_timeout_s, progress)
    return TunableOpResult(
        command=cmd,
        untuned_files=[str(f) for f in files],
        gemms=report,
        workers=workers,
        validators=merged.validators,
        results_path=str(paths[0]),
        env=use,
        ab=ab,
        inductor_shapes=shapes,
        inductor_space=str(space),
        notes=notes,
        wall_s=round(time.monotonic() - t0, 3),
    )


def _notes(report: Sequence[TunedGemm], workers: Sequence[WorkerRun], space: Path) -> list[str]:
    """What the result can and cannot do, said plainly."""
    notes = []
    tuned = [t for t in report if t.solution is not None]
    if tuned and not any(t.alternatives for t in tuned):
        notes.append(
            f"TunableOp had only the Default solution for all {len(tuned)} GEMMs (a CUDA build registers no other), "
            "so its results file cannot change any of them; NVIDIA's GEMM search space is Inductor's autotuning: "
            f"kscope tune examples/tune/inductor_mm.py:factory --space {space}"
        )
    won = [t for t in tuned if t.solution != DEFAULT_SOLUTION]
    if won:
        notes.append(f"{len(won)} of {len(tuned)} GEMMs chose a solution other than Default")
    missing = len(report) - len(tuned)
    failed = [w.name for w in workers if w.returncode != 0]
    if missing:
        why = f"workers {', '.join(failed)} failed" if failed else "tune_gemm_in_file skipped them (see its warnings)"
        notes.append(f"{missing} of {len(report)} GEMMs were not tuned: {why}; they keep running Default")
    return notes
