"""Nsight Compute's source page exported as CSV (``ncu --import R --page source --csv --print-source sass``).

Plain or gzip. One block per profiled kernel: a ``"Kernel Name","NAME",`` line, a header line, then one row
per SASS instruction in address order. Columns are the SourceCounters section's labels, not metric names:
``# Samples`` and ``Warp Stall Sampling (All Samples)`` are both ``smsp__pcsamp_sample_count``, and the stall
reasons have short labels (``stall_long_sb`` is ``long_scoreboard``; see ``CSV_REASONS``).

Vendor quirks, all here: the export carries no launch data (no duration, throughput or occupancy) and no
line table (``--print-source sass`` prints SASS only), so those stay ``None``; ncu 2025.3 writes no column for
stall reasons its section file gives no label (``warpgroup_arrive`` on Hopper), so a row's reasons can sum to
less than its samples; empty counter cells are ``-`` or blank.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.errors import FormatError
from kernelscope.model import numbers
from kernelscope.model.ncu import NcuKernelSource, NcuSource, SassInstruction
from kernelscope.readers import _csv, _ncu

FORMAT = "ncu-source-csv"
_FIX = "export the source page with ncu --import REPORT --page source --csv --print-source sass > FILE.csv"
KERNEL_ROW = "Kernel Name"
ADDRESS, SASS = "Address", "Source"
SAMPLES = ("Warp Stall Sampling (All Samples)", "# Samples")
NOT_ISSUED = "Warp Stall Sampling (Not-issued Samples)"
EXECUTED, THREAD_EXECUTED = "Instructions Executed", "Thread Instructions Executed"
NOT_ISSUED_TAG = " (Not Issued)"
# The section's column label -> ncu's stall reason, where the label is not "stall_" + the reason.
CSV_REASONS = {
    "stall_dispatch": "dispatch_stall",
    "stall_imc": "imc_miss",
    "stall_lg": "lg_throttle",
    "stall_long_sb": "long_scoreboard",
    "stall_math": "math_pipe_throttle",
    "stall_mio": "mio_throttle",
    "stall_no_inst": "no_instructions",
    "stall_short_sb": "short_scoreboard",
    "stall_sleep": "sleeping",
    "stall_tex": "tex_throttle",
}
NOTE = "the CSV source page holds no launch metrics and no source lines: read the .ncu-rep for both"


@dataclass
class _Columns:
    """Where each counter sits in one block's header."""

    address: int
    sass: int
    width: int
    samples: int | None = None
    not_issued_samples: int | None = None
    executed: int | None = None
    thread_executed: int | None = None
    reasons: list[tuple[int, str]] = field(default_factory=list)
    not_issued: list[tuple[int, str]] = field(default_factory=list)

    @classmethod
    def of(cls, header: list[str], path: Path) -> _Columns:
        if ADDRESS not in header or SASS not in header:
            raise FormatError(path, f"a SASS source-page header with {ADDRESS!r} and {SASS!r}", f"{header[:4]}", _FIX)
        where = {label: i for i, label in enumerate(header)}
        cols = cls(where[ADDRESS], where[SASS], len(header), executed=where.get(EXECUTED))
        cols.samples = next((where[s] for s in SAMPLES if s in where), None)
        cols.not_issued_samples, cols.thread_executed = where.get(NOT_ISSUED), where.get(THREAD_EXECUTED)
        for i, label in enumerate(header):
            if not label.startswith("stall_"):
                continue
            base = label.removesuffix(NOT_ISSUED_TAG)
            reason = CSV_REASONS.get(base, base.removeprefix("stall_"))
            (cols.not_issued if base != label else cols.reasons).append((i, reason))
        return cols

    @property
    def has_counters(self) -> bool:
        return self.samples is not None or self.executed is not None


def _int(cell: str) -> int:
    v = numbers.to_float(cell)  # "-" and "" (no value) count as 0, as ncu's own view shows them
    return 0 if v is None or abs(v) >= numbers.INT64_MAX else round(v)


def _instruction(row: list[str], c: _Columns, path: Path) -> SassInstruction:
    try:
        address = int(row[c.address], 16)
    except ValueError:
        raise FormatError(path, "a hexadecimal instruction address", repr(row[c.address]), _FIX) from None
    reasons = {r: n for i, r in c.reasons if (n := _int(row[i]))}
    not_issued = {r: n for i, r in c.not_issued if (n := _int(row[i]))}
    return SassInstruction(
        address=address,
        sass=row[c.sass].strip(),
        samples=_int(row[c.samples]) if c.samples is not None else sum(reasons.values()),
        not_issued=_int(row[c.not_issued_samples]) if c.not_issued_samples is not None else sum(not_issued.values()),
        reasons=reasons,
        not_issued_reasons=not_issued,
        executed=_int(row[c.executed]) if c.executed is not None else None,
        thread_executed=_int(row[c.thread_executed]) if c.thread_executed is not None else None,
    )


def _kernel(index: int, name: str, cols: _Columns | None, rows: list[SassInstruction], path: Path) -> NcuKernelSource:
    if cols is None or not rows:
        raise FormatError(path, f"a header and instruction rows for kernel {name[:60]!r}", "none (truncated?)", _FIX)
    return NcuKernelSource(
        index=index,
        name=name,
        mangled=name if name.startswith("_Z") else None,
        function_start=rows[0].address,
        instructions=rows,
        has_counters=cols.has_counters,
    )


def _kernels(rows: Iterator[list[str]], path: Path) -> Iterator[NcuKernelSource]:
    name: str | None = None
    cols: _Columns | None = None
    block: list[SassInstruction] = []
    index = 0
    for row in rows:
        if not any(row):
            continue
        if row[0] == KERNEL_ROW and len(row) > 1:
            if name is not None:
                yield _kernel(index, name, cols, block, path)
                index += 1
            name, cols, block = row[1], None, []
        elif name is None:
            raise FormatError(path, f'a source-page CSV starting with "{KERNEL_ROW}",NAME', f"{row[:4]}", _FIX)
        elif cols is None:
            cols = _Columns.of(row, path)
        elif len(row) != cols.width:
            raise FormatError(path, f"{cols.width} fields per row, as in the header", f"{len(row)} (truncated?)", _FIX)
        else:
            block.append(_instruction(row, cols, path))
    if name is None:
        raise FormatError(path, "at least one kernel block", "an empty file", _FIX)
    yield _kernel(index, name, cols, block, path)


def read(path: Path) -> NcuSource:
    """The per-instruction counters of every kernel block in a source-page CSV export."""
    with _csv.open_text(path) as f:  # gzip-transparent; lifts csv's 128 KiB field limit
        kernels = list(_kernels(_ncu.csv_rows(f, path, _FIX), path))
    return NcuSource(path=str(path), format=FORMAT, kernels=kernels, notes=[NOTE])
