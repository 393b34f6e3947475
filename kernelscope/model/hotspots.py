"""Where a kernel stalls, whichever tool measured it: hot instructions and source lines (``kscope att``, ``ncu``).

Each is one type for both ATT (cycles per instruction, summed over the traced waves) and Nsight Compute (warp PC
samples per instruction). A field only one tool measures is ``UNSET`` for the other and so absent from its JSON;
field order follows both schemas (``kernelscope.att.v1``, ``kernelscope.ncu.v1``). ``source`` is the
``"file:line"`` text the JSON shows, ``location`` the same as a ``SourceLocation``.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from kernelscope.model.source import SourceLocation


class ContextInstruction(msgspec.Struct, kw_only=True):
    """An instruction shown around a hotspot, in address order, the hotspot itself included."""

    address: int
    offset: int | UnsetType | None = UNSET  # ncu: bytes from the kernel's first instruction
    instruction: str
    stall_cycles: int | UnsetType = UNSET  # ATT
    stall_samples: int | UnsetType = UNSET  # ncu
    hits: int | UnsetType = UNSET  # ATT
    hot: bool | UnsetType = UNSET  # ATT: the hotspot itself


class Hotspot(msgspec.Struct, kw_only=True):
    """One instruction and what it stalled: ATT's cycles by stall class, or ncu's samples by stall reason."""

    address: int  # ATT: Vaddr as in code.json
    code_object: int | UnsetType = UNSET  # ATT
    line: int | UnsetType = UNSET  # ATT: the decoder's line number
    offset: int | UnsetType | None = UNSET  # ncu: bytes from the kernel's first instruction
    instruction: str
    stall_class: str | UnsetType = UNSET  # ATT
    stall_cycles: int | UnsetType = UNSET  # ATT
    latency_cycles: int | UnsetType = UNSET  # ATT
    idle_cycles: int | UnsetType = UNSET  # ATT
    hits: int | UnsetType = UNSET  # ATT
    stall_share: float | UnsetType = UNSET  # ATT: percent of the capture's stall cycles
    stall_samples: int | UnsetType = UNSET  # ncu
    pct: float | UnsetType = UNSET  # ncu: percent of the kernel's samples
    not_issued: int | UnsetType = UNSET  # ncu
    reasons: dict[str, int] | UnsetType = UNSET  # ncu: most samples first
    executed: int | UnsetType | None = UNSET  # ncu: warp-level instructions executed
    thread_executed: int | UnsetType | None = UNSET  # ncu
    source: str | None  # "file:line"; None without a line table
    source_text: str | UnsetType | None = UNSET  # ncu: the line itself, where the source was imported
    context: list[ContextInstruction]


class SourceLine(msgspec.Struct, kw_only=True):
    """One source line and the instructions a line table attributes to it."""

    source: str | None  # "file:line"; ATT: None for the instructions without line info
    file: str | UnsetType = UNSET  # ncu
    line: int | UnsetType = UNSET  # ncu
    text: str | UnsetType | None = UNSET  # ncu: the line itself, where the source was imported
    stall_samples: int | UnsetType = UNSET  # ncu
    pct: float | UnsetType = UNSET  # ncu
    reasons: dict[str, int] | UnsetType = UNSET  # ncu
    executed: int | UnsetType | None = UNSET  # ncu
    instructions: int
    hits: int | UnsetType = UNSET  # ATT
    latency_cycles: int | UnsetType = UNSET  # ATT
    stall_cycles: int | UnsetType = UNSET  # ATT
    idle_cycles: int | UnsetType = UNSET  # ATT
    stall_share: float | UnsetType = UNSET  # ATT
    top_class: str | UnsetType | None = UNSET  # ATT: the stall class with most of this line's stall cycles

    @property
    def location(self) -> SourceLocation | None:
        return SourceLocation.parse(self.source)


def top_reason(x: Hotspot | SourceLine) -> tuple[str, int]:
    """ncu: the stall reason with most samples and its samples; ``("", 0)`` without any (and for ATT)."""
    return next(iter((x.reasons or {}).items()), ("", 0))
