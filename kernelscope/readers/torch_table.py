"""torch.profiler's printed table (``prof.key_averages().table(...)``): the form profiles are pasted in as issues
and logs. Its kernel rows are per-kernel statistics: calls and the kernel's own device time (``Self CUDA``).

The table mixes rows of four sorts, told apart by their numbers: CPU ops (CPU time), kernels and runtime copies
(device time, no CPU time), and the GPU side of ``record_function`` ranges (device time, no CPU time, and a CPU row
of the same name that owns none of that time, or one of PyTorch's own range names: ``Optimizer.step#AdamW.step``,
``ProfilerStep#3``, or more device time than the footer's total). Inductor's Triton kernels have a CPU row of their
name too, the op that launched them, owning exactly their time and calls. Copies
(``Memcpy``/``Memset``) are not kernel time and are left out, as ranges are. The columns are found under the
table's dashed rule (its headers may overflow their columns); numbers carry their unit (``us``, ``ms``, ``s``).
Names longer than the name column are cut to it and end in ``...``; the result says how many, and rows whose cut
names agree are added together. Where the footer's ``Self CUDA time total`` differs from what the rows hold
(``row_limit`` cut the table, or a range's CPU row was cut from it), the result says so. No timeline:
``timing="none"``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from kernelscope.errors import FormatError
from kernelscope.model import KernelStats, Profile, numbers
from kernelscope.readers._tables import by_name, cut_note, lines, say

FORMAT = "torch-table"
_EXPECTED = "a torch.profiler key_averages() table (Name, Self CPU %, ..., Self CUDA, ..., # of Calls)"
_RULE = re.compile(r"^-{4,}(?:  -{4,})+\s*$")
_TIME = re.compile(r"^(-?[\d.,]+)(ns|us|ms|s)$")
_NS_PER = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
_DEVICE = re.compile(r"^self (?!cpu)(\w+)$")  # Self CUDA (Self XPU, Self Device, ... on other backends)
_MEMORY = re.compile(r"^(?:Memcpy|Memset)\b")
_FOOTER = re.compile(r"^Self (?!CPU)\w+ time total:\s*(\S+)\s*$")
# PyTorch's own ranges (Optimizer.step#AdamW.step, ProfilerStep#3, "## Call CompiledFxGraph ...", nccl:all_reduce): a
# kernel's name has no "#" outside a demangled lambda's "(...)#1" and never starts so
_RANGE = re.compile(r"^(?:##|nccl:)|^[^(<]*#")
_CUT = "..."


def looks_like(head: bytes) -> bool:
    """``head`` holds the table's header between dashed rules."""
    text = head.decode("utf-8", "replace").splitlines()
    return any(_RULE.match(a) and _header(b) is not None for a, b in itertools.pairwise(text))


def _header(line: str) -> list[str] | None:
    """The header's names (split where two spaces part them) when it is this table's, else None."""
    cols = re.split(r"\s{2,}", line.strip())
    keys = [c.lower() for c in cols]
    ok = keys[:1] == ["name"] and "# of calls" in keys and "cpu total" in keys and any(_DEVICE.match(k) for k in keys)
    return cols if ok else None


def _tables(text: Iterable[str]) -> Iterator[tuple[list[str], list[list[str]], float | None]]:
    """Each table as (header names, row cells, footer device total in ns)."""
    prev = ""
    it = iter(text)
    for raw in it:
        line = raw.rstrip("\r\n")
        if not (_RULE.match(prev) and (cols := _header(line)) is not None):
            prev = line
            continue
        spans = [m.span() for m in re.finditer(r"-+", prev)]
        if len(spans) != len(cols):
            prev = line
            continue
        rows: list[list[str]] = []
        footer = None
        next(it, None)  # the rule under the header
        for body in it:
            row = body.rstrip("\r\n")
            if _RULE.match(row) or not row.strip():
                break
            cells = [row[a:b].strip() for a, b in spans[:-1]] + [row[spans[-1][0] :].strip()]
            rows.append(cells)
        for tail in it:  # the footer lines after the closing rule
            if not tail.strip() or not tail.startswith("Self "):
                break
            if m := _FOOTER.match(tail.strip()):
                footer = _ns(m.group(1))
        yield cols, rows, footer
        prev = ""


