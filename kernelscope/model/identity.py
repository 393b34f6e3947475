"""What a kernel name says: the record ``kscope classify`` produces and ``gap``/``find`` attach to rows."""

from __future__ import annotations

import msgspec


class KernelIdentity(msgspec.Struct, frozen=True, kw_only=True):
    """One kernel name, read. Labels follow docs/identity.md; unknown attributes are ``None``.

    ``kind`` is the compiler or library that made the kernel, ``category`` what it computes,
    ``function`` the short base name a developer would grep for. ``demangled`` is the name as C++
    (equal to ``name`` when the name was not mangled); ``truncated`` says the profiler cut the name.
    ``rule`` and ``category_rule`` name the entries of identity/rules.yaml that decided.
    """

    name: str
    demangled: str
    kind: str
    category: str
    function: str
    namespace: str | None = None  # C++ scope of the function ("vllm", "at::native"); None when bare
    # how many template arguments the name gives the function (0: none, a plain function or struct); None
    # where the name does not say (bare or cut names, a function the rules renamed)
    template_args: int | None = None
    vendor: str | None = None
    dtype: str | None = None
    tile: str | None = None
    mma: str | None = None
    layout: str | None = None
    params: dict[str, str] = msgspec.field(default_factory=dict)
    truncated: bool = False
    rule: str = ""
    category_rule: str = ""

    def summary(self) -> str:
        """One line: who made it and what it computes, then dtype, tile and MMA when the name says them."""
        tags = [f"{label} {v}" for label, v in (("dtype", self.dtype), ("tile", self.tile), ("mma", self.mma)) if v]
        return ", ".join([f"{self.kind} {self.category}", *tags])
