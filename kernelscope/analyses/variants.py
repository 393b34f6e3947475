"""``kscope gap --group-by variant``: one row per compiled variant of a kernel, not per name; and which code
object a variant ran (``fits``: the launch's block, registers and shared memory against the binary's).

A name is not an identity: Triton's autotuner benchmarks every config under one kernel name, templates and
library heuristics launch several instantiations. What a launch records of its variant — grid, block,
registers per thread (AMD: VGPRs), shared memory / LDS — tells them apart; two launches with the same name
and the same four are one variant. A grid that changes with the problem size makes a new row too (a
different launch configuration of the same binary): the grid is what the workload ran.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from kernelscope.analyses.gap import Windows, gap
from kernelscope.analyses.occupancy import arch_limits, roundup
from kernelscope.identity import Identities
from kernelscope.model import KernelLaunch, Profile
from kernelscope.model.codeobj import CodeObject, KernelCode
from kernelscope.model.gap import GapOptions, GapResult, KernelRow, Variant
from kernelscope.model.launches import ConstexprArg, TensorArg, TritonLaunch
from kernelscope.model.ops import FLOAT_DTYPES, SHORT_DTYPES

_TAG = " #variant"  # the row label until the names are restored; kept readable for c++filt and the classifier


def by_variant(profile: Profile, options: GapOptions, windows: Windows | None = None) -> GapResult:
    """The gap table with a row per (name, variant); each row's ``variant`` says which."""
    labels: dict[tuple[str, Variant], str] = {}
    first: dict[str, KernelLaunch] = {}
    launches = []
    for k in profile.launches:
        label = labels.setdefault((k.name, Variant.of(k)), f"{k.name}{_TAG}{len(labels)}")
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
        row.name, row.variant = launch.name, Variant.of(launch)
        row.kind, row.category, row.function, row.dtype = ident.kind, ident.category, ident.function, ident.dtype
    result.options = options
    return result


def _threads(k: KernelCode) -> int | None:
    """Threads per block the compiled kernel launches with: Triton's num_warps x its warp size."""
    warps = k.metadata.get("num_warps")
    size = k.metadata.get("warp_size") or k.wave_size or (32 if k.vendor == "nvidia" else None)
    return warps * size if isinstance(warps, int) and isinstance(size, int) else None


def fits(v: Variant, k: KernelCode) -> bool:
    """Whether the compiled kernel ``k`` can be what launches of variant ``v`` ran: every fact both sides
    record agrees. Threads per block against Triton's num_warps x warp size; registers per thread exactly
    on NVIDIA, on AMD rounded up to the VGPR allocation granule on both sides (profilers report the
    allocated count); shared memory against Triton's launch ``shared`` (what CUPTI reports for a Triton
    kernel: checked on the H100), else at least the static size. LDS is not compared on AMD (whether a
    profiler's LDS counts the static segment, the dynamic one or both is not pinned down here)."""
    if v.block is not None and (threads := _threads(k)) is not None and v.block[0] * v.block[1] * v.block[2] != threads:
        return False
    if v.registers is not None:
        if k.vendor == "nvidia" and k.registers is not None and v.registers != k.registers:
            return False
        regs = k.arch_vgpr if k.arch_vgpr is not None else k.vgpr
        if k.vendor == "amd" and regs is not None:
            lim = arch_limits(k.arch)
            unit = lim.get("vgpr_alloc_granule", k.wave_size) if lim else None
            if roundup(regs, unit) != roundup(v.registers, unit):
                return False
    if v.shared_bytes is not None and k.vendor == "nvidia":
        launched = k.metadata.get("shared")
        if isinstance(launched, int) and not isinstance(launched, bool):
            return v.shared_bytes == launched
        return k.shared_bytes is None or v.shared_bytes >= k.shared_bytes
    return True


def named(
    name: str, code: Sequence[CodeObject], idents: Identities | None = None
) -> list[tuple[CodeObject, KernelCode]]:
    """The code objects' kernels of ``name``: the same name, or the same demangled one."""
    if idents is None:
        idents = _identities([name], code)
    want = idents[name].demangled
    return [(o, k) for o in code for k in o.kernels if k.name == name or idents[k.name].demangled == want]


def code_for(
    v: Variant, name: str, code: Sequence[CodeObject], idents: Identities | None = None
) -> list[tuple[CodeObject, KernelCode]]:
    """The kernels of ``name`` that fit ``v``: one is the variant's code; several, an ambiguity to report
    (configs that differ only where the launch records nothing)."""
    return [(o, k) for o, k in named(name, code, idents) if fits(v, k)]


