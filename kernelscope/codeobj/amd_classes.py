"""The one AMD mnemonic classifier: each instruction's class by its ISA encoding family.

The instruction mix (``codeobj/mix.py``) counts these classes; the ATT stall classes
(``analyses/att.py``) are a coarser view of the same ones (``STALL_CLASS``). Mnemonics the two
former tables classed differently, and the ISA section that decides each: docs/codeobj.md.
"""

from __future__ import annotations

from functools import cache

_VMEM = ("buffer_", "tbuffer_", "global_", "flat_", "scratch_", "image_", "tensor_")  # MUBUF/MTBUF/FLAT/MIMG
_SMEM = (
    "s_load", "s_buffer_load", "s_store", "s_buffer_store", "s_scratch_", "s_atomic", "s_buffer_atomic", "s_dcache",
    "s_gl1_inv", "s_memtime", "s_memrealtime", "s_atc_probe", "s_prefetch", "s_buffer_prefetch",
)  # fmt: skip

# (class, its ATT stall class, mnemonic prefixes), first match wins; waits are classed by their
# counters in analyses/att.py
CLASSES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("matrix", "matrix", ("v_mfma", "v_smfmac", "v_wmma", "v_swmmac")),  # VOP3P-MAI (CDNA), WMMA (RDNA)
    ("accvgpr", "valu", ("v_accvgpr_",)),
    ("dot", "valu", ("v_dot",)),
    ("scratch_load", "vmem_issue", ("scratch_load",)),
    ("scratch_store", "vmem_issue", ("scratch_store",)),
    ("vmem_load", "vmem_issue", (*(f"{p}load" for p in _VMEM), "image_sample", "image_gather")),
    ("vmem_store", "vmem_issue", tuple(f"{p}store" for p in _VMEM)),
    ("vmem_atomic", "vmem_issue", tuple(f"{p}atomic" for p in _VMEM)),
    ("vmem_other", "vmem_issue", _VMEM),  # cache control (buffer_wbl2, global_inv, ...), BVH
    ("smem", "smem_issue", _SMEM),
    ("lds_load", "lds_issue", ("ds_read", "ds_load")),
    ("lds_store", "lds_issue", ("ds_write", "ds_store")),
    ("lds_other", "lds_issue", ("ds_",)),
    ("wait", "wait", ("s_waitcnt", "s_wait_")),
    ("barrier", "barrier", ("s_barrier",)),
    ("branch", "branch", ("s_branch", "s_cbranch", "s_setpc", "s_swappc", "s_call", "s_rfe")),  # they write the PC
    ("nop", "nop", ("s_nop", "s_sleep", "s_delay_alu", "s_clause")),  # SOPP delays and hints: no ALU work
    # SOPP program control (end, messages, traps, trace, cache invalidate): no scalar ALU work
    ("other", "other", ("s_endpgm", "s_sendmsg", "s_trap", "s_icache", "s_sethalt", "s_ttrace", "s_code_end")),
    ("salu", "salu", ("s_",)),
    ("valu", "valu", ("v_",)),
    ("export", "other", ("exp",)),
)
STALL_CLASS = {cls: stall for cls, stall, _ in CLASSES}


@cache
def amd_class(mnemonic: str) -> str:
    """The class of a lower-case mnemonic (a bounded vocabulary, hence cached); ``other`` if unknown."""
    return next((cls for cls, _, prefixes in CLASSES if mnemonic.startswith(prefixes)), "other")