def _ns(cell: str) -> float | None:
    m = _TIME.match(cell.strip())
    v = numbers.to_float(m.group(1)) if m else None
    return None if m is None or v is None else v * _NS_PER[m.group(2)]


def read(path: Path, *, rank: int | None = None) -> Profile:
    del rank  # statistics are already aggregated over the profile
    found = list(_tables(lines(path, _EXPECTED)))
    if not found:
        raise FormatError(path, _EXPECTED, "no table of Name ... Self CUDA ... # of Calls columns under a dashed rule")
    cols, rows, footer = found[0]
    at = {c.lower(): i for i, c in enumerate(cols)}
    device = next(c for c in at if _DEVICE.match(c))
    parsed: list[tuple[str, float, float, int]] = []  # name, CPU total, device self, calls
    for n, cells in enumerate(rows, start=1):
        cpu, dev, calls = _ns(cells[at["cpu total"]]), _ns(cells[at[device]]), numbers.to_int(cells[at["# of calls"]])
        if cpu is None or dev is None or calls is None:
            raise FormatError(path, _EXPECTED, f"row {n} without CPU total, {device} and # of Calls numbers")
        parsed.append((cells[0], cpu, dev, calls))
    # a CPU row's own device time and calls, by name: Inductor launches a Triton kernel from a CPU op of the kernel's
    # name owning exactly its time, where a record_function range's CPU row owns none of the time its GPU row spans
    launcher: dict[str, tuple[float, int]] = {}
    for name, cpu, dev, calls in parsed:
        if cpu > 0:
            t, c = launcher.get(name, (0.0, 0))
            launcher[name] = (t + dev, c + calls)
    stats, dropped = [], 0
    for name, cpu, dev, calls in parsed:
        if cpu < 0 or dev < 0 or calls < 0:
            dropped += 1
            continue
        if cpu > 0 or dev == 0 or _MEMORY.match(name) or _RANGE.search(name):
            continue
        if name in launcher and (launcher[name][1] != calls or abs(launcher[name][0] - dev) > 1e-6 * dev):
            continue  # the device side of a range
        if footer is not None and dev > footer * 1.001:
            continue  # more device time than the profile's kernels and copies hold: a range
        if calls == 0:  # device time in no call
            dropped += 1
            continue
        stats.append(KernelStats(name=name, calls=calls, total_ns=dev, avg_ns=dev / calls, source=str(path)))
    numbers.count_dropped("kernel rows", dropped, path)
    merged = by_name(stats)
    width = max((len(s.name) for s in stats if s.name.endswith(_CUT)), default=0)
    notes = [n for n in [cut_note("torch.profiler", _CUT, width, stats, merged)] if n]
    memory = sum(dev for name, cpu, dev, _ in parsed if cpu == 0 and _MEMORY.match(name))
    shown = sum(s.total_ns for s in merged) + memory
    if footer and shown < 0.999 * footer:
        notes.append(
            f"its rows hold {shown / 1e3:,.1f} of the {footer / 1e3:,.1f} us of device time its footer counts "
            "(row_limit cut the table?)"
        )
    elif footer and shown > 1.001 * footer:  # a range's device row whose CPU row the table left out reads as a kernel
        notes.append(
            f"its rows without CPU time hold {shown / 1e3:,.1f} us, more than the {footer / 1e3:,.1f} us of device "
            "time its footer counts: some are record_function ranges, not kernels"
        )
    if len(found) > 1:
        notes.append(f"{len(found)} tables: the first read")
    say(path, notes)
    return Profile(sources=[str(path)], formats=[FORMAT], timing="none", stats=merged)
