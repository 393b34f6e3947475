"""Nsight Compute's source page from an ``.ncu-rep``: per-SASS-instruction counters, SASS text, source lines.

Read through the ``ncu_report`` wheel with ``ncu_rep``'s checks for damaged files. Vendor quirks, all here:

- Source counters are *instanced* metrics: one value per instruction, keyed by correlation ids that are
  the instructions' absolute addresses. Each metric lists only the addresses it has a value for (stall
  metrics the sampled PCs, ``inst_executed`` the executed ones), so the listing is their union plus a walk
  of the SASS from the entry point (``launch__function_pcs``), 16 bytes per instruction (Volta and
  newer, all ncu profiles), until ``sass_by_pc`` answers ``""``: that adds the never-executed tail (the
  ``BRA`` self-loop and ``NOP`` padding) as ncu's own source view and CSV export show it.
- ``source_info(address)`` is the line table (``-lineinfo``; Triton always emits it); ``source_files()``
  maps a file to its text only where the source was imported (``--import-source yes``), else to ``""``.
- The SpeedOfLight section's verdict is the ``SOLBottleneck`` rule's message, with ``@section:ID:label@``
  style links in it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelscope.model.ncu import NcuHeadline, NcuKernelSource, NcuSource, SassInstruction
from kernelscope.model.source import SourceLocation
from kernelscope.readers import _ncu, ncu_rep
from kernelscope.readers._io import open_raw

FORMAT = "ncu-rep"
STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
NOT_ISSUED_SUFFIX = "_not_issued"
SAMPLES = "smsp__pcsamp_sample_count"
EXECUTED = "inst_executed"  # the SourceCounters section's warp-level "Instructions Executed"
THREAD_EXECUTED = "thread_inst_executed"
ENTRY_POINTS = "launch__function_pcs"
INSTRUCTION_BYTES = 16
BOTTLENECK_RULE = "SOLBottleneck"
_LINK = re.compile(r"@(url|section|sass|source):([^@]*)@")
_URL = re.compile(r":(?=\w+://)")
_CLAUSE_END = re.compile(r"(?<=\w)[:.](?:\s|$)")


def is_report(path: Path) -> bool:
    """True when ``path`` starts with the ``.ncu-rep`` magic (else it may be the CSV export)."""
    with open_raw(path) as f:
        return f.read(len(ncu_rep.MAGIC)) == ncu_rep.MAGIC


def verdict(message: str) -> str:
    """The leading clause of an ncu rule message, links reduced to their text.

    ``"Memory is more heavily utilized than Compute: Look at the @section:X:Memory Workload Analysis@ ..."``
    -> ``"Memory is more heavily utilized than Compute"``. Link forms: ``@url:TEXT:URL@``,
    ``@section:ID:TEXT@``, ``@sass:ADDRESS:TEXT@``, ``@source:FILE:LINE:TEXT@``.
    """
    return _CLAUSE_END.split(_LINK.sub(_link_text, message), maxsplit=1)[0].strip()


def _link_text(m: re.Match[str]) -> str:
    kind, body = m[1], m[2]
    if kind == "url":
        return _URL.split(body, maxsplit=1)[0]
    return body.split(":", 2 if kind == "source" else 1)[-1]


def _per_pc(action: Any, name: str) -> dict[int, int]:
    m = action.metric_by_name(name)
    if m is None or not m.has_correlation_ids():
        return {}
    ids = m.correlation_ids()
    return {ids.as_uint64(i): m.as_uint64(i) for i in range(m.num_instances())}


def _listing(action: Any, counted: set[int]) -> tuple[dict[int, str], int | None]:
    """address -> SASS text of every instruction of the kernel, and the entry point's address."""
    m = action.metric_by_name(ENTRY_POINTS)
    entries = [m.as_uint64(i) for i in range(m.num_instances())] if m is not None else []
    sass: dict[int, str] = {}
    for entry in entries:
        pc = entry
        while pc not in sass and (text := action.sass_by_pc(pc)):
            sass[pc] = text.strip()
            pc += INSTRUCTION_BYTES
    for pc in counted - sass.keys():  # called functions outside the walked range
        sass[pc] = action.sass_by_pc(pc).strip()
    return dict(sorted(sass.items())), min(entries, default=None)


