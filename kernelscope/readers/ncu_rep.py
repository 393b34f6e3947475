"""Nsight Compute report (``.ncu-rep``), read through NVIDIA's ``ncu_report`` Python module (the wheel).

The wheel is imported inside ``read`` so ``import kernelscope`` never needs it. Records match the CSV
reader's raw page (same metric names, same base units), with the report's exact values.

Vendor quirks, all here: ``load_report`` does not fail on a damaged file; it returns a context with
no ranges (random bytes, a file cut early) or a last action with no name and no metrics (a file cut
late), and prints protobuf errors on stderr. So the magic is checked first and every action must have
a name and a duration. Actions of range or
graph replay (``--replay-mode range``, ``--graph-profiling graph``) are not single kernels: they are
skipped and counted in ``metadata["ncu_skipped_workloads"]``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

from kernelscope.errors import FormatError, MissingToolError
from kernelscope.model import DeviceInfo, KernelLaunch, Profile
from kernelscope.readers import _ncu

FORMAT = "ncu-rep"
MAGIC = b"NVR\x00"
_MIN_BYTES = 64  # magic plus a file header; anything shorter holds no kernel
_FIX = "re-collect it with ncu -o NAME, or export it from the Nsight Compute UI"


def _check_file(path: Path) -> None:
    with path.open("rb") as f:
        head = f.read(_MIN_BYTES)
    if not head.startswith(MAGIC):
        raise FormatError(path, f"an Nsight Compute report starting with {MAGIC!r}", f"{head[:4]!r}", _FIX)
    if len(head) < _MIN_BYTES:
        raise FormatError(path, f"an Nsight Compute report of at least {_MIN_BYTES} bytes", f"{len(head)}", _FIX)


def _metrics(action: Any, numeric: frozenset[int], units: dict[str, str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for raw_name in action.metric_names():
        name = sys.intern(raw_name)  # one key object shared by every launch's dict
        if name.startswith(_ncu.SKIP_PREFIXES):
            continue
        m = action.metric_by_name(name)
        if m is None or not m.has_value() or m.kind() not in numeric:
            continue  # strings, metric groups, and per-instance-only values
        v = m.as_double()
        if math.isnan(v):  # NaN: a derived metric with nothing to divide by
            continue
        factor, units[name] = _ncu.unit_scale(m.unit())
        out[name] = v * factor
    return out


def _attr(action: Any, name: str) -> Any:
    m = action.metric_by_name(name)
    return m.value() if m is not None and m.has_value() else None


def _device(action: Any, index: int) -> DeviceInfo:
    major, minor = (
        _attr(action, "device__attribute_compute_capability_major"),
        _attr(action, "device__attribute_compute_capability_minor"),
    )
    return _ncu.device_info(
        index,
        f"{major}.{minor}" if major is not None else "",
        name=_attr(action, "device__attribute_display_name"),
        sms=_attr(action, "device__attribute_multiprocessor_count"),
    )


def read(path: Path, *, rank: int | None = None) -> Profile:
    """Read every profiled kernel of an ``.ncu-rep``; needs the ``ncu-report`` wheel."""
    _check_file(path)
    try:
        import ncu_report
    except ImportError:
        raise MissingToolError("ncu-report", "pip install 'kernelscope[ncu]' (the ncu-report wheel)") from None
    try:
        ctx = ncu_report.load_report(str(path))
    except Exception as exc:  # the wheel is a SWIG binding; its failures have no common type
        raise FormatError(path, "an Nsight Compute report the ncu-report wheel can load", repr(exc), _FIX) from None
    metric = ncu_report.IMetric
    numeric = frozenset(
        {metric.ValueKind_FLOAT, metric.ValueKind_DOUBLE, metric.ValueKind_UINT32, metric.ValueKind_UINT64}
    )
    kernel_kind = ncu_report.IAction.WorkloadType_KERNEL
    demangled, mangled = ncu_report.IAction.NameBase_DEMANGLED, ncu_report.IAction.NameBase_MANGLED

    launches: list[KernelLaunch] = []
    devices: dict[int, DeviceInfo] = {}
    units: dict[str, str] = {}
    skipped = 0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for i in range(rng.num_actions()):
            action = rng.action_by_idx(i)
            name = action.name(demangled) if action is not None else None
            if not name:
                raise FormatError(path, "a name and metrics for every profiled kernel",
                                  f"an empty record at range {r}, action {i} (truncated report?)", _FIX)  # fmt: skip
            if action.workload_type() != kernel_kind:
                skipped += 1
                continue
            metrics = _metrics(action, numeric, units)
            raw_name = action.name(mangled)
            grid, block = _ncu.dim3_of(metrics, _ncu.GRID_DIMS), _ncu.dim3_of(metrics, _ncu.BLOCK_DIMS)
            k = _ncu.launch(
                name=name, metrics=metrics, page=1, grid=grid, block=block, stream=None, device=None, rank=rank,
                source=str(path), source_format=FORMAT, mangled=raw_name if raw_name and raw_name != name else None,
            )  # fmt: skip
            if k is None:
                raise FormatError(path, "gpu__time_duration.sum for every kernel", f"none for {name[:60]}",
                                  "collect at least the SpeedOfLight section")  # fmt: skip
            launches.append(k)
            if k.device is not None and k.device not in devices:
                devices[k.device] = _device(action, k.device)
    if not launches and not skipped:
        raise FormatError(path, "at least one profiled kernel", "none (a damaged or truncated report?)", _FIX)
    metadata: dict[str, Any] = {"metric_units": units}
    if skipped:
        metadata["ncu_skipped_workloads"] = skipped
    return Profile(
        launches=launches,
        devices=list(devices.values()),
        sources=[str(path)],
        formats=[FORMAT],
        timing="serialized",
        metadata=metadata,
    )
