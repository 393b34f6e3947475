"""Nsight Compute CSV export, ``--page details --csv`` or ``--page raw --csv``, plain or gzip.

Both pages start with the same launch columns (``ID`` .. ``CC``). ``details`` is long: one row per
(kernel, section, metric), plus rule rows whose ``Metric Name`` is empty. ``raw`` is wide: one row per
kernel, one column per metric, and a second row that holds each column's unit.

Vendor quirks, all here: numbers carry thousands separators ("67,711"); values are scaled for display
(``us``/``ms``, ``Kbyte``/``Mbyte`` with SI prefixes, ``Ghz``) and rounded to two decimals on the
details page, six on the raw page, so details durations and shared-memory sizes are approximate
(export with ``--print-units base`` for exact bytes); ``Grid Size`` counts blocks; ncu replays kernels
one at a time, so there are no start times (``timing="serialized"``); a metric row ends with an empty
field instead of the five rule columns.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kernelscope.errors import FormatError
from kernelscope.model import DeviceInfo, KernelLaunch, Profile
from kernelscope.readers import _csv, _ncu

FORMAT = "ncu-csv"
_SIGNATURE = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name"]
# Launch columns; versions before 2021 lack Block Size .. CC and have "Kernel Time" instead.
_LEAD = frozenset([*_SIGNATURE, "Kernel Time", "Context", "Stream", "Block Size", "Grid Size", "Device", "CC"])
_DETAILS = ["Section Name", "Metric Name", "Metric Unit", "Metric Value"]
_DEVICE_ATTRS = ("device__attribute_display_name", "device__attribute_multiprocessor_count")
_FIX = "re-export with ncu --import REPORT --page details --csv (or --page raw --csv) > FILE.csv"


def _int(text: str | None) -> int | None:
    v = None if text is None else _ncu.number(text)
    return None if v is None else int(v)


class _Kernel:
    """One kernel's launch columns and its normalized metrics, as read so far."""

    def __init__(self, lead: dict[str, str]) -> None:
        self.lead = lead
        self.metrics: dict[str, float] = {}
        self.device_name: str | None = None  # raw page only: the details page names no device
        self.sms: float | None = None


def _lead(header: list[str], row: list[str]) -> dict[str, str]:
    return {c: v for c, v in zip(header, row, strict=False) if c in _LEAD}


def _launch(k: _Kernel, page: int, path: Path, rank: int | None) -> KernelLaunch:
    lead, m = k.lead, k.metrics
    out = _ncu.launch(
        name=lead["Kernel Name"],
        metrics=m,
        page=page,
        grid=_ncu.dim3(lead.get("Grid Size", "")) or _ncu.dim3_of(m, _ncu.GRID_DIMS),
        block=_ncu.dim3(lead.get("Block Size", "")) or _ncu.dim3_of(m, _ncu.BLOCK_DIMS),
        stream=_int(lead.get("Stream")),
        device=_int(lead.get("Device")),
        rank=rank,
        source=str(path),
        source_format=FORMAT,
    )
    if out is None:
        raise _ncu.no_duration(path, page, f"kernel ID {lead['ID']} ({lead['Kernel Name'][:60]})")
    return out


def _details(rows: Iterator[list[str]], header: list[str], path: Path) -> tuple[list[_Kernel], dict[str, str]]:
    try:
        sec, met, unit, val = (header.index(c) for c in _DETAILS)
    except ValueError:
        raise FormatError(path, f"details-page columns {_DETAILS}", f"header {header}", _FIX) from None
    kernels: dict[tuple[str, str], _Kernel] = {}
    units: dict[str, str] = {}
    for row in rows:
        if len(row) <= val:  # metric rows end after the value (plus an empty field), rule rows go on
            if not any(row):
                continue
            raise FormatError(path, f"{val + 1} fields per row", f"{len(row)} in row {row[:1]} (truncated?)", _FIX)
        k = kernels.get((row[0], row[1]))
        if k is None:
            k = kernels[row[0], row[1]] = _Kernel(_lead(header, row))
        v = _ncu.number(row[val]) if row[met] else None  # rule rows have no metric name
        if v is None:
            continue
        key = _ncu.detail_key(row[sec], row[met])
        factor, units[key] = _ncu.unit_scale(row[unit])
        k.metrics[key] = v * factor
    return list(kernels.values()), units


def _raw(rows: Iterator[list[str]], header: list[str], path: Path) -> tuple[list[_Kernel], dict[str, str]]:
    n = len(header)
    keep = [i for i, c in enumerate(header) if c not in _LEAD and not c.startswith(_ncu.SKIP_PREFIXES)]
    name_col, sms_col = (header.index(c) if c in header else None for c in _DEVICE_ATTRS)
    scale = [(1.0, "")] * n
    kernels = []
    for row in rows:
        if not any(row):
            continue
        if len(row) != n:
            raise FormatError(path, f"{n} fields per row, as in the header", f"{len(row)} (truncated?)", _FIX)
        if not row[0].strip().isdigit():  # the units row (its ID cell is empty)
            scale = [_ncu.unit_scale(u) for u in row]
            continue
        k = _Kernel(_lead(header, row))
        for i in keep:
            v = _ncu.number(row[i])
            if v is not None:
                k.metrics[header[i]] = v * scale[i][0]
        k.device_name = (row[name_col] or None) if name_col is not None else None
        k.sms = _ncu.number(row[sms_col]) if sms_col is not None else None
        kernels.append(k)
    seen = {m for k in kernels for m in k.metrics}
    return kernels, {header[i]: scale[i][1] for i in keep if header[i] in seen}


def _devices(kernels: list[_Kernel]) -> list[DeviceInfo]:
    out: dict[int, DeviceInfo] = {}
    for k in kernels:
        index = _int(k.lead.get("Device"))
        if index is not None and index not in out:
            out[index] = _ncu.device_info(index, k.lead.get("CC", ""), name=k.device_name, sms=k.sms)
    return list(out.values())


def read(path: Path, *, rank: int | None = None) -> Profile:
    """Read every kernel of an Nsight Compute CSV export (details or raw page)."""
    with _csv.open_text(path) as f:  # gzip-transparent; lifts csv's 128 KiB field limit
        rows = _ncu.csv_rows(f, path, _FIX)
        header = next(rows, None)
        if header is None or header[: len(_SIGNATURE)] != _SIGNATURE:
            found = "an empty file" if header is None else f"header {header[:5]}"
            raise FormatError(path, f"an Nsight Compute CSV header starting {_SIGNATURE}", found, _FIX)
        page = "details" if "Metric Name" in header else "raw"
        kernels, units = (_details if page == "details" else _raw)(rows, header, path)
    if not kernels:
        raise FormatError(path, "at least one profiled kernel", "a header and no kernel rows", _FIX)
    launches = [_launch(k, 0 if page == "details" else 1, path, rank) for k in kernels]
    return Profile(
        launches=launches,
        devices=_devices(kernels),
        sources=[str(path)],
        formats=[FORMAT],
        timing="serialized",
        metadata={"ncu_page": page, "metric_units": units},
    )
