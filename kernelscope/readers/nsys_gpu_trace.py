"""Nsight Systems ``nsys stats --report cuda_gpu_trace``: a row per kernel, copy and fill, the timeline nsys users
export as CSV (``--format csv``/``tsv``, to a file or stdout) or print (the default ``column`` form).

Columns are read by name: ``Start``/``Duration`` in the unit of their header (``(ns)`` by default, ``--timeunit``
changes it), ``CorrId``, ``GrdX..Z`` (blocks), ``BlkX..Z``, ``Reg/Trd``, ``StcSMem``/``DymSMem``/``Bytes`` in MB
(10^6 bytes, three decimals: shared memory to the kilobyte), ``Device`` as ``<GPU name> (<CUDA ordinal>)``, ``Strm``,
``Name``. Kernel rows have a grid; copies and fills are named ``[CUDA memcpy Host-to-Device]``, ``[CUDA memset]``.
The column form's cells are the spans of its dashed rule (numbers right-aligned, text left-aligned, thousands
separators); names longer than its column are cut and end in ``…``, and the result says how many.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path

from kernelscope.errors import FormatError, partial_input
from kernelscope.model import Profile, numbers
from kernelscope.readers._csv import norm
from kernelscope.readers._cupti import TraceRow, trace_profile
from kernelscope.readers._tables import lines

FORMAT = "nsys-gpu-trace"
_EXPECTED = "an nsys stats cuda_gpu_trace report (Start, Duration, CorrId, GrdX, ..., Name columns)"
_UNIT = re.compile(r"\((ns|us|ms|s|MB|B)\)\s*$")
_SCALE = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9, "MB": 1e6, "B": 1.0}
_RULE = re.compile(r"^\s*-+(?: +-+)+\s*$")
_CUT = "…"

Row = dict[str, tuple[str, float]]  # normalized column -> (cell, its unit's scale)


def _key(col: str) -> tuple[str, float]:
    """``Start (ns)`` -> ("start", 1.0); ``StcSMem (MB)`` -> ("stcsmem", 1e6)."""
    unit = _UNIT.search(col)
    return norm(_UNIT.sub("", col)), _SCALE[unit.group(1)] if unit else 1.0


def _is_header(cols: list[str]) -> bool:
    keys = {_key(c)[0] for c in cols}
    return {"start", "duration", "name", "grdx"} <= keys and bool({"corrid", "strm"} & keys)


def _span_cells(line: str, starts: list[int]) -> list[str]:
    """A column-form line's cells: from the start of each dashed run to the start of the next (the last to the end)."""
    return [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]


def _tables(text: Iterator[str]) -> Iterator[tuple[list[str], Iterator[list[str]]]]:
    """The report's header and rows, in whichever form ``text`` holds it."""
    prev = ""
    for raw in text:
        line = raw.rstrip("\r\n")
        sep = "\t" if "\t" in line else ","
        cols = [c.strip() for c in next(csv.reader([line], delimiter=sep), [])]
        if len(cols) > 4 and _is_header(cols):
            rows = csv.reader((r.rstrip("\r\n") for r in text), delimiter=sep)
            yield cols, ([c.strip() for c in row] for row in rows)
            return
        if _RULE.match(line) and prev:
            starts = [m.start() for m in re.finditer(r"-+", line)]
            if _is_header(header := _span_cells(prev, starts)):
                yield header, (_span_cells(r.rstrip("\r\n"), starts) for r in text if r.strip())
                return
        prev = line


def _traced(row: Row) -> TraceRow | None:
    """A row's cells as ``_cupti``'s trace row; None for rows without a time or a name (a cut line, the log's text)."""

    def num(key: str) -> float | None:
        cell, scale = row.get(key, ("", 1.0))
        v = numbers.to_float(cell) if cell else None
        return None if v is None else v * scale

    def whole(key: str) -> int | None:
        return numbers.to_int(row.get(key, ("", 1.0))[0])

    start, duration, name = num("start"), num("duration"), row.get("name", ("", 1.0))[0]
    if start is None or duration is None or not name:
        return None
    return TraceRow(
        name=name,
        start=start,
        duration=duration,
        device=row.get("device", ("", 1.0))[0],
        stream=whole("strm"),
        correlation_id=whole("corrid"),
        grid=(whole("grdx"), whole("grdy"), whole("grdz")),
        block=(whole("blkx"), whole("blky"), whole("blkz")),
        registers=whole("regtrd"),
        shared=(num("stcsmem"), num("dymsmem")),
        size=num("bytes"),
    )


def read(path: Path, *, rank: int | None = None) -> Profile:
    """Read the kernels, copies and fills of an nsys cuda_gpu_trace report."""
    table = next(_tables(lines(path, _EXPECTED)), None)
    if table is None:
        raise FormatError(path, _EXPECTED, "no such header (Start, Duration, CorrId, GrdX, ..., Name)")
    cols, body = table
    keys = [_key(c) for c in cols]
    rows = (
        traced
        for cells in body
        if len(cells) == len(keys)
        and (traced := _traced({k: (c, scale) for (k, scale), c in zip(keys, cells, strict=True)})) is not None
    )
    profile = trace_profile(rows, fmt=FORMAT, src=str(path), rank=rank)
    if cut := sum(k.name.endswith(_CUT) for k in profile.launches):
        partial_input(f"{path}: nsys cut {cut} of {len(profile.launches)} kernel names to its column ('{_CUT}')")
    return profile


def looks_like(head: bytes) -> bool:
    """``head`` holds the report's header, CSV, TSV or column form."""
    return next(_tables(iter(head.decode("utf-8", "replace").splitlines())), None) is not None
