"""``kscope tune`` and ``kscope tune show|export``: search a kernel's configs, and read the store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kernelscope.cache import cache_path
from kernelscope.errors import InputError
from kernelscope.model.tune import Device, Outcome, Params, Space, Timing, TuneResult
from kernelscope.tune.protocol import Setup
from kernelscope.tune.space import check, parse_shape, read_space
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
    stage1_ms: float = 100.0,
    warmup_ms: float = 25.0,
    rounds: int = 10,
    round_ms: float = 20.0,
    top: int = 6,
    within: float = 0.05,
    retry_failed: bool = False,
    progress: Progress | None = None,
) -> TuneResult:
    """Tune ``target``: ``FILE.py:FACTORY`` with a ``space`` (``SPACE.yaml`` or a ``Space``), or
    ``FILE.py:KERNEL`` decorated with ``@triton.autotune`` (its configs are the space; ``launch`` builds its
    arguments per shape). ``shapes`` adds to the space's own (``"M=4096,N=4096"`` or dicts). Every result
    goes to ``store`` (default: the user's cache) as it arrives; what the store already has is reused."""
    kind = "factory"
    if space is None:
        from kernelscope.tune.triton_target import autotune_space

        kind, chosen = "triton", autotune_space(target)
    else:
        chosen = read_space(space) if isinstance(space, Path) else space
        check(chosen, "space")
    wanted = [parse_shape(s) if isinstance(s, str) else dict(s) for s in shapes] or list(chosen.shapes)
    if incumbent is not None:
        import msgspec

        chosen = msgspec.structs.replace(chosen, incumbent=parse_shape(incumbent) if isinstance(incumbent, str) else incumbent)
        check(chosen, "--incumbent")
    for name, value in (("--rounds", rounds), ("--top", top)):
        if value < 2:
            raise InputError(f"{name} {value}: expected at least 2")
    setup = Setup(
        kind=kind, spec=target, reference=reference, launch=launch, atol=atol, rtol=rtol, device=device,
        timing=timing, cwd=str(Path.cwd()),
    )  # fmt: skip
    opts = Options(
        store=store or default_store(), executor=executor, ray_address=ray_address, workers=workers,
        timeout_s=timeout_s, stage1_ms=stage1_ms, warmup_ms=warmup_ms, rounds=rounds, round_ms=round_ms, top=top, within=within,
        retry_failed=retry_failed,
    )  # fmt: skip
    return sweep(setup, chosen, wanted, opts, progress)


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
