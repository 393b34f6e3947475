"""Nsight Compute summaries: where a kernel's warps stall (source page), and its FLOPs and DRAM bytes.

``summarize`` is pure over the source readers' records: per kernel, the headline, the stall-reason
breakdown of all PC samples, the top instructions by samples with their neighbours, and the top source
lines (only where the report has a line table: lines are never guessed). ``roofline_costs`` reads the
counters ncu's own roofline sections chart (docs/ncu.md): FLOPs as SpeedOfLight_RooflineChart and the
hierarchical half/single/double/tensor charts count them, DRAM bytes as ``dram__bytes_read + _write``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

import msgspec

from kernelscope import readers
from kernelscope.errors import InputError
from kernelscope.model import KernelLaunch
from kernelscope.model.hotspots import ContextInstruction, Hotspot, SourceLine
from kernelscope.model.ncu import (
    KernelSummary,
    NcuKernelSource,
    NcuResult,
    NcuSource,
    SassInstruction,
    StallShare,
    stall_label,
)
from kernelscope.model.source import SourceLocation
from kernelscope.readers import _ncu

UNATTRIBUTED = "unattributed"


def _ranked(counts: Counter[str]) -> dict[str, int]:
    return dict(sorted(((r, n) for r, n in counts.items() if n), key=lambda rn: (-rn[1], rn[0])))


def _pct(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0


def _total(values: Iterable[int | None]) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _breakdown(insts: list[SassInstruction], total: int) -> list[StallShare]:
    samples: Counter[str] = Counter()
    not_issued: Counter[str] = Counter()
    for i in insts:
        samples.update(i.reasons)
        not_issued.update(i.not_issued_reasons)
    shares = [
        StallShare(reason=r, label=stall_label(r), samples=n, pct=_pct(n, total), not_issued=not_issued[r])
        for r, n in _ranked(samples).items()
    ]
    rest = total - sum(samples.values())
    if rest > 0:  # samples whose reason the input has no column for
        rest_ni = sum(i.not_issued for i in insts) - sum(not_issued.values())
        shares.append(StallShare(reason=UNATTRIBUTED, label="Unattributed", samples=rest, pct=_pct(rest, total),
                                 not_issued=rest_ni))  # fmt: skip
    return shares


def _hotspots(k: NcuKernelSource, total: int, top: int, context: int) -> list[Hotspot]:
    insts = k.instructions

    def offset(address: int) -> int | None:
        return None if k.function_start is None else address - k.function_start

    ranked = sorted((i for i in range(len(insts)) if insts[i].samples), key=lambda i: (-insts[i].samples, i))
    out = []
    for i in ranked[:top]:
        h = insts[i]
        around = insts[max(0, i - context) : i + context + 1]
        out.append(
            Hotspot(
                address=h.address,
                offset=offset(h.address),
                instruction=h.sass,
                stall_samples=h.samples,
                pct=_pct(h.samples, total),
                not_issued=h.not_issued,
                reasons=_ranked(Counter(h.reasons)),
                executed=h.executed,
                thread_executed=h.thread_executed,
                source=str(h.source) if h.source else None,
                source_text=_line_text(k, h.source.file, h.source.line) if h.source else None,
                context=[
                    ContextInstruction(address=c.address, offset=offset(c.address), instruction=c.sass,
                                       stall_samples=c.samples)
                    for c in around
                ],
            )
        )  # fmt: skip
    return out


def _line_text(k: NcuKernelSource, file: str, line: int) -> str | None:
    lines = k.source_text.get(file)
    return lines[line - 1].strip() if lines and 0 < line <= len(lines) else None


def _lines(k: NcuKernelSource, total: int, top: int) -> list[SourceLine]:
    by_line: dict[SourceLocation, list[SassInstruction]] = {}
    for i in k.instructions:
        if i.source is not None:
            by_line.setdefault(i.source, []).append(i)
    stats = []
    for loc, insts in by_line.items():
        samples, executed = sum(i.samples for i in insts), _total(i.executed for i in insts)
        reasons: Counter[str] = Counter()
        for i in insts:
            reasons.update(i.reasons)
        line = SourceLine(
            source=str(loc),
            file=loc.file,
            line=loc.line,
            text=_line_text(k, loc.file, loc.line),
            stall_samples=samples,
            pct=_pct(samples, total),
            reasons=_ranked(reasons),
            executed=executed,
            instructions=len(insts),
        )
        stats.append(((-samples, -(executed or 0), loc.file, loc.line), line))
    return [line for _, line in sorted(stats, key=lambda ks: ks[0])[:top]]


def _notes(k: NcuKernelSource, fmt: str, total: int | None, breakdown: list[StallShare]) -> list[str]:
    notes = []
    if total is None:
        notes.append("no source counters for this kernel (profile it with --section SourceCounters, in --set full)")
    elif total == 0:
        notes.append("no warp samples at any instruction (a kernel shorter than ncu's sampling interval?)")
    rest = next((s for s in breakdown if s.reason == UNATTRIBUTED), None)
    if rest is not None:
        notes.append(
            f"{rest.samples} samples ({rest.pct:.1f}%) have no reason column in this export "
            "(ncu's CSV omits reasons such as warpgroup_arrive); the .ncu-rep splits them"
        )
    if total is None:
        return notes
    if not k.has_line_info:
        why = "the report has no line table (compile with -lineinfo)" if fmt == "ncu-rep" else "the CSV has none"
        notes.append(f"no source lines: {why}")
    elif not k.source_text:
        notes.append("source text not imported (ncu --import-source yes): lines are shown as file:line only")
    return notes


def summarize_kernel(k: NcuKernelSource, fmt: str, *, top: int = 10, context: int = 2) -> KernelSummary:
    """One kernel's headline, stall breakdown, ``top`` hotspots (each with ``context`` neighbours) and lines."""
    total = sum(i.samples for i in k.instructions) if k.has_counters else None
    breakdown = _breakdown(k.instructions, total) if total else []
    return KernelSummary(
        index=k.index,
        name=k.name,
        mangled=k.mangled,
        duration_ns=k.duration_ns,
        headline=k.headline,
        stall_samples=total,
        not_issued_samples=sum(i.not_issued for i in k.instructions) if k.has_counters else None,
        executed=_total(i.executed for i in k.instructions),
        instructions=len(k.instructions),
        stall_breakdown=breakdown,
        hotspots=_hotspots(k, total, top, context) if total else [],
        lines=_lines(k, total or 0, top) if k.has_counters else [],
        notes=_notes(k, fmt, total, breakdown),
    )


