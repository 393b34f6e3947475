"""Tuned configs for a Triton kernel at run time, from a file ``kscope tune`` wrote.

Standard library only, so a kernel repository can copy this one file (it raises ``ValueError``, not
kernelscope's errors, for the same reason). It reads kscope's generic file (``write_generic``:
``{"schema": "kernelscope.tune-configs.v1", "configs": [{"shape": .., "config": ..}]}``) or a vLLM/SGLang
fused-MoE file (``{"<batch size>": config}``, ``write_triton_json``).

Which stored shape serves a call: only those whose names other than the batch name all equal the call's;
among them the one with the call's batch size, else the one nearest to it by absolute difference (the rule
vLLM applies to its ``M`` keys), the smaller on a tie. No such shape: no tuned config (``configs_for``
returns ``[]``; the pruner keeps every config, so the autotuner searches as before).

Wiring it into ``@triton.autotune``::

    from kernels.loader import prune_configs  # this file, vendored

    @triton.autotune(
        configs=[triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w) for m, n, w in SPACE],
        key=["M", "N", "K"],
        prune_configs_by={"early_config_prune": prune_configs("tuned/matmul.json")},
    )
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr): ...

Triton calls the pruner as ``early_config_prune(configs, named_args, **kwargs)`` once per autotune key;
the stored shape's names are looked up in the kernel's arguments (pass ``shape=`` to map them otherwise, e.g.
``shape=lambda args: {"M": args["M"], "dtype": str(args["a_ptr"].dtype)}``). The tuned config is kept if it
is in ``configs``; if not, it is built with the class of ``configs[0]``, so the pick never needs a re-tune.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

SCHEMA = "kernelscope.tune-configs.v1"
ATTRS = ("num_warps", "num_stages", "num_ctas", "maxnreg")  # triton.Config attributes; the rest are meta-params
Entry = tuple[dict[str, Any], dict[str, Any]]  # (shape, config)


def load(path: str | Path, batch: str = "M") -> list[Entry]:
    """Every (shape, config) stored in ``path``; a fused-MoE file's keys become ``{batch: int(key)}``."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read tuned configs ({exc})") from None
    if isinstance(doc, dict) and doc.get("schema") == SCHEMA:
        return [(dict(c["shape"]), dict(c["config"])) for c in doc["configs"]]
    if isinstance(doc, dict) and all(isinstance(v, dict) for k, v in doc.items() if k != "triton_version"):
        try:
            return [({batch: int(k)}, dict(v)) for k, v in doc.items() if k != "triton_version"]
        except ValueError:
            pass
    raise ValueError(f'{path}: expected a {SCHEMA} file or a {{"<batch size>": config}} file')


def nearest(entries: list[Entry], shape: Mapping[str, Any], batch: str = "M") -> dict[str, Any] | None:
    """The config of the stored shape that serves ``shape`` (see the module's rule), or None."""
    asked = shape.get(batch)
    found: tuple[tuple[int, int], dict[str, Any]] | None = None
    for stored, config in entries:
        if any(n not in shape or shape[n] != v for n, v in stored.items() if n != batch):
            continue
        have = stored.get(batch)
        if have is None or asked is None:
            if have == asked:
                return config
            continue
        rank = (abs(int(have) - int(asked)), int(have))
        if found is None or rank < found[0]:
            found = rank, config
    return None if found is None else found[1]


def configs_for(path: str | Path, *, batch: str = "M", **shape: Any) -> list[dict[str, Any]]:
    """``[config]`` tuned for ``shape`` (exact, else nearest batch size), or ``[]`` when none applies."""
    config = nearest(load(path, batch), shape, batch)
    return [] if config is None else [config]


def prune_configs(
    path: str | Path, *, batch: str = "M", shape: Callable[[dict[str, Any]], Mapping[str, Any]] | None = None
) -> Callable[..., list[Any]]:
    """An ``early_config_prune`` that keeps only the tuned config for each call (the file is read now)."""
    entries = load(path, batch)

    def prune(configs: list[Any], named_args: dict[str, Any], **kwargs: Any) -> list[Any]:
        config = nearest(entries, shape(named_args) if shape else {**named_args, **kwargs}, batch)
        if config is None or not configs:
            return configs
        attrs = {k: v for k, v in config.items() if k in ATTRS}
        meta = {k: v for k, v in config.items() if k not in ATTRS}
        same = [c for c in configs if c.kwargs == meta and all(getattr(c, k, None) == v for k, v in attrs.items())]
        return same[:1] or [type(configs[0])(meta, **attrs)]

    return prune