def _location(action: Any, pc: int) -> SourceLocation | None:
    info = action.source_info(pc)
    if info is None or not info.file_name() or info.line() <= 0:
        return None
    return SourceLocation(info.file_name(), info.line())


def _headline(action: Any) -> NcuHeadline:
    values = {f: ncu_rep.value(action, _ncu.FIELDS[f][1]) for f in _ncu.HEADLINE}
    registers = values.pop("registers")
    bound = next(
        (verdict(r.rule_message()["message"]) for r in action.rule_results()
         if r.rule_identifier() == BOTTLENECK_RULE and r.has_rule_message()),
        None,
    )  # fmt: skip
    return NcuHeadline(**values, registers=None if registers is None else round(registers), bound=bound)


def _kernel(index: int, action: Any) -> NcuKernelSource:
    name, mangled = ncu_rep.names(action)
    duration = ncu_rep.value(action, _ncu.FIELDS["duration_ns"][1])
    stall_metrics = [n for n in action.metric_names() if n.startswith(STALL_PREFIX)]
    reasons: dict[str, dict[int, int]] = {}
    not_issued: dict[str, dict[int, int]] = {}
    for n in stall_metrics:
        reason = n.removeprefix(STALL_PREFIX)
        if reason.endswith(NOT_ISSUED_SUFFIX):
            not_issued[reason.removesuffix(NOT_ISSUED_SUFFIX)] = _per_pc(action, n)
        else:
            reasons[reason] = _per_pc(action, n)
    samples, executed, threads = (_per_pc(action, n) for n in (SAMPLES, EXECUTED, THREAD_EXECUTED))
    has_counters = any(action.metric_by_name(n) is not None for n in (SAMPLES, EXECUTED))
    counted = {pc for d in (samples, executed, *reasons.values()) for pc in d}
    sass, start = _listing(action, counted)
    instructions = []
    for pc, text in sass.items():
        split = {r: n for r, d in reasons.items() if (n := d.get(pc, 0))}
        split_ni = {r: n for r, d in not_issued.items() if (n := d.get(pc, 0))}
        instructions.append(
            SassInstruction(
                address=pc,
                sass=text,
                samples=samples.get(pc, sum(split.values())),
                not_issued=sum(split_ni.values()),
                reasons=split,
                not_issued_reasons=split_ni,
                executed=executed.get(pc, 0) if executed else None,
                thread_executed=threads.get(pc, 0) if threads else None,
                source=_location(action, pc),
            )
        )
    files = {i.source.file for i in instructions if i.source is not None}
    imported = {f: t.splitlines() for f, t in action.source_files().items() if f in files and t}
    return NcuKernelSource(
        index=index,
        name=name,
        mangled=mangled,
        duration_ns=None if duration is None else round(duration),
        headline=_headline(action),
        function_start=start,
        instructions=instructions,
        has_counters=has_counters,
        has_line_info=bool(files),
        source_text=imported,
    )


def read(path: Path, *, select: Callable[[str, str | None], bool] | None = None, report: Any = None) -> NcuSource:
    """The source page of every profiled kernel of an ``.ncu-rep``; needs the ``ncu-report`` wheel.

    Kernels for which ``select(name, mangled)`` is False keep only their names: reading an instruction
    listing costs ~0.1 s a kernel, which a filter on a report of hundreds of launches saves. ``report``:
    the file already loaded (``ncu_rep.open_report``).
    """
    ctx = report if report is not None else ncu_rep.open_report(path)  # kept alive while its actions are read
    actions, skipped = ncu_rep.kernel_actions(path, ctx)
    kernels = []
    for i, action in enumerate(actions):
        name, mangled = ncu_rep.names(action)
        wanted = select is None or select(name, mangled)
        kernels.append(_kernel(i, action) if wanted else NcuKernelSource(index=i, name=name, mangled=mangled))
    notes = [f"{skipped} range/graph workload(s) skipped: not single kernels"] if skipped else []
    return NcuSource(path=str(path), format=FORMAT, kernels=kernels, notes=notes)