def selector(kernel: str | None) -> Callable[[str, str | None], bool]:
    """``(name, mangled) -> bool``: does a kernel match the ``--kernel`` regular expression (all when None)."""
    if kernel is None:
        return lambda name, mangled: True
    try:
        pattern = re.compile(kernel)
    except re.error as exc:
        raise InputError(f"--kernel {kernel!r}: not a regular expression ({exc})") from None
    return lambda name, mangled: bool(pattern.search(name) or (mangled and pattern.search(mangled)))


def summarize(
    source: NcuSource, *, kernel: str | None = None, top: int = 10, context: int = 2, headline_only: bool = False
) -> NcuResult:
    """Summaries of the kernels whose name matches ``kernel`` (a regular expression; all when None).

    Raises ``InputError`` for a bad option, a pattern that matches no kernel, or an input whose matching
    kernels have no source counters at all (nothing ``kscope ncu`` could show beyond ``kscope gap``); with
    ``headline_only`` (a report's section) such an input gives each kernel's headline and a note instead.
    """
    if top < 1 or context < 0:
        raise InputError(f"--top {top} / --context {context}: need top >= 1 and context >= 0")
    wanted = selector(kernel)
    chosen = [k for k in source.kernels if wanted(k.name, k.mangled)]
    if not chosen:
        names = ", ".join(sorted({k.name[:60] for k in source.kernels})[:10])
        raise InputError(f"--kernel {kernel!r} matches none of the {len(source.kernels)} kernel(s): {names}")
    notes = list(source.notes)
    if not any(k.has_counters for k in chosen):
        missing = (
            "no source counters for any kernel (the SourceCounters section was not collected); re-profile with "
            "ncu --set full --import-source yes (or add --section SourceCounters)"
        )
        if not headline_only:
            raise InputError(f"{source.path}: {missing}")
        notes.append(f"headline only: {missing}")
    kernels = [summarize_kernel(k, source.format, top=top, context=context) for k in chosen]
    return NcuResult(source=source.path, format=source.format, kernels=kernels, notes=notes)


# --- roofline costs ------------------------------------------------------------------------------------

