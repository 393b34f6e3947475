"""Nsight Compute report (``.ncu-rep``), read through NVIDIA's ``ncu_report`` Python module (the wheel).

The wheel is imported inside ``read`` so ``import kernelscope`` never needs it. Records match the CSV
reader's raw page (same metric names, same base units), with the report's exact values.

Vendor quirks, all here: ``load_report`` does not fail on a damaged file; it returns a context with
no ranges (random bytes, a file cut early) or a last action with no name and no metrics (a file cut
late), and prints protobuf errors on stderr. So the magic is checked first and every action must have
a name and a duration. On some corrupted reports its protobuf reader aborts the whole process instead
(SIGABRT from an absl CHECK: no Python exception to catch), so each report is first walked once in a
child process (``_preflight``); one the child dies on is a ``FormatError`` here. Actions of range or
graph replay (``--replay-mode range``, ``--graph-profiling graph``) are not single kernels: they are
skipped and counted in ``metadata["ncu_skipped_workloads"]``.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

from kernelscope.errors import FormatError, MissingToolError
from kernelscope.model import DeviceInfo, KernelLaunch, Profile
from kernelscope.process import run_tool, signal_name
from kernelscope.readers import _io, _ncu

FORMAT = "ncu-rep"
MAGIC = b"NVR\x00"
_MIN_BYTES = 64  # magic plus a file header; anything shorter holds no kernel
_FIX = "re-collect it with ncu -o NAME, or export it from the Nsight Compute UI"


def _check_file(path: Path) -> None:
    with _io.open_raw(path) as f:
        head = f.read(_MIN_BYTES)
    if not head.startswith(MAGIC):
        raise FormatError(path, f"an Nsight Compute report starting with {MAGIC!r}", f"{head[:4]!r}", _FIX)
    if len(head) < _MIN_BYTES:
        raise FormatError(path, f"an Nsight Compute report of at least {_MIN_BYTES} bytes", f"{len(head)}", _FIX)


@functools.cache
def _numeric() -> frozenset[int]:
    """The value kinds that hold a number (not a string or a metric group)."""
    import ncu_report

    m = ncu_report.IMetric
    return frozenset({m.ValueKind_FLOAT, m.ValueKind_DOUBLE, m.ValueKind_UINT32, m.ValueKind_UINT64})


def _scaled(m: Any) -> tuple[float, str] | None:
    """A metric's value in the report's base unit, and that unit; None for text, groups and what
    ``_ncu.measurement`` refuses (NaN, infinities, negatives)."""
    if m is None or not m.has_value() or m.kind() not in _numeric():
        return None  # strings, metric groups, and per-instance-only values
    v = _ncu.measurement(m.as_double())
    if v is None:
        return None
    factor, unit = _ncu.unit_scale(m.unit())
    return v * factor, unit


def value(action: Any, name: str) -> float | None:
    """One numeric metric of an action in base units (``launch`` metrics' units), None when absent."""
    scaled = _scaled(action.metric_by_name(name))
    return None if scaled is None else scaled[0]


def _metrics(action: Any, units: dict[str, str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for raw_name in action.metric_names():
        name = sys.intern(raw_name)  # one key object shared by every launch's dict
        if name.startswith(_ncu.SKIP_PREFIXES):
            continue
        try:
            metric = action.metric_by_name(name)
        except TypeError:  # a damaged name (invalid UTF-8) that the library cannot take back as char*
            continue
        scaled = _scaled(metric)
        if scaled is not None:
            out[name], units[name] = scaled
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


# loads the report and touches what the readers touch: every action's name and metrics
_PREFLIGHT = """
import sys, ncu_report
ctx = ncu_report.load_report(sys.argv[1])
for r in range(ctx.num_ranges()):
    rng = ctx.range_by_idx(r)
    for i in range(rng.num_actions()):
        a = rng.action_by_idx(i)
        if a is not None and a.name():
            for n in a.metric_names():
                a.metric_by_name(n)
"""


def _preflight(path: Path) -> None:
    done = run_tool([sys.executable, "-c", _PREFLIGHT, str(path)])
    if done.returncode < 0:
        found = f"a report that makes the ncu-report library abort ({signal_name(-done.returncode)}; damaged?)"
        raise FormatError(path, "an Nsight Compute report the ncu-report library can read", found, _FIX)


def open_report(path: Path) -> Any:
    """The ``ncu_report`` context of a report, after the magic check and a walk through it in a child
    process (``_preflight``); needs the ``ncu-report`` wheel."""
    _check_file(path)
    try:
        import ncu_report
    except ImportError:
        raise MissingToolError("ncu-report", "pip install 'kernelscope[ncu]' (the ncu-report wheel)") from None
    _preflight(path)
    try:
        return ncu_report.load_report(str(path))
    except Exception as exc:  # the wheel is a SWIG binding; its failures have no common type
        raise FormatError(path, "an Nsight Compute report the ncu-report wheel can load", repr(exc), _FIX) from None


def kernel_actions(path: Path, ctx: Any) -> tuple[list[Any], int]:
    """Every kernel action of an opened report in order, and how many range/graph workloads were skipped.

    Raises ``FormatError`` on the nameless record a truncated file ends with.
    """
    import ncu_report

    demangled, kernel_kind = ncu_report.IAction.NameBase_DEMANGLED, ncu_report.IAction.WorkloadType_KERNEL
    actions: list[Any] = []
    skipped = 0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for i in range(rng.num_actions()):
            action = rng.action_by_idx(i)
            if action is None or not action.name(demangled):
                raise FormatError(path, "a name and metrics for every profiled kernel",
                                  f"an empty record at range {r}, action {i} (truncated report?)", _FIX)  # fmt: skip
            if action.workload_type() == kernel_kind:
                actions.append(action)
            else:
                skipped += 1
    if not actions and not skipped:
        raise FormatError(path, "at least one profiled kernel", "none (a damaged or truncated report?)", _FIX)
    return actions, skipped


def names(action: Any) -> tuple[str, str | None]:
    """A kernel action's demangled name, and its mangled name where that differs."""
    import ncu_report

    name = action.name(ncu_report.IAction.NameBase_DEMANGLED)
    raw = action.name(ncu_report.IAction.NameBase_MANGLED)
    return name, raw if raw and raw != name else None


def read(path: Path, *, rank: int | None = None, report: Any = None) -> Profile:
    """Read every profiled kernel of an ``.ncu-rep``; needs the ``ncu-report`` wheel. ``report``: the file
    already loaded (``open_report``), which is the slow part."""
    ctx = report if report is not None else open_report(path)  # kept alive while its actions are read
    actions, skipped = kernel_actions(path, ctx)
    launches: list[KernelLaunch] = []
    devices: dict[int, DeviceInfo] = {}
    units: dict[str, str] = {}
    for action in actions:
        name, mangled = names(action)
        metrics = _metrics(action, units)
        grid, block = _ncu.dim3_of(metrics, _ncu.GRID_DIMS), _ncu.dim3_of(metrics, _ncu.BLOCK_DIMS)
        k = _ncu.launch(
            name=name, metrics=metrics, page=1, grid=grid, block=block, stream=None, device=None, rank=rank,
            source=str(path), source_format=FORMAT, mangled=mangled,
        )  # fmt: skip
        if k is None:
            raise _ncu.no_duration(path, 1, name[:60])
        launches.append(k)
        if k.device is not None and k.device not in devices:
            devices[k.device] = _device(action, k.device)
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
