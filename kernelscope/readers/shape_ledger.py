"""Shape ledger (JSON lines of ``ShapeRun``): read strictly, every line checked, errors name the line."""

from __future__ import annotations

from pathlib import Path

import msgspec

from kernelscope.errors import FormatError, json_text
from kernelscope.model.shapes import ShapeRun

_EXPECTED = "a shape ledger line: a JSON object with kernel, model, stage, dtype, shape, time_us, baseline_us"


def read(path: Path) -> list[ShapeRun]:
    """Every record; ``speedup`` filled in from the two times where a line gives both and no speedup."""
    runs = []
    decoder = msgspec.json.Decoder(ShapeRun)
    for i, line in enumerate(Path(path).read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise FormatError(f"{path}:{i}", _EXPECTED, str(exc)) from None
        if r.speedup is None and r.time_us and r.baseline_us:
            r.speedup = r.baseline_us / r.time_us
        runs.append(r)
    return runs


def write(runs: list[ShapeRun]) -> str:
    return "".join(json_text(msgspec.json.encode(r)) + "\n" for r in runs)  # printed by `kscope shapes`