# (op, FLOPs per thread instruction) as ncu's roofline charts weigh them: an FMA is 2; half-precision
# instructions are packed pairs (HADD2/HMUL2/HFMA2), so x2 and x4 (SpeedOfLight_HierarchicalHalfRooflineChart).
FP_OPS = (
    ("dadd", 1), ("dmul", 1), ("dfma", 2),
    ("fadd", 1), ("fmul", 1), ("ffma", 2),
    ("hadd", 2), ("hmul", 2), ("hfma", 4),
)  # fmt: skip
# Tensor-core work by source type, counted by ncu as 2 operations per multiply-add. Integer types are not FLOPs.
_TENSOR = re.compile(r"^(sm__ops_path_tensor_src_(?!int)\w+?)\.sum(?:\.per_cycle_elapsed)?$")
_SPARSITY = re.compile(r"_sparsity_o(?:n|ff)$")
DRAM_BYTES = ("dram__bytes_read.sum", "dram__bytes_write.sum")


class NcuCost(msgspec.Struct, kw_only=True):
    """One kernel's work from ncu's counters, and the metrics each number came from (None: not collected)."""

    name: str
    duration_ns: int
    flops: float | None
    tensor_flops: float | None  # the part of ``flops`` on tensor cores
    dram_bytes: float | None
    duration_source: str
    flops_source: str | None
    dram_bytes_source: str | None


def _count(m: dict[str, float], counter: str) -> tuple[float, str] | None:
    """A counter's total: its ``.sum``, or ``.sum.per_cycle_elapsed`` x its unit's elapsed cycles (the
    rate ncu's roofline charts read, as they turn it back into a count)."""
    if f"{counter}.sum" in m:
        return m[f"{counter}.sum"], f"{counter}.sum"
    unit = counter.split("__", 1)[0]
    rate, cycles = m.get(f"{counter}.sum.per_cycle_elapsed"), m.get(f"{unit}__cycles_elapsed.avg")
    if rate is None or cycles is None:
        return None
    return round(rate * cycles), f"{counter}.sum.per_cycle_elapsed*{unit}__cycles_elapsed.avg"


def _fp_terms(m: dict[str, float]) -> list[tuple[float, str]]:
    terms = []
    for op, weight in FP_OPS:
        for unit in ("sm", "smsp"):
            found = _count(m, f"{unit}__sass_thread_inst_executed_op_{op}_pred_on")
            if found is not None:
                terms.append((weight * found[0], f"{weight}*{found[1]}" if weight > 1 else found[1]))
                break
    return terms


def _tensor_terms(m: dict[str, float]) -> list[tuple[float, str]]:
    counters = {match[1] for name in m if (match := _TENSOR.match(name))}
    # Where ncu exposes both a total and its sparsity split (sm_80..89 vs sm_90+ names), count the total only.
    counters = {c for c in counters if not (_SPARSITY.search(c) and _SPARSITY.sub("", c) in counters)}
    return [found for c in sorted(counters) if (found := _count(m, c)) is not None]


def _source(terms: list[tuple[float, str]]) -> str:
    used = [src for v, src in terms if v]
    return " + ".join(used) if used else "0 in every counter read: " + ", ".join(src for _, src in terms)


def cost(launch: KernelLaunch) -> NcuCost:
    """FLOPs, DRAM bytes and duration of one Nsight Compute launch, from its raw-page metric names."""
    m = launch.metrics or {}
    tensor = _tensor_terms(m)
    terms = _fp_terms(m) + tensor
    reads, writes = (m.get(k) for k in DRAM_BYTES)
    has_bytes = reads is not None and writes is not None
    details_label, raw_metric = _ncu.FIELDS["duration_ns"]
    return NcuCost(
        name=launch.name,
        duration_ns=launch.duration_ns,
        flops=sum(v for v, _ in terms) if terms else None,
        tensor_flops=sum(v for v, _ in tensor) if tensor else None,
        dram_bytes=(reads or 0.0) + (writes or 0.0) if has_bytes else None,
        duration_source=raw_metric if raw_metric in m else details_label,
        flops_source=_source(terms) if terms else None,
        dram_bytes_source=" + ".join(DRAM_BYTES) if has_bytes else None,
    )


def roofline_costs(report_path: str | Path) -> list[NcuCost]:
    """Per kernel of an ``.ncu-rep`` (or its ``--page raw --csv`` export): FLOPs, DRAM bytes, duration.

    FLOPs are None when the report holds none of the counters ncu's roofline sections use (profile with
    ``--set full`` or ``--section SpeedOfLight_RooflineChart``); likewise DRAM bytes without ``dram__bytes_*``.
    """
    profile = readers.read(report_path)
    if not set(profile.formats) <= {"ncu-rep", "ncu-csv"}:
        raise InputError(f"{report_path}: not an Nsight Compute report or CSV export ({', '.join(profile.formats)})")
    return [cost(k) for k in profile.launches]
