"""``kscope att`` analysis against ground truth recomputed here from the raw ATT files.

Truth comes from the folders in tests/data/att (six real MI350X captures, see its README) read with
plain ``json``: code.json's own columns for the totals, the wave files walked instruction by instruction
with the decoder's documented sums for the cross-check, their timelines for the wave states, and an
event sweep over occupancy.json for the resident waves. The VGPR allocation is checked against rocprofv3's
own kernel_trace.csv of the same kernels (kernelscope/data/demo/mi350x), whose VGPR_Count is half the real
allocation on gfx950.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kernelscope import api
from kernelscope.analyses.att import STALL_CLASSES, analyze, registers, resident_waves, stall_class, wait_kind
from kernelscope.data import demo_file
from kernelscope.errors import FormatError, InputError
from kernelscope.model.att import AttResult, OccupancyEvent
from kernelscope.readers import att as reader

ATT = Path(__file__).parent / "data" / "att"
CAPTURES = sorted(p.parent for p in ATT.rglob("code.json"))
IDS = ["/".join(p.relative_to(ATT).parts[:2]) for p in CAPTURES]
# kernel folder in kernelscope/data/demo/mi350x -> its capture here
KERNEL_TRACES = {
    "rmsnorm": "rmsnorm/big",
    "pa_mqa_logits_fp4": "pa_mqa_logits_fp4/big",
    "flash_attn_func": "flash_attn_func/small",
    "blockscale_preshuffle_gemm": "blockscale_preshuffle_gemm/big",
}
STATE_NAMES = {1: "idle", 2: "exec", 3: "wait", 4: "stall"}  # rocprof-trace-decoder's wstate_type_t


@cache
def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _code(folder: Path) -> list[list[Any]]:
    rows: list[list[Any]] = _json(folder / "code.json")["code"]
    return [r for r in rows if not r[0].startswith(";")]


def _waves(folder: Path) -> list[dict[str, Any]]:
    return [_json(p)["wave"] for p in sorted(folder.glob("se*_sm*_sl*_wv*.json"))]


@cache
def _result(folder: Path, top: int = 10) -> AttResult:
    return analyze(reader.read(folder), top=top)


def _wave_sums(folder: Path) -> dict[int, list[int]]:
    """line -> [hits, latency, stall, idle], walked as the decoder sums them (rocprofiler-sdk att-tool)."""
    sums: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for w in _waves(folder):
        prev = w["begin"]
        for time, _cat, stall, duration, line in w["instructions"]:
            if line == 0:
                continue
            s = sums[line]
            s[0] += 1
            s[1] += duration
            s[2] += stall
            s[3] += max(time - prev, 0)
            prev = max(prev, time + duration)
    return sums


@pytest.fixture(params=CAPTURES, ids=IDS)
def folder(request: pytest.FixtureRequest) -> Path:
    return Path(request.param)


def test_all_six_corpus_captures_are_bundled() -> None:
    assert len(CAPTURES) == 6


def test_totals_are_code_json_sums(folder: Path) -> None:
    r = _result(folder)
    rows = _code(folder)
    assert r.instructions == len(rows)
    assert r.waves == len(list(folder.glob("se*.json")))
    want = [sum(x[i] for x in rows) for i in range(6, 10)]  # Hit, Latency, Stall, Idle
    assert [r.hits, r.latency_cycles, r.stall_cycles, r.idle_cycles] == want
    assert r.stall_pct == pytest.approx(100 * sum(x[8] for x in rows) / sum(x[7] for x in rows))


def test_wave_files_reproduce_code_json(folder: Path) -> None:
    """The decoder's per-instruction sums, recomputed from the wave files, equal code.json's columns."""
    sums = _wave_sums(folder)
    rows = {r[2]: r for r in _code(folder)}
    assert {line: list(r[6:10]) for line, r in rows.items() if r[6]} == dict(sums)
    check = _result(folder).crosscheck
    assert check.ok and check.mismatched_lines == 0 and not check.mismatches
    for i, key in enumerate(("hits", "latency", "stall", "idle")):
        assert check.wave_totals[key] == check.code_totals[key] == sum(s[i] for s in sums.values())


def test_missing_wave_file_is_reported_with_its_own_counts(tmp_path: Path) -> None:
    src = ATT / "fused_rope_cache" / "big" / "ui_output_agent_4253_dispatch_8781"
    shutil.copytree(src, tmp_path / "cap")
    gone = sorted((tmp_path / "cap").glob("se*.json"))[0]
    lost = _wave_sums(src)
    gone.unlink()
    kept = _wave_sums(tmp_path / "cap")
    r = analyze(reader.read(tmp_path / "cap"), top=0)
    check = r.crosscheck
    assert not check.ok
    assert check.listed_wave_files == 4 and check.wave_files == 3
    assert check.code_totals["hits"] - check.wave_totals["hits"] == sum(lost[k][0] - kept[k][0] for k in lost)
    assert check.mismatched_lines == sum(lost[k] != kept.get(k, [0, 0, 0, 0]) for k in lost)
    assert any("disagrees" in n for n in r.notes)


def test_wave_states_are_timeline_cycles_under_the_decoder_names(folder: Path) -> None:
    cycles = dict.fromkeys(STATE_NAMES.values(), 0)
    for w in _waves(folder):
        for state, duration in w["timeline"]:
            cycles[STATE_NAMES[state]] += duration
    total = sum(cycles.values())
    r = _result(folder)
    for name, c in cycles.items():
        assert r.state_cycles[name] == c
        assert r.state_pct[name] == pytest.approx(100 * c / total)
    # wstates<k>.json holds the same cycles as a wave-count step function
    for k, name in STATE_NAMES.items():
        doc = _json(folder / f"wstates{k}.json")
        t, n = doc["time"], doc["state"]
        assert sum(n[i] * (t[i + 1] - t[i]) for i in range(len(t) - 1)) == cycles[name]


def test_exec_is_state_2_not_the_near_zero_state_1() -> None:
    """FlyDSL's reports call state 1 EXEC ("0.1 % EXEC"); in the decoder's enum 1 is IDLE, 2 is EXEC."""
    for sub in ("pa_mqa_logits_fp4/big", "flash_attn_func/small"):
        r = _result(next(p for p in CAPTURES if str(p.relative_to(ATT)).startswith(sub)))
        assert 42 <= r.state_pct["exec"] <= 50
        assert r.state_pct["idle"] < 1


def test_state_timeline_integrates_to_the_wstates_files(folder: Path) -> None:
    r = analyze(reader.read(folder), bins=37)
    t = r.state_timeline
    assert t is not None and len(t.exec) == 37
    for k, name in STATE_NAMES.items():
        doc = _json(folder / f"wstates{k}.json")
        times, n = doc["time"], doc["state"]
        area = sum(n[i] * (times[i + 1] - times[i]) for i in range(len(times) - 1))
        assert sum(getattr(t, name)) * t.bin_cycles == pytest.approx(area, rel=1e-3, abs=37 * t.bin_cycles * 1e-3)


def test_hotspots_rank_instructions_by_stall_with_address_context(folder: Path) -> None:
    rows = _code(folder)
    r = _result(folder, top=5)
    want = sorted((x for x in rows if x[8]), key=lambda x: -x[8])[:5]
    assert [h.stall_cycles for h in r.hotspots] == [x[8] for x in want]
    by_addr = {(x[4], x[5]): x for x in rows}
    total = sum(x[8] for x in rows)
    for h in r.hotspots:
        row = by_addr[(h.code_object, h.address)]
        assert (h.instruction, h.stall_cycles, h.latency_cycles, h.hits, h.idle_cycles) == (
            row[0],
            row[8],
            row[7],
            row[6],
            row[9],
        )
        assert h.source == (row[3] or None)
        assert h.stall_share == pytest.approx(100 * row[8] / total)
        same = sorted(x[5] for x in rows if x[4] == h.code_object)
        i = same.index(h.address)
        assert [c.address for c in h.context] == same[max(0, i - 3) : i + 4]
        assert [c.hot for c in h.context].count(True) == 1


def test_source_lines_aggregate_their_instructions(folder: Path) -> None:
    rows = _code(folder)
    want: dict[str | None, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for x in rows:
        w = want[x[3] or None]
        w[0] += 1
        w[1] += x[6]
        w[2] += x[7]
        w[3] += x[8]
    r = _result(folder, top=0)
    assert len(r.source_lines) == len(want)
    for s in r.source_lines:
        assert [s.instructions, s.hits, s.latency_cycles, s.stall_cycles] == want[s.source]
    assert [s.stall_cycles for s in r.source_lines] == sorted((w[3] for w in want.values()), reverse=True)


def test_hotspots_and_lines_hold_att_fields_only_in_schema_order() -> None:
    """ATT and ncu share Hotspot, ContextInstruction and SourceLine; ATT's JSON has none of ncu's fields."""
    r = _result(CAPTURES[0])
    hot, line = msgspec.to_builtins(r.hotspots[0]), msgspec.to_builtins(r.source_lines[0])
    assert list(hot) == ["address", "code_object", "line", "instruction", "stall_class", "stall_cycles",
                         "latency_cycles", "idle_cycles", "hits", "stall_share", "source", "context"]  # fmt: skip
    assert list(hot["context"][0]) == ["address", "instruction", "stall_cycles", "hits", "hot"]
    assert list(line) == ["source", "instructions", "hits", "latency_cycles", "stall_cycles", "idle_cycles",
                          "stall_share", "top_class"]  # fmt: skip


def _truth_class(isa: str, deps: set[int], rows: dict[int, list[Any]]) -> str:
    """The taxonomy for the gfx950 spellings in these captures, written out independently."""
    op = isa.split(maxsplit=1)[0]
    if op == "s_waitcnt":
        vm, lgkm = "vmcnt(" in isa, "lgkmcnt(" in isa
        if vm and lgkm:  # both counters: VMEM unless the decoder saw only LDS/SMEM work outstanding
            producers = {rows[d][0].split("_")[0] for d in deps}
            return "lds_smem_wait" if producers and producers <= {"ds", "s"} else "vmem_wait"
        return "vmem_wait" if vm else "lds_smem_wait" if lgkm else "other"
    table = [
        ("s_barrier", "barrier"), ("v_mfma", "matrix"), ("buffer_", "vmem_issue"), ("global_", "vmem_issue"),
        ("ds_", "lds_issue"), ("s_load", "smem_issue"), ("s_cbranch", "branch"), ("s_branch", "branch"),
        ("s_nop", "nop"), ("s_endpgm", "other"), ("v_", "valu"), ("s_", "salu"),
    ]  # fmt: skip
    return next(cls for prefix, cls in table if op.startswith(prefix))


def test_stall_breakdown_by_instruction_class(folder: Path) -> None:
    rows = {r[2]: r for r in _code(folder)}
    deps: dict[int, set[int]] = defaultdict(set)
    for w in _waves(folder):
        for line, ds in w["waitcnt"]:
            deps[line] |= {d for d, _ in ds}
    want = dict.fromkeys(STALL_CLASSES, 0)
    for line, x in rows.items():
        want[_truth_class(x[0], deps[line], rows)] += x[8]
    r = _result(folder)
    assert r.stall_breakdown == want
    assert sum(r.stall_breakdown_pct.values()) == pytest.approx(100)


GEMM = ATT / "blockscale_preshuffle_gemm" / "big" / "ui_output_agent_14065_dispatch_120"


def _edited_code(tmp_path: Path, edit: Callable[[list[list[Any]]], None]) -> AttResult:
    """The GEMM capture analysed after ``edit`` changed the rows of a copy of its code.json."""
    shutil.copytree(GEMM, tmp_path / "cap")
    doc = json.loads((tmp_path / "cap" / "code.json").read_text())
    edit(doc["code"])
    (tmp_path / "cap" / "code.json").write_text(json.dumps(doc))
    return analyze(reader.read(tmp_path / "cap"))


def test_a_wait_whose_mnemonic_is_damaged_is_classed_not_a_key_error(tmp_path: Path) -> None:
    """Fuzz seed 49 (att, code.json + invalid UTF-8): ``s_waitcnt\ufffd…`` was a wait to the mnemonic table but
    not to the operand reader, and ``analyze`` raised KeyError 'wait'. Its stall cycles now go to ``other``."""
    damaged: list[list[Any]] = []

    def damage(code: list[list[Any]]) -> None:
        row = next(r for r in code if r[0].startswith("s_waitcnt vmcnt(") and r[8] > 0)
        row[0] = "s_waitcnt\ufffd" + row[0].removeprefix("s_waitcnt ")
        damaged.append(row)

    after = _edited_code(tmp_path, damage).stall_breakdown
    before = _result(GEMM).stall_breakdown
    assert sum(after.values()) == sum(before.values())
    assert after["other"] - before["other"] == damaged[0][8] > 0


def test_a_tab_after_the_mnemonic_reads_as_a_space(tmp_path: Path) -> None:
    """Some disassemblers write a tab between mnemonic and operands: every instruction keeps its class, and the
    kernels (registers, architecture) read the same as with spaces."""

    def tabs(code: list[list[Any]]) -> None:
        for row in code:
            if not row[0].startswith(";"):
                row[0] = row[0].replace(" ", "\t", 1)

    before, after = _result(GEMM), _edited_code(tmp_path, tabs)
    assert after.stall_breakdown == before.stall_breakdown
    assert after.kernels == before.kernels


def test_combined_wait_goes_to_lds_when_the_decoder_saw_only_lds_work(tmp_path: Path) -> None:
    """A vmcnt(N) & lgkmcnt(0) wait whose dependency records name only ds_* producers is an LDS wait."""
    shutil.copytree(GEMM, tmp_path / "cap")
    rows = {r[2]: r for r in _code(GEMM)}
    combined = [line for line, r in rows.items() if "vmcnt(" in r[0] and "lgkmcnt(" in r[0]]
    assert combined
    for p in (tmp_path / "cap").glob("se*.json"):  # drop the VMEM producers from the decoder's records
        doc = json.loads(p.read_text())
        wc = doc["wave"]["waitcnt"]
        doc["wave"]["waitcnt"] = [
            [line, ds] for line, ds in wc if line not in combined or rows[ds[0][0]][0].startswith("ds_")
        ]
        p.write_text(json.dumps(doc))
    r = analyze(reader.read(tmp_path / "cap"))
    moved = sum(rows[line][8] for line in combined)
    assert r.combined_waits.instructions == len(combined)
    assert r.combined_waits.to_lds_smem == moved and r.combined_waits.to_vmem == 0
    assert r.stall_breakdown["lds_smem_wait"] - _result(GEMM).stall_breakdown["lds_smem_wait"] == moved


@pytest.mark.parametrize(
    ("isa", "kind"),
    [
        ("s_waitcnt vmcnt(0) lgkmcnt(0)", "combined"),
        ("s_waitcnt vmcnt(0) & lgkmcnt(0)", "combined"),
        ("s_waitcnt 0", "combined"),
        ("s_waitcnt vmcnt(3)", "vmem_wait"),
        ("s_waitcnt lgkmcnt(1)", "lds_smem_wait"),
        ("s_waitcnt expcnt(0)", "other"),
        ("s_waitcnt_vscnt null, 0x0", "vmem_wait"),
        ("s_waitcnt_lgkmcnt null, 0x0", "lds_smem_wait"),
        ("s_waitcnt_depctr 0xfffe", "valu"),
        ("s_wait_loadcnt 0x0", "vmem_wait"),
        ("s_wait_storecnt 0x1", "vmem_wait"),
        ("s_wait_samplecnt 0x0", "vmem_wait"),
        ("s_wait_dscnt 0x0", "lds_smem_wait"),
        ("s_wait_kmcnt 0x0", "lds_smem_wait"),
        ("s_wait_loadcnt_dscnt 0x0", "combined"),
        ("s_wait_storecnt_dscnt 0x0", "combined"),
        ("s_wait_alu 0xfffe", "valu"),
        ("s_wait_expcnt 0x0", "other"),
        ("s_wait_idle", "combined"),
        ("s_waitcnt\tvmcnt(0)", "vmem_wait"),  # a tab after the mnemonic
        ("s_waitcnt\ufffdvmcnt(0)", "other"),  # a damaged wait (fuzz seed 49): a wait, counters unknown
        ("v_add_f32 v0, v1, v2", None),
    ],
)
def test_wait_spellings_of_gfx9_to_gfx12(isa: str, kind: str | None) -> None:
    assert wait_kind(isa) == kind


@pytest.mark.parametrize(
    ("isa", "cls"),
    [
        ("s_wait_loadcnt_dscnt 0x0", "vmem_wait"),
        ("s_barrier", "barrier"),
        ("s_barrier_signal -1", "barrier"),
        ("s_barrier_wait -1", "barrier"),
        ("v_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]", "matrix"),
        ("v_wmma_f32_16x16x16_f16 v[0:7], v[8:15], v[16:23], v[0:7]", "matrix"),
        ("v_smfmac_f32_16x16x32_f16 v[0:3], v[4:5], v[6:9], v10", "matrix"),
        ("global_load_b128 v[0:3], v4, s[0:1]", "vmem_issue"),
        ("buffer_store_dword v1, v0, s[4:7], 0 offen", "vmem_issue"),
        ("flat_load_dword v0, v[1:2]", "vmem_issue"),
        ("ds_load_b128 v[0:3], v4", "lds_issue"),
        ("s_load_b64 s[0:1], s[2:3], 0x0", "smem_issue"),
        ("s_buffer_load_dword s4, s[8:11], 0x10", "smem_issue"),
        ("v_accvgpr_read_b32 v0, a0", "valu"),
        ("s_mov_b32 s0, 0", "salu"),
        ("s_cbranch_scc1 65", "branch"),
        ("s_setpc_b64 s[30:31]", "branch"),
        ("s_nop 7", "nop"),
        ("s_sleep 1", "nop"),
        ("s_endpgm", "other"),
        ("s_sendmsg sendmsg(MSG_DEALLOC_VGPRS)", "other"),
    ],
)
def test_instruction_classes(isa: str, cls: str) -> None:
    assert stall_class(isa) == cls


@pytest.mark.parametrize("kernel", sorted(KERNEL_TRACES))
def test_vgpr_allocation_matches_rocprofv3(kernel: str) -> None:
    """rocprofv3's VGPR_Count on gfx950 is half the allocation: 2x it is the granule-rounded footprint."""
    with demo_file("mi350x", kernel, "discover_kernel_trace.csv").open() as f:
        trace = list(csv.DictReader(f))
    r = _result(next(p for p in CAPTURES if str(p.relative_to(ATT)).startswith(KERNEL_TRACES[kernel])))
    (k,) = r.kernels
    row = next(x for x in trace if k.name.startswith(x["Kernel_Name"]))
    assert r.vgpr_alloc == k.registers.vgpr_alloc == 2 * int(row["VGPR_Count"])
    assert k.registers.agpr == int(row["Accum_VGPR_Count"]) == 0
    assert k.registers.arch == "gfx950"
    # CDNA4: 512 VGPRs per SIMD lane shared by the waves, at most 8 waves per SIMD
    assert r.vgpr_waves_per_simd == min(8, 512 // (2 * int(row["VGPR_Count"])))


def test_register_ranges_count_their_top_and_agprs_share_the_file() -> None:
    isa = ["v_mfma_f32_32x32x8_f16 a[112:127], v[126:127], v[128:129], a[112:127]", "v_add_f32 v5, -v2, |v3|"]
    r = registers(isa, gfxip=9)
    assert (r.arch_vgpr, r.agpr) == (130, 128)
    # gfx90a+: align(130, 4) + 128 = 260 VGPRs, in granules of 8 -> 264; 512 // 264 = 1 wave per SIMD
    assert (r.arch, r.vgpr_alloc, r.waves_per_simd, r.max_waves_per_simd) == ("gfx942", 264, 1, 8)
    assert registers(isa, gfxip=9, arch="gfx950").arch_source == "--arch"


def test_rdna_wave32_uses_the_wave32_register_file() -> None:
    # v_maximum3_f32 is gfx950-only among gfx9 chips, but RDNA4 has it too
    isa = ["v_add_f32_e32 v40, v1, v2", "s_and_saveexec_b32 s0, vcc_lo", "v_maximum3_f32 v3, v4, v5, v6"]
    r = registers(isa, gfxip=12)
    # gfx1201 wave32: 1536 VGPRs per lane, granule 24, at most 16 waves per SIMD
    assert (r.arch, r.wave_size, r.arch_vgpr, r.vgpr_alloc) == ("gfx1201", 32, 41, 48)
    assert r.waves_per_simd == min(16, 1536 // 48)
    assert registers(isa[:1], gfxip=12).wave_size == 64
    unknown = registers(isa, gfxip=10)
    assert unknown.vgpr_alloc is None and "--arch" in unknown.arch_source


@pytest.mark.parametrize(
    ("isa", "vgprs", "agprs"),
    [
        ("v_add_f32 v5, -v2, |v3|", 6, 0),
        ("v_fma_f32 v1, neg(v9), v2, v3", 10, 0),
        ("global_load_dwordx4 v[0:3], v4, s[2:3]", 5, 0),
        ("v_mov_b32 v255, s0\nv_accvgpr_write_b32 a17, v0", 256, 18),
        ("v_cndmask_b32 v0, v1, v2, vcc\ns_waitcnt vmcnt(0) lgkmcnt(0)", 3, 0),
        ("v_mov_b32 v1, 0xa0", 2, 0),  # the hex digit a is no AGPR
        ("ds_read_b128 v[10:13] v[3:]", 14, 0),  # a range without its top is no operand
        ("s_endpgm", 0, 0),
    ],
)
def test_register_operands(isa: str, vgprs: int, agprs: int) -> None:
    r = registers(isa.split("\n"), gfxip=9)
    assert (r.arch_vgpr, r.agpr) == (vgprs, agprs)


AMD_CODE_OBJECTS = sorted((Path(__file__).parent / "data" / "codeobj").glob("*.hsaco"))


@pytest.mark.parametrize("path", AMD_CODE_OBJECTS, ids=[p.name for p in AMD_CODE_OBJECTS])
def test_register_operands_match_the_compiler_metadata(path: Path) -> None:
    """The highest register the disassembly names is the compiler's own count (.vgpr_count, .agpr_count)."""
    from kernelscope.codeobj.tools import llvm_objdumps

    (co,) = api.isa([path])
    (k,) = co.kernels
    for objdump in llvm_objdumps():
        cmd = [objdump, "-d", "--no-show-raw-insn", "--no-leading-addr", f"--mcpu={co.arch}", str(path)]
        text = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
        isa = [line.split("//")[0].strip() for line in text.splitlines() if line.startswith(("\t", " "))]
        if isa:
            break
    else:
        pytest.skip(f"no llvm-objdump here disassembles {co.arch}")
    r = registers(isa, gfxip=int(co.arch[3:-2]))
    assert (r.arch_vgpr, r.agpr) == (k.arch_vgpr, k.agpr or 0)


def _sweep(folder: Path) -> int:
    """Most waves on one SIMD: +1/-1 per event, ends before starts at equal times."""
    doc = _json(folder / "occupancy.json")
    best = 0
    for se, events in doc.items():
        if not se.isdigit():
            continue
        count: dict[tuple[int, int], int] = defaultdict(int)
        for _t, cu, simd, _slot, start, _k in sorted(events, key=lambda e: (e[0], e[4])):
            count[(cu, simd)] += 1 if start else -1
            best = max(best, count[(cu, simd)])
    return best


def test_measured_resident_waves(folder: Path) -> None:
    r = _result(folder)
    assert r.measured_waves_per_simd == _sweep(folder)
    (k,) = r.kernels
    assert k.measured_waves_per_simd == _sweep(folder)
    assert k.registers.waves_per_simd is not None and k.measured_waves_per_simd <= k.registers.waves_per_simd


def test_a_slot_refilled_in_the_same_cycle_holds_one_wave() -> None:
    ev = [OccupancyEvent(time=t, cu=0, simd=1, slot=slot, start=start, kernel=1) for t, slot, start in
          [(0, 0, 1), (10, 1, 1), (10, 0, 0), (20, 0, 1), (20, 1, 0), (30, 0, 0)]]  # fmt: skip
    assert resident_waves({0: ev}, {1: "k"}) == (1, {"k": 1})
    ev.append(OccupancyEvent(time=25, cu=0, simd=1, slot=2, start=1, kernel=2))
    assert resident_waves({0: ev}, {1: "k"}) == (2, {"k": 1, "kernel 2": 1})


def test_more_waves_than_the_vgprs_allow_is_flagged(tmp_path: Path) -> None:
    src = ATT / "flash_attn_func" / "small" / "ui_output_agent_32235_dispatch_44"  # 248 VGPRs: 2 waves/SIMD
    shutil.copytree(src, tmp_path / "c")
    occ = _json(src / "occupancy.json")
    se = next(k for k in occ if k.isdigit())
    first = occ[se][0]
    extra = [[first[0] + 1, first[1], first[2], slot, 1, first[5]] for slot in (5, 6)]
    (tmp_path / "c" / "occupancy.json").write_text(json.dumps({**occ, se: [*occ[se], *extra]}))
    r = analyze(reader.read(tmp_path / "c"))
    assert r.measured_waves_per_simd == 3 and r.vgpr_waves_per_simd == 2
    assert any("more than the 2 its VGPRs allow" in n for n in r.notes)


def test_code_json_alone(tmp_path: Path) -> None:
    """Without wave files the code.json view stands; states are empty and the cross-check says so."""
    src = ATT / "pa_mqa_logits_fp4" / "small" / "ui_output_agent_32435_dispatch_197"
    (tmp_path / "c").mkdir()
    rows = _json(src / "code.json")["code"]
    (tmp_path / "c" / "code.json").write_text(json.dumps({"code": [r for r in rows if not r[0].startswith(";")]}))
    r = analyze(reader.read(tmp_path / "c"))
    assert r.waves == 0 and sum(r.state_cycles.values()) == 0 and r.state_timeline is None
    assert r.stall_cycles == sum(x[8] for x in rows) and r.measured_waves_per_simd is None
    assert not r.crosscheck.ok and r.crosscheck.wave_totals["hits"] == 0
    assert any("no wave files" in n for n in r.notes) and any("no occupancy.json" in n for n in r.notes)
    (k,) = r.kernels  # no "; name" label row: the kernel is named by its code object
    assert k.name == f"code object {rows[1][4]}" and k.instructions == len(rows) - 1


def test_code_only_never_opens_a_wave_file(folder: Path, tmp_path: Path) -> None:
    """--code-only: code.json's totals and hotspots without the wave files (here: truncated, which the full
    read refuses), and no wave states, measured occupancy or cross-check claimed."""
    rows = _code(folder)
    shutil.copytree(folder, tmp_path / "c")
    for p in (tmp_path / "c").glob("se*_sm*_sl*_wv*.json"):
        p.write_text('{"wave": {"instr')
    (tmp_path / "c" / "occupancy.json").write_text("{")
    with pytest.raises(FormatError):
        reader.read(tmp_path / "c")
    (r,) = api.att([tmp_path / "c"], top=5, code_only=True).captures
    assert (r.instructions, r.hits, r.latency_cycles, r.stall_cycles, r.idle_cycles) == (
        len(rows), *(sum(x[i] for x in rows) for i in (6, 7, 8, 9)))  # fmt: skip
    by_stall = sorted((x for x in rows if x[8]), key=lambda x: (-x[8], -x[7], x[4], x[5]))[:5]
    assert [(h.address, h.stall_cycles) for h in r.hotspots] == [(x[5], x[8]) for x in by_stall]
    assert r.waves is None and r.state_cycles is None and r.state_pct is None and r.crosscheck is None
    assert r.measured_waves_per_simd is None and r.kernels[0].measured_waves_per_simd is None
    assert r.vgpr_alloc == _result(folder).vgpr_alloc and r.gfxip == _json(folder / "filenames.json")["gfxip"]
    assert any("--code-only" in n for n in r.notes)


def _merge(a: Path, b: Path, out: Path) -> int:
    """Two real captures as one folder with two code objects (b's line numbers shifted past a's)."""
    out.mkdir()
    code_a, code_b = _json(a / "code.json"), _json(b / "code.json")
    shift = max(r[2] for r in code_a["code"]) + 1
    rows = code_a["code"] + [[*r[:2], r[2] + shift, *r[3:]] for r in code_b["code"]]
    (out / "code.json").write_text(json.dumps({**code_a, "code": rows}))
    for p in a.glob("se*.json"):
        shutil.copy(p, out / p.name)
    for p in b.glob("se*.json"):
        doc = json.loads(p.read_text())
        doc["wave"]["instructions"] = [[*i[:4], i[4] + shift] for i in doc["wave"]["instructions"]]
        doc["wave"]["waitcnt"] = [[w + shift, [[d + shift, z] for d, z in ds]] for w, ds in doc["wave"]["waitcnt"]]
        (out / p.name.replace("_wv", "_wv9")).write_text(json.dumps(doc))
    occ_a, occ_b = _json(a / "occupancy.json"), _json(b / "occupancy.json")
    merged: dict[str, Any] = {"dispatches": {**occ_a["dispatches"]}}
    merged["dispatches"].update({str(int(k) + 100): v for k, v in occ_b["dispatches"].items()})
    for occ, add in ((occ_a, 0), (occ_b, 100)):
        for se, evs in occ.items():
            if se.isdigit():  # b's waves on other CUs, so the two kernels never share a SIMD
                merged.setdefault(se, []).extend([[e[0], e[1] + add, *e[2:5], e[5] + add] for e in evs])
    (out / "occupancy.json").write_text(json.dumps(merged))
    return shift


def test_two_code_objects_in_one_capture(tmp_path: Path) -> None:
    a = ATT / "rmsnorm" / "big" / "ui_output_agent_19276_dispatch_18"
    b = ATT / "fused_rope_cache" / "big" / "ui_output_agent_4253_dispatch_8781"
    _merge(a, b, tmp_path / "two")
    r = analyze(reader.read(tmp_path / "two"), top=0)
    ra, rb = _result(a), _result(b)
    assert r.instructions == ra.instructions + rb.instructions
    assert (r.hits, r.stall_cycles, r.idle_cycles) == (ra.hits + rb.hits, ra.stall_cycles + rb.stall_cycles,
                                                       ra.idle_cycles + rb.idle_cycles)  # fmt: skip
    assert r.crosscheck.ok
    assert [(k.name, k.code_object, k.instructions) for k in r.kernels] == [
        (k.name, k.code_object, k.instructions) for k in (*ra.kernels, *rb.kernels)
    ]
    assert [k.registers.vgpr_alloc for k in r.kernels] == [ra.vgpr_alloc, rb.vgpr_alloc]
    assert [k.measured_waves_per_simd for k in r.kernels] == [ra.measured_waves_per_simd, rb.measured_waves_per_simd]
    assert r.vgpr_alloc == ra.vgpr_alloc  # the kernel with the most executed instructions
    assert {h.code_object for h in r.hotspots} == {ra.kernels[0].code_object, rb.kernels[0].code_object}


def test_worker_processes_give_the_same_sums(monkeypatch: pytest.MonkeyPatch) -> None:
    folder = ATT / "rmsnorm" / "big" / "ui_output_agent_19276_dispatch_18"
    monkeypatch.setattr(reader, "POOL_BYTES", 0)
    monkeypatch.setattr(reader, "CHUNK_FILES", 8)
    seen: list[tuple[int, int]] = []
    capture = reader.read(folder, workers=2, progress=lambda done, total: seen.append((done, total)))
    sums = _wave_sums(folder)
    assert {line: [int(capture.sums.hits[line]), int(capture.sums.latency[line]), int(capture.sums.stall[line]),
                   int(capture.sums.idle[line])] for line in sums} == dict(sums)  # fmt: skip
    assert seen == [(8 * i, 64) for i in range(1, 9)]


def test_worker_format_error_reaches_the_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(ATT / "pa_mqa_logits_fp4" / "small" / "ui_output_agent_32435_dispatch_197", tmp_path / "c")
    bad = sorted((tmp_path / "c").glob("se*.json"))[-1]
    bad.write_bytes(bad.read_bytes()[:-100])
    monkeypatch.setattr(reader, "POOL_BYTES", 0)
    monkeypatch.setattr(reader, "CHUNK_FILES", 1)
    with pytest.raises(FormatError, match=bad.name):
        reader.read(tmp_path / "c", workers=2)


@pytest.mark.parametrize("waitcnt", [[[10, [5]]], [[10, [[5, 0, 1]]]], [[10, [[5, "x"]]]]])
def test_waitcnt_records_of_another_layout_are_a_format_error(tmp_path: Path, waitcnt: list[Any]) -> None:
    shutil.copytree(ATT / "fused_rope_cache" / "big" / "ui_output_agent_4253_dispatch_8781", tmp_path / "c")
    bad = sorted((tmp_path / "c").glob("se*.json"))[1]
    doc = json.loads(bad.read_text())
    doc["wave"]["waitcnt"] = waitcnt
    bad.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=f"{bad.name}: expected wave.waitcnt"):
        reader.read(tmp_path / "c")


def _row_of_four(w: dict[str, Any]) -> None:
    w["instructions"][3] = w["instructions"][3][:4]


def _text_in_a_row(w: dict[str, Any]) -> None:
    w["instructions"][0][2] = "x"


def _negative_line(w: dict[str, Any]) -> None:
    w["instructions"][1][4] = -3


def _state_seven(w: dict[str, Any]) -> None:
    w["timeline"][0][0] = 7


def _no_timeline(w: dict[str, Any]) -> None:
    del w["timeline"]


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (_row_of_four, "wave.instructions: arrays of 5 integers"),
        (_text_in_a_row, "wave.instructions: arrays of 5 integers"),
        (_negative_line, "wave.instructions: integers from 0 to 2**40"),
        (_state_seven, "wave states 0..4"),
        (_no_timeline, "a rocprofv3 ATT wave file"),
    ],
    ids=["row-of-four", "text", "negative-line", "state-7", "no-timeline"],
)
def test_a_bad_wave_file_among_many_is_named(
    tmp_path: Path, spoil: Callable[[dict[str, Any]], None], message: str
) -> None:
    """The wave files of a chunk are parsed together; an error still names the one file at fault."""
    shutil.copytree(ATT / "rmsnorm" / "big" / "ui_output_agent_19276_dispatch_18", tmp_path / "c")
    bad = sorted((tmp_path / "c").glob("se*.json"))[37]
    doc = json.loads(bad.read_text())
    spoil(doc["wave"])
    bad.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=f"{bad.name}: expected {re.escape(message)}"):
        reader.read(tmp_path / "c", workers=1)