def _identities(names: Sequence[str], code: Sequence[CodeObject]) -> Identities:
    """One classification (one c++filt run) of the rows' names and the code objects' kernel names."""
    idents = Identities()
    idents.add([*names, *(k.name for o in code for k in o.kernels)])
    return idents


def which_ran(code: Sequence[CodeObject], rows: Sequence[KernelRow]) -> dict[int, Variant | None]:
    """``id(kernel)`` -> the top variant of a timed row that this code object fits, or None for another
    binary of that kernel (an autotuner's cache holds every config it tried). Kernels of names no row
    times, or whose top variant fits none of their binaries (another build), are absent: nothing is known."""
    timed = [r for r in rows if r.top_variant is not None and r.kind != "memory"]
    idents = _identities([r.name for r in timed], code)
    out: dict[int, Variant | None] = {}
    for row in timed:
        same = named(row.name, code, idents)
        fit = [k for _, k in same if row.top_variant is not None and fits(row.top_variant, k)]
        for _, k in same if fit else []:
            out.setdefault(id(k), None)
        for k in fit:
            out[id(k)] = row.top_variant
    return out


def attach_code(result: GapResult, code: Sequence[CodeObject]) -> None:
    """Each kernel row's code objects: those that fit its variant (``--group-by variant``) or the variant
    with most of its time, and the compiled config when exactly one fits."""
    rows = [r for part in [result, *result.phases] for r in part.kernels]
    idents = _identities([r.name for r in rows], code)
    for row in rows:
        v = row.variant or row.top_variant
        if v is None or row.kind == "memory":
            continue
        fit = code_for(v, row.name, code, idents)
        row.code = [o.path for o, _ in fit]
        row.config = config_of(fit[0][1]) if len(fit) == 1 else None


def config_of(k: KernelCode) -> dict[str, object]:
    """What the code object says of its compiled config: Triton's launch options (num_warps, num_stages,
    num_ctas, maxnreg, shared) and its constexprs where the metadata names them (``constants``)."""
    keys = ("num_warps", "num_stages", "num_ctas", "maxnreg", "shared")
    out = {n: k.metadata[n] for n in keys if k.metadata.get(n) is not None}
    constants = k.metadata.get("constants")
    if isinstance(constants, dict):
        out.update({str(n): v for n, v in constants.items() if isinstance(v, int | float | str | bool)})
    return out


def attach_launches(result: GapResult, launches: Sequence[TritonLaunch]) -> None:
    """Each Triton row's config from ``kscope profile``'s launch ledger: the constexprs (``BLOCK_SIZE_M``...)
    and launch options of the launches of its kernel whose grid, threads and shared memory are its variant's
    (``--group-by variant``) or its top variant's. Triton's cache metadata has the options but not the
    constexprs; the ledger saw them. Left as it is where no config or several fit. A row whose name gave no
    dtype gets its launches' tensors' floating type, where they have exactly one."""
    by: dict[tuple[str, tuple[int, ...]], list[TritonLaunch]] = {}
    for launch in launches:
        by.setdefault((launch.kernel, tuple(launch.grid)), []).append(launch)
    for row in (r for part in [result, *result.phases] for r in part.kernels):
        v = row.variant or row.top_variant
        if v is None or v.grid is None or row.kind == "memory":
            continue
        ran = [x for x in by.get((row.name, v.grid), ()) if _ran(x, v)]
        found = {msgspec.json.encode(c): c for c in map(_ledger_config, ran)}
        if len(found) == 1:
            row.config = {**next(iter(found.values())), **(row.config or {})}
        if row.dtype is None:  # the name did not say; its launches' tensors do (one floating type: that one)
            floats = {SHORT_DTYPES.get(a.dtype) for x in ran for a in x.args if isinstance(a, TensorArg)}
            floats &= FLOAT_DTYPES
            row.dtype = floats.pop() if len(floats) == 1 else None


def _ran(launch: TritonLaunch, v: Variant) -> bool:
    """Whether a ledger launch can be a launch of variant ``v``: a block of num_warps warps (32 or 64
    lanes) and Triton's shared memory where the profiler recorded them."""
    threads = v.block[0] * v.block[1] * v.block[2] if v.block is not None else None
    if threads is not None and threads not in (launch.num_warps * 32, launch.num_warps * 64):
        return False
    return v.shared_bytes is None or v.shared_bytes == launch.shared


def _ledger_config(launch: TritonLaunch) -> dict[str, object]:
    out: dict[str, object] = {a.name: a.value for a in launch.args if isinstance(a, ConstexprArg)}
    out.update(num_warps=launch.num_warps, num_stages=launch.num_stages, num_ctas=launch.num_ctas)
    return out
