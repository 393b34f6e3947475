"""What the readers of printed statistics tables share (``nsys stats``' human forms, torch.profiler's table):
rows of one kernel added together, and the note on names the printer cut to fit its column."""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterator
from pathlib import Path

from kernelscope.errors import FormatError, partial_input
from kernelscope.model import KernelStats
from kernelscope.readers._io import open_binary


def by_name(stats: list[KernelStats]) -> list[KernelStats]:
    """One row per name: calls, times and shares add up, min and max combine; a median or deviation of the
    whole is not in the rows."""
    out: dict[str, KernelStats] = {}
    for s in stats:
        if (o := out.get(s.name)) is None:
            out[s.name] = s
            continue
        calls, total = o.calls + s.calls, o.total_ns + s.total_ns
        out[s.name] = KernelStats(
            name=s.name,
            calls=calls,
            total_ns=total,
            avg_ns=total / calls if calls else None,
            min_ns=min((v for v in (o.min_ns, s.min_ns) if v is not None), default=None),
            max_ns=max((v for v in (o.max_ns, s.max_ns) if v is not None), default=None),
            pct=None if o.pct is None or s.pct is None else o.pct + s.pct,
            source=s.source,
        )
    return list(out.values())


def lines(path: Path, expected: str) -> Iterator[str]:
    """The file's lines (gzip-transparent); undecodable bytes replaced, since a log around a table may hold any."""
    try:
        with io.TextIOWrapper(open_binary(path), encoding="utf-8", errors="replace", newline="") as f:
            yield from f
    except (OSError, EOFError, zlib.error) as exc:
        raise FormatError(path, expected, f"unreadable ({exc})") from None


def cut_note(printer: str, mark: str, width: int, stats: list[KernelStats], merged: list[KernelStats]) -> str | None:
    """How many kernel names ``printer`` cut to ``width`` characters (ending in ``mark``), and how many rows were
    added to another because their cut names agree; None when none was cut."""
    cut = sum(s.name.endswith(mark) for s in merged)
    if not cut:
        return None
    note = f"{printer} cut {cut} of {len(merged)} kernel names to {width} characters ('{mark}')"
    if shared := len(stats) - len(merged):
        were = "rows sharing a cut name with another were" if shared > 1 else "row sharing a cut name with another was"
        note += f", and {shared} {were} added to it"
    return note


def say(path: Path, notes: list[str]) -> None:
    if notes:
        partial_input(f"{path}: " + "; ".join(notes))