def test_parent_folder_finds_every_capture() -> None:
    assert reader.find_captures(ATT) == CAPTURES
    report = api.att([ATT / "rmsnorm", CAPTURES[0]], top=1)
    assert [c.path for c in report.captures] == [str(p) for p in CAPTURES if "rmsnorm" in str(p)] + [str(CAPTURES[0])]


def _code_json(folder: Path, text: str) -> Path:
    (folder / "code.json").write_text(text)
    return folder


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing", "no such directory"),
        (lambda d: d, "no code.json"),
        (lambda d: _code_json(d, '{"code": [["s_nop 0", 0]]}'), "another layout"),
        (lambda d: _code_json(d, '{"code": [["s_nop 0", 0, 1, '), "truncated"),
    ],
    ids=["missing", "no-code-json", "layout", "truncated"],
)
def test_bad_input_raises_input_errors(tmp_path: Path, make: Callable[[Path], Path], message: str) -> None:
    with pytest.raises(InputError, match=message):
        api.att([make(tmp_path)])


@pytest.mark.parametrize("option", [{"top": -1}, {"context": -1}, {"bins": 0}, {"workers": 0}])
def test_bad_options_raise_input_errors(option: dict[str, int]) -> None:
    with pytest.raises(InputError, match="need top and context >= 0"):
        api.att([CAPTURES[0]], **option)
