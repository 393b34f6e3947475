"""Nsight Compute facts shared by the CSV and report readers: field names, units, launch assembly.

Metric values are normalized to the units the ``.ncu-rep`` itself stores (the CSV pages scale them for
display): time -> ns, bytes -> byte, frequency -> hz, rates -> per second. So a raw-page CSV and the
report it was exported from give the same ``KernelLaunch.metrics`` up to the CSV's printed precision.
"""

from __future__ import annotations

import csv
import math
import re
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from kernelscope.errors import FormatError
from kernelscope.model import DeviceInfo, Dim3, KernelLaunch, numbers
from kernelscope.model.records import items_from_blocks

# canonical field -> (details page "Section/Metric Name", raw page and report metric). One table per page
# version would go here if Nsight renames them; 2019.x-2025.x use these names.
FIELDS: dict[str, tuple[str, str]] = {
    "duration_ns": ("GPU Speed Of Light Throughput/Duration", "gpu__time_duration.sum"),
    "registers": ("Launch Statistics/Registers Per Thread", "launch__registers_per_thread"),
    "shared_static": ("Launch Statistics/Static Shared Memory Per Block", "launch__shared_mem_per_block_static"),
    "shared_dynamic": ("Launch Statistics/Dynamic Shared Memory Per Block", "launch__shared_mem_per_block_dynamic"),
    "stream": ("", "launch__stream_id"),
    "device": ("", "launch__device_id"),
    "sm_throughput_pct": (
        "GPU Speed Of Light Throughput/Compute (SM) Throughput",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    "memory_throughput_pct": (
        "GPU Speed Of Light Throughput/Memory Throughput",
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    "dram_throughput_pct": (
        "GPU Speed Of Light Throughput/DRAM Throughput",
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    "achieved_occupancy_pct": ("Occupancy/Achieved Occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active"),
    "theoretical_occupancy_pct": ("Occupancy/Theoretical Occupancy", "sm__maximum_warps_per_active_cycle_pct"),
}
# Details-page names of Nsight Compute before 2022 -> today's (the section and its metrics were renamed, not changed)
_RENAMED_SECTIONS = {"GPU Speed Of Light": "GPU Speed Of Light Throughput"}
_RENAMED_METRICS = {
    "GPU Speed Of Light Throughput/Memory [%]": "GPU Speed Of Light Throughput/Memory Throughput",
    "GPU Speed Of Light Throughput/SOL DRAM": "GPU Speed Of Light Throughput/DRAM Throughput",
    "GPU Speed Of Light Throughput/SM [%]": "GPU Speed Of Light Throughput/Compute (SM) Throughput",
    "GPU Speed Of Light Throughput/Compute (SM) [%]": "GPU Speed Of Light Throughput/Compute (SM) Throughput",
}


def detail_key(section: str, metric: str) -> str:
    """A details-page metric as ``Section/Metric Name`` under today's names (FIELDS' page 0)."""
    key = f"{_RENAMED_SECTIONS.get(section, section)}/{metric}"
    return _RENAMED_METRICS.get(key, key)


# The FIELDS a kernel's headline shows (NcuHeadline), beside its duration.
HEADLINE = (
    "sm_throughput_pct",
    "memory_throughput_pct",
    "dram_throughput_pct",
    "achieved_occupancy_pct",
    "theoretical_occupancy_pct",
    "registers",
)
GRID_DIMS = ("launch__grid_dim_x", "launch__grid_dim_y", "launch__grid_dim_z")
BLOCK_DIMS = ("launch__block_dim_x", "launch__block_dim_y", "launch__block_dim_z")

# Not per-launch: device constants go to DeviceInfo, profiler__* describe the replay, derived_tempMetric*
# are scratch values of the section scripts.
SKIP_PREFIXES = ("device__attribute_", "profiler__", "derived_tempMetric")

_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3}
# "usecond"/"msecond"/"nsecond"/"second" are the spellings of Nsight Compute before 2022.
_SECONDS = {
    "ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "s": 1.0, "second": 1.0,
}  # fmt: skip
_DIM3 = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)$")


def _word(word: str) -> tuple[float, str, bool]:
    """(factor to the base unit, base unit, is a time) for one side of a unit."""
    if word in _SECONDS:
        return _SECONDS[word], "s", True
    for base in ("byte", "hz"):
        if word.lower().endswith(base) and word[: -len(base)] in _PREFIX:
            return _PREFIX[word[: -len(base)]], base, False
    return 1.0, word, False


def unit_scale(unit: str) -> tuple[float, str]:
    """The factor that brings a value printed in ``unit`` to the report's base unit, and that unit.

    ``us`` -> (1000, "ns"); ``Kbyte/block`` -> (1000, "byte/block"); ``Tbyte/s`` -> (1e12, "byte/s");
    ``Ghz`` -> (1e9, "hz"); ``sector/ms`` -> (1000, "sector/s"); unknown units pass through unscaled.
    """
    num, _, den = unit.strip().partition("/")
    factor, base, is_time = _word(num)
    if is_time and not den:
        return factor * 1e9, "ns"
    if not den:
        return factor, base
    dfactor, dbase, _ = _word(den)
    if base == "cycle" and dbase == "s":  # old "cycle/nsecond" frequencies
        return factor / dfactor, "hz"
    return factor / dfactor, f"{base}/{dbase}"


def csv_rows(f: Iterable[str], path: Path, fix: str) -> Iterator[list[str]]:
    """CSV rows of an ncu export; a file cut inside a quoted field (strict mode) or after a field (no final
    line break) raises ``FormatError`` ending with ``fix``."""
    last = ""

    def lines() -> Iterator[str]:
        nonlocal last
        for line in f:
            last = line
            yield line

    try:
        yield from csv.reader(lines(), strict=True)
    except (csv.Error, UnicodeDecodeError, OSError, EOFError, zlib.error) as exc:
        raise FormatError(path, "a complete Nsight Compute CSV", f"a damaged file ({exc})", fix) from None
    if last and not last.endswith("\n"):
        raise FormatError(path, "a CSV that ends with a line break", "one that ends mid-row (truncated?)", fix)


def number(text: str) -> float | None:
    """A CSV cell as a measurement ("67,711" -> 67711.0); None for empty, text ("all", "n/a") and what
    ``measurement`` refuses."""
    return measurement(numbers.to_float(text))


def measurement(v: float | None) -> float | None:
    """``v`` when it can be an ncu value, else None: counters, rates, percentages and times are finite and
    never negative, so NaN (a derived metric with nothing to divide by), infinities and negatives are damage."""
    return v if v is not None and math.isfinite(v) and v >= 0 else None


def dim3(text: str) -> Dim3 | None:
    """``"(8192, 1, 1)"`` -> Dim3; None when the cell is empty or shaped otherwise."""
    m = _DIM3.match(text.strip())
    return Dim3(int(m[1]), int(m[2]), int(m[3])) if m else None


def dim3_of(metrics: dict[str, float], keys: tuple[str, str, str]) -> Dim3 | None:
    x, y, z = (metrics.get(k) for k in keys)
    return Dim3(int(x), int(y), int(z)) if x is not None and y is not None and z is not None else None


def arch(cc: str) -> str | None:
    """Compute capability "9.0" -> "sm_90"."""
    major, _, minor = cc.strip().partition(".")
    return f"sm_{major}{minor or 0}" if major.isdigit() else None


def _int(v: float | None) -> int | None:
    return None if v is None else round(v)


def launch(
    *,
    name: str,
    metrics: dict[str, float],
    page: int,
    grid: Dim3 | None,
    block: Dim3 | None,
    stream: int | None,
    device: int | None,
    rank: int | None,
    source: str,
    source_format: str,
    mangled: str | None = None,
) -> KernelLaunch | None:
    """A launch from one kernel's normalized metrics; ``page`` picks the FIELDS column (0 details, 1 raw).

    None when the kernel has no duration metric (the caller says why in its error).
    """
    key = {f: names[page] for f, names in FIELDS.items()}
    duration = metrics.get(key["duration_ns"])
    if duration is None:
        return None
    static, dynamic = metrics.get(key["shared_static"]), metrics.get(key["shared_dynamic"])
    shared = None if static is None and dynamic is None else (static or 0.0) + (dynamic or 0.0)
    return KernelLaunch(
        name=name,
        mangled=mangled if mangled is not None else (name if name.startswith("_Z") else None),
        duration_ns=round(duration),
        vendor="nvidia",
        device=device if device is not None else _int(metrics.get(key["device"])),
        rank=rank,
        stream=stream if stream is not None else _int(metrics.get(key["stream"])),
        grid_blocks=grid,
        grid_items=items_from_blocks(grid, block) if grid and block else None,
        block=block,
        registers=_int(metrics.get(key["registers"])),
        lds_bytes=_int(shared),
        source=source,
        source_format=source_format,
        metrics=metrics or None,
    )


def no_duration(path: Path, page: int, kernel: str) -> FormatError:
    """The error for a kernel without a duration metric (its Speed Of Light section was not collected or kept)."""
    return FormatError(
        path,
        f"a duration ({FIELDS['duration_ns'][page]!r}) for every kernel",
        f"none for {kernel[:80]}",
        "profile with the SpeedOfLight section (ncu --section SpeedOfLight, part of every --set)",
    )


def device_info(index: int, cc: str, *, name: str | None = None, sms: float | None = None) -> DeviceInfo:
    return DeviceInfo(index=index, vendor="nvidia", name=name, arch=arch(cc), compute_units=_int(sms))
