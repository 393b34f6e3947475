"""Where code lives: a source line, and a kernel's definition and tests (the records ``kscope find`` produces)."""

from __future__ import annotations

from typing import Literal

import msgspec

FindStatus = Literal["resolved", "ambiguous", "no_source", "not_found"]


class SourceLocation(msgspec.Struct, frozen=True):
    """A line of a source file, as a line table (ncu's ``-lineinfo``, ATT's code object) attributes an
    instruction to it. Results whose JSON shows ``"file:line"`` keep that text and give this as ``location``."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    @classmethod
    def parse(cls, text: str | None) -> SourceLocation | None:
        """A ``"file:line"`` text as line tables print it (ATT's code.json); None without a line number."""
        file, _, line = (text or "").rpartition(":")
        return cls(file, int(line)) if file and line.isdigit() else None


class KernelDefinition(msgspec.Struct, frozen=True, kw_only=True):
    """One kernel definition in an indexed repository (``path`` relative to ``root``; checked to exist)."""

    repo: str
    root: str
    path: str
    line: int
    symbol: str
    definition: str  # triton | cute | global | macro | templated | struct | function | asm | op (docs/find.md)
    namespace: str | None = None
    commit: str | None = None
    url: str | None = None  # upstream, pinned to the indexed commit
    score: float = 0.0


class TestHit(msgspec.Struct, frozen=True, kw_only=True):
    """A test file that exercises the kernel, and a command that runs it from the repository root."""

    path: str
    line: int
    tests: list[str] = msgspec.field(default_factory=list)  # test functions that reference it
    command: str | None = None
    via: str = ""  # the identifier that links the test to the kernel


class SourceMatch(msgspec.Struct, kw_only=True):
    """The answer for one kernel name."""

    name: str
    function: str
    kind: str
    category: str
    # the rules.yaml entries that decided kind and category: the name's, or ``source:…`` where the resolved
    # definition decided them (identity/source.py): ``source:triton-definition`` for a bare name the rules left
    # ``unknown`` that resolved to a ``@triton.jit`` function, ``source:<sources rule>`` for a category its body decided
    kind_rule: str = ""
    category_rule: str = ""
    status: FindStatus
    reason: str = ""
    location: KernelDefinition | None = None
    candidates: list[KernelDefinition] = msgspec.field(default_factory=list)
    # resolved: the same kernel elsewhere (builds for other GPUs, vendored or shared copies)
    copies: list[KernelDefinition] = msgspec.field(default_factory=list)
    tests: list[TestHit] = msgspec.field(default_factory=list)


class SourceMatches(msgspec.Struct, kw_only=True):
    """``kscope find --json``: the answer for every kernel name asked about."""

    schema: str = "kernelscope.find.v1"
    kernels: list[SourceMatch]
