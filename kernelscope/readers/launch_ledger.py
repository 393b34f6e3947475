"""Triton launch ledger (``launches_rank<R>_pid<P>.jsonl``, JSON lines of ``TritonLaunch``): read strictly,
every line checked, errors name the line.

``path`` is a ledger file, a folder (every ``launches_*.jsonl`` in it: a ``kscope profile --out`` folder),
or a trace file, whose own process's ledger is read: ``trace_rank0_pid42.json.gz`` ->
``launches_rank0_pid42.jsonl`` beside it (every ledger there when the trace is named otherwise).
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from kernelscope.errors import FormatError, InputError
from kernelscope.model import text
from kernelscope.model.files import read_bytes
from kernelscope.model.launches import TritonLaunch

GLOB = "launches_*.jsonl"
_NAME = re.compile(r"rank(\d+)_pid(\d+)\.")
_EXPECTED = "a launch ledger line: a JSON object with kernel, t_ns, grid, num_warps, num_stages, args"
_TRUNCATED = "the workload was killed while writing it: remove the last line, or profile again"


def read(path: Path) -> list[TritonLaunch]:
    """Every launch of every ledger ``path`` names, file by file (in name order), each in launch order."""
    return [launch for f in files(Path(path)) for launch in _read_file(f)]


def files(path: Path) -> list[Path]:
    """The ledger files ``path`` stands for (see the module's docstring); ``InputError`` when there are none."""
    if path.is_dir():
        found = sorted(path.glob(GLOB))
        if not found:
            raise InputError(f"{path}: holds no Triton launch ledger ({GLOB}); {_NO_LEDGER}")
        return found
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.match(GLOB):
        return [path]
    sibling = _sibling(path)
    if sibling is None:
        return files(path.parent)
    if not sibling.exists():
        raise InputError(f"{path}: no Triton launch ledger beside it ({sibling.name}); {_NO_LEDGER}")
    return [sibling]


def beside(trace: Path) -> Path | None:
    """The ledger ``kscope profile`` wrote beside the trace ``trace_rank<R>_pid<P>...``, if it did."""
    sibling = _sibling(Path(trace))
    return sibling if sibling is not None and sibling.is_file() else None


def _sibling(trace: Path) -> Path | None:
    """Where the ledger of the trace ``trace_rank<R>_pid<P>...`` would be (None: not such a name)."""
    m = _NAME.search(trace.name)
    return trace.with_name(f"launches_rank{m[1]}_pid{m[2]}.jsonl") if m else None


_NO_LEDGER = (
    "`kscope profile` writes one for each Python process that launches Triton kernels "
    "(not with KSCOPE_LAUNCHES=0 or a tracer other than torch)"
)


def _read_file(path: Path) -> list[TritonLaunch]:
    m = _NAME.search(path.name)
    rank, pid = (int(m[1]), int(m[2])) if m else (None, None)
    decoder = msgspec.json.Decoder(TritonLaunch)
    data = read_bytes(path)
    launches = []
    lines = data.splitlines()
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            launch = text.json(line, decoder=decoder)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            last = i == len(lines) and not data.endswith(b"\n")  # every line the hook writes ends with one
            raise FormatError(f"{path}:{i}", _EXPECTED, str(exc), _TRUNCATED if last else "") from None
        launch.rank, launch.pid = rank, pid
        launches.append(launch)
    return launches
