"""``kscope gap --group-by variant``: one row per compiled variant of a kernel, not per name.

A name is not an identity: Triton's autotuner benchmarks every config under one kernel name, templates and
library heuristics launch several instantiations. What a launch records of its variant — grid, block,
registers per thread (AMD: VGPRs), shared memory / LDS — tells them apart; two launches with the same name
and the same four are one variant. A grid that changes with the problem size makes a new row too (a
different launch configuration of the same binary): the grid is what the workload ran.
"""

from __future__ import annotations

import msgspec

from kernelscope.analyses.gap import Windows, gap
from kernelscope.identity import Identities
from kernelscope.model import Dim3, KernelLaunch, Profile
from kernelscope.model.gap import GapOptions, GapResult, Variant

_Key = tuple[str, tuple[int, int, int] | None, tuple[int, int, int] | None, int | None, int | None]
_TAG = " #variant"  # the row label until the names are restored; kept readable for c++filt and the classifier


def _dims(d: Dim3 | None) -> tuple[int, int, int] | None:
    return None if d is None else (d.x, d.y, d.z)


def _key(k: KernelLaunch) -> _Key:
    return (
        k.name,
        _dims(k.grid_blocks),
        _dims(k.block),
        k.registers if k.registers is not None else k.vgpr,
        k.lds_bytes,
    )


def variant_of(k: KernelLaunch) -> Variant:
    _, grid, block, regs, shared = _key(k)
    return Variant(grid=grid, block=block, registers=regs, shared_bytes=shared)


def by_variant(profile: Profile, options: GapOptions, windows: Windows | None = None) -> GapResult:
    """The gap table with a row per (name, variant); each row's ``variant`` says which."""
    labels: dict[_Key, str] = {}
    first: dict[str, KernelLaunch] = {}
    launches = []
    for k in profile.launches:
        label = labels.setdefault(_key(k), f"{k.name}{_TAG}{len(labels)}")
        first.setdefault(label, k)
        launches.append(msgspec.structs.replace(k, name=label))
    result = gap(
        msgspec.structs.replace(profile, launches=launches), msgspec.structs.replace(options, group_by="name"), windows
    )
    idents = Identities()
    idents.add(k.name for k in first.values())
    for row in result.kernels:
        launch = first.get(row.name)
        if launch is None:  # a memory row
            continue
        ident = idents[launch.name]
        row.name, row.variant = launch.name, variant_of(launch)
        row.kind, row.category, row.function, row.dtype = ident.kind, ident.category, ident.function, ident.dtype
    result.options = options
    return result
