"""The one AMD mnemonic classifier: the mnemonics the former mix and ATT tables disputed (docs/codeobj.md),
each checked in both views, the instruction mix and the ATT stall class."""

from __future__ import annotations

import pytest

from kernelscope.analyses.att import STALL_CLASSES, stall_class
from kernelscope.codeobj.amd_classes import CLASSES, STALL_CLASS, amd_class
from kernelscope.codeobj.mix import amd_mix


@pytest.mark.parametrize(
    ("isa", "mix_class", "att_class"),
    [
        ("s_getpc_b64 s[0:1]", "salu", "salu"),  # was mix branch
        ("s_rfe_b64 s[0:1]", "branch", "branch"),  # was mix salu
        ("s_delay_alu instid0(VALU_DEP_1)", "nop", "nop"),  # was att salu
        ("s_clause 0x1", "nop", "nop"),  # was att salu
        ("s_endpgm", "other", "other"),  # was mix salu
        ("s_code_end", "other", "other"),
        ("s_sendmsg sendmsg(MSG_DEALLOC_VGPRS)", "other", "other"),
        ("s_trap 2", "other", "other"),
        ("s_icache_inv", "other", "other"),
        ("s_sethalt 1", "other", "other"),
        ("s_ttracedata", "other", "other"),
        ("s_memtime s[0:1]", "smem", "smem_issue"),  # was mix salu
        ("s_memrealtime s[0:1]", "smem", "smem_issue"),
        ("s_atc_probe 7, s[0:1], 0x0", "smem", "smem_issue"),
        ("s_scratch_store_dword s1, s[2:3], 0x0", "smem", "smem_issue"),
        ("s_atomic_add s1, s[2:3], 0x0", "smem", "smem_issue"),
        ("s_buffer_atomic_add s1, s[4:7], 0x0", "smem", "smem_issue"),
        ("s_prefetch_data s[0:1], 0x0, null, 0", "smem", "smem_issue"),
        ("s_gl1_inv", "smem", "smem_issue"),  # both had salu
        ("s_buffer_prefetch_data s[0:3], 0x0, null, 0", "smem", "smem_issue"),  # both had salu
        ("image_load v[0:3], v[4:5], s[8:15] dmask:0xf dim:SQ_RSRC_IMG_2D", "vmem_load", "vmem_issue"),  # was mix other
        ("image_sample v[0:3], v[4:5], s[8:15], s[16:19] dmask:0xf", "vmem_load", "vmem_issue"),
        ("image_store v[0:3], v[4:5], s[8:15] dmask:0xf", "vmem_store", "vmem_issue"),
        ("image_atomic_add v0, v[4:5], s[8:15] dmask:0x1", "vmem_atomic", "vmem_issue"),
        ("buffer_wbl2 sc1", "vmem_other", "vmem_issue"),  # was mix other
        ("buffer_inv sc1", "vmem_other", "vmem_issue"),
        ("global_inv scope:SCOPE_DEV", "vmem_other", "vmem_issue"),
        ("tensor_load_to_lds s[0:3], s[4:11]", "vmem_load", "vmem_issue"),
        ("exp mrt0 v0, v1, v2, v3 done", "export", "other"),  # an export, no stall class of its own
    ],
)
def test_disputed_mnemonics(isa: str, mix_class: str, att_class: str) -> None:
    assert amd_mix([isa, "v_mov_b32 v0, 0"])[mix_class] == 1  # (not last: trailing padding is dropped)
    assert stall_class(isa) == att_class


def test_every_class_has_a_stall_class() -> None:
    assert set(STALL_CLASS) == {cls for cls, _, _ in CLASSES}
    assert set(STALL_CLASS.values()) - {"wait"} <= set(STALL_CLASSES)  # waits are classed by their counters


def test_unknown_mnemonics_are_other() -> None:
    assert amd_class("foo_bar") == "other"
