"""``kscope tune`` and ``kscope tune show|export``: search a kernel's configs, and read the store."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from kernelscope.cache import cache_path
from kernelscope.errors import InputError
from kernelscope.model.launches import LaunchedShape
from kernelscope.model.tunableop import TunableOpResult
from kernelscope.model.tune import Candidate, Device, Outcome, Params, Screened, Space, Timing, TuneResult
from kernelscope.tune.protocol import Setup
from kernelscope.tune.space import check, enumerate_candidates, parse_shape, read_space
from kernelscope.tune.sweep import Options, Progress, sweep


def default_store() -> Path:
    return cache_path("tune.sqlite", "KSCOPE_TUNE_STORE")


def tune(
    target: str,
    *,
    space: Path | Space | None = None,
    shapes: Sequence[str | Params] = (),
    reference: str | None = None,
    launch: str | None = None,
    sources: Sequence[Path] = (),
    from_trace: Path | None = None,
    kernel: str | None = None,
    screen: str | None = None,
    signature: dict[str, str] | None = None,
    screen_only: bool = False,
    atol: float = 1e-2,
    rtol: float = 1e-2,
    device: Device = "auto",
    timing: Timing = "cold",
    incumbent: str | Params | None = None,
    store: Path | None = None,
    executor: str = "local",
    ray_address: str | None = None,
    workers: int | None = None,
    timeout_s: float = 60.0,
    stage1_ms: float = 20.0,
    warmup_ms: float = 10.0,
    rounds: int = 10,
    round_ms: float = 20.0,
    top: int = 6,
    within: float = 0.05,
    retry_failed: bool = False,
    progress: Progress | None = None,
) -> TuneResult:
    """Tune ``target``: ``FILE.py:FACTORY`` with a ``space`` (``SPACE.yaml`` or a ``Space``), or
    ``FILE.py:KERNEL`` decorated with ``@triton.autotune`` (its configs are the space; ``launch`` builds its
    arguments per shape). Shapes: ``shapes`` (``"M=4096,N=4096"`` or dicts), else those ``kernel`` (a regex)
    was launched with in ``from_trace`` (kscope profile's launch ledger), else the space's own.
    ``screen`` (an architecture: ``gfx942``, ``sm_90``...) compiles every candidate offline first and drops
    those whose code object cannot run or cannot win; ``screen_only`` stops there (no GPU needed).
    Every result goes to ``store`` (default: the user's cache) as it arrives; what it has is reused."""
    kind: Literal["factory", "triton"] = "factory"
    kernel_key = ""
    if space is None:
        from kernelscope.tune.triton_target import autotune_space
        from kernelscope.tune.triton_target import kernel_key as jit_key

        kind, chosen, kernel_key = "triton", autotune_space(target), jit_key(target)
    else:
        chosen = read_space(space) if isinstance(space, Path) else space
        check(chosen, "space")
    wanted = [parse_shape(s) if isinstance(s, str) else dict(s) for s in shapes]
    if not wanted and from_trace is not None:
        traced = _traced(target, kind, from_trace, kernel)
        wanted = [t.shape for t in traced]
        names = set(chosen.params) or {n for c in chosen.configs for n in c}
        if incumbent is None and traced[0].config is not None:
            # what the workload's autotuner chose for its most launched shape, in the space's names (the
            # ledger also records launch options left at their defaults, e.g. num_ctas=1)
            picked = {k: v for k, v in traced[0].config.items() if k in names}
            incumbent = picked if set(picked) == names else None
    wanted = wanted or list(chosen.shapes)
    if incumbent is not None:
        import msgspec

        chosen = msgspec.structs.replace(
            chosen, incumbent=parse_shape(incumbent) if isinstance(incumbent, str) else incumbent
        )
        check(chosen, "--incumbent")
    for name, value in (("--rounds", rounds), ("--top", top)):
        if value < 2:
            raise InputError(f"{name} {value}: expected at least 2")
    screened = None
    if screen is not None:
        screened = _screen(target, chosen, wanted, screen, signature, timeout_s)
        if screen_only:
            return TuneResult(best=[], candidates=[], target=target, screen_arch=screen, screen=screened)
    elif screen_only:
        raise InputError("--screen-only needs --screen ARCH")
    setup = Setup(
        kind=kind,
        spec=target,
        reference=reference,
        launch=launch,
        atol=atol,
        rtol=rtol,
        device=device,
        timing=timing,
        cwd=str(Path.cwd()),
        kernel_key=kernel_key + "".join(f"\0{_file_hash(p)}" for p in sources),
    )
    opts = Options(
        store=store or default_store(),
        executor=executor,
        ray_address=ray_address,
        workers=workers,
        timeout_s=timeout_s,
        stage1_ms=stage1_ms,
        warmup_ms=warmup_ms,
        rounds=rounds,
        round_ms=round_ms,
        top=top,
        within=within,
        retry_failed=retry_failed,
        pruned={Candidate(shape=c.shape, config=c.config).id: _dropped(c) for c in screened or () if not c.kept},
    )
    result = sweep(setup, chosen, wanted, opts, progress)
    if screened is not None:
        result.screen_arch, result.screen = screen or "", screened
    return result


def _file_hash(path: Path) -> str:
    import hashlib

    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise InputError(f"--source {path}: {exc.strerror or exc}") from None


def _traced(target: str, kind: str, trace: Path, kernel: str | None) -> list[LaunchedShape]:
    from kernelscope.tune.ledger_shapes import shapes_from_trace

    keys = None
    if kind == "triton":
        from kernelscope.tune.triton_target import autotune_keys

        keys = autotune_keys(target)
    return shapes_from_trace(trace, kernel=kernel, keys=keys)


def _screen(
    target: str, space: Space, shapes: list[Params], arch: str, signature: dict[str, str] | None, timeout_s: float
) -> list[Screened]:
    """The screen's verdict on every candidate, kept or not, with what its code object uses."""
    from kernelscope.tune.screen import screen

    found = screen(
        target,
        space,
        shapes,
        signature={**space.signature, **(signature or {})},
        arch=arch,
        timeout_s=max(timeout_s, 120.0),
    )
    out = []
    for cand, broken in enumerate_candidates(space, shapes):
        if broken is not None:
            continue
        dropped = found.dropped.get(cand.id)
        k = found.kernels.get(cand.id)
        occ = k.occupancy if k is not None else None
        regs = k.vgpr if k is not None and k.vendor == "amd" else (k.registers if k is not None else None)
        shared = k.metadata.get("shared") if k is not None else None
        out.append(
            Screened(
                shape=cand.shape,
                config=cand.config,
                kept=dropped is None,
                status=dropped.status if dropped else "ok",
                detail=dropped.detail if dropped else "",
                registers=dropped.registers if dropped else regs,
                shared_bytes=dropped.shared_bytes if dropped else (shared if isinstance(shared, int) else None),
                occupancy=f"{occ.pct:.0f}% ({occ.limiter})" if occ is not None else "",
            )
        )
    return out


def _dropped(c: Screened) -> Outcome:
    return Outcome(
        shape=c.shape,
        config=c.config,
        status=c.status,
        detail=c.detail,
        registers=c.registers,
        shared_bytes=c.shared_bytes,
    )


def write_winners(result: TuneResult, kind: str, dest: Path, *, batch: str = "M") -> list[Path]:
    """``kscope tune --write KIND DEST``: the winners as vLLM's or SGLang's fused-MoE JSON files in the folder
    ``DEST`` (``triton-json``, ``sglang-json``), or one generic ``{shape: config}`` file (``generic``)."""
    from kernelscope.tune import writers

    if not result.best:
        raise InputError("--write: no shape has a winner (every candidate failed); nothing to write")
    if kind == "generic":
        return [writers.write_generic(result, dest)]
    if kind in ("triton-json", "sglang-json"):
        return writers.write_triton_json(
            result, dest, batch=batch, flavor="vllm" if kind == "triton-json" else "sglang"
        )
    raise InputError(f"--write {kind}: expected triton-json, sglang-json or generic (tunableop: with --tunableop)")


def tunableop(
    command: list[str],
    out_dir: Path,
    *,
    gpus: int | None = None,
    ab_runs: int = 5,
    metric: str | None = None,
    timeout_s: float = 3600.0,
    progress: Callable[[str], None] | None = None,
) -> TunableOpResult:
    """``kscope tune --tunableop -- CMD``: record the workload's GEMMs (TunableOp), tune them over the GPUs in
    kscope's own worker processes, write a results file PyTorch accepts, and A/B the workload with it."""
    from kernelscope.tune.tunableop import tune_tunableop

    if not command:
        raise InputError("--tunableop: give the workload after --, e.g. kscope tune --tunableop -- python train.py")
    return tune_tunableop(
        command,
        out_dir,
        gpus=gpus,
        ab_runs=ab_runs,
        metric=metric,
        record_timeout_s=timeout_s,
        tune_timeout_s=timeout_s,
        progress=progress,
    )


def tune_results(*, store: Path | None = None, target: str | None = None, status: str | None = None) -> list[Outcome]:
    """``kscope tune show|export``: the stored outcomes (newest first), optionally of one target or status."""
    from kernelscope.tune.store import Store

    path = store or default_store()
    if not path.is_file():
        raise InputError(f"{path}: no tuning store yet (run kscope tune first, or pass --store)")
    db = Store(path)
    try:
        rows = [o for t, o in db.rows(target=target) if status is None or o.status == status]
    finally:
        db.close()
    return rows
