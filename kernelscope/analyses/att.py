"""What a decoded ATT capture says: where the stall cycles are, what the waves did, how many fit.

``analyze(capture)`` is pure over an ``AttCapture`` (``readers/att.py``). Definitions (``docs/att.md``):

- totals are code.json's own sums; ``stall_pct`` = stall / latency;
- each instruction's stall cycles go to one class of ``STALL_CLASSES`` by its mnemonic; a wait on VMEM
  and LDS/SMEM counters at once goes to ``vmem_wait`` unless the decoder's dependency records show it
  only ever waited for LDS/SMEM work (``lds_smem_wait``);
- wave-state shares are the per-wave timelines' cycles per decoder state (0 EMPTY, 1 IDLE, 2 EXEC,
  3 WAIT, 4 STALL), summed over waves;
- measured occupancy is the most waves resident on one SIMD at once in occupancy.json; the estimate is
  what the VGPRs the ISA names allow, with the architecture's allocation rules.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from kernelscope.analyses.occupancy import arch_limits, occupancy, roundup
from kernelscope.codeobj.amd_classes import STALL_CLASS, amd_class
from kernelscope.model.att import (
    STATES,
    AttCapture,
    AttKernel,
    AttResult,
    AttWave,
    CodeTable,
    CombinedWaits,
    CrossCheck,
    Int64s,
    Mismatch,
    OccupancyEvent,
    Registers,
    StateSeries,
    StateTimeline,
)
from kernelscope.model.codeobj import KernelCode
from kernelscope.model.hotspots import ContextInstruction, Hotspot, SourceLine

STALL_CLASSES = (
    "vmem_wait",
    "lds_smem_wait",
    "barrier",
    "vmem_issue",
    "lds_issue",
    "smem_issue",
    "matrix",
    "valu",
    "salu",
    "branch",
    "nop",
    "other",
)
_CLASS_ID = {c: i for i, c in enumerate(STALL_CLASSES)}
COUNTERS = ("hits", "latency", "stall", "idle")

# wait counters by what they count: gfx9-11 spellings, then gfx12's split counters
_VMEM_COUNTERS = frozenset({"vmcnt", "vscnt", "loadcnt", "storecnt", "samplecnt", "bvhcnt", "tensorcnt"})
_LGKM_COUNTERS = frozenset({"lgkmcnt", "dscnt", "kmcnt"})
_ALU_WAITS = frozenset({"depctr", "alu"})  # s_waitcnt_depctr (gfx10+), s_wait_alu (gfx12): ALU results
_COMBINED = "combined"
_COUNTER = re.compile(r"([a-z_]+)\(")
# a register operand follows a space, comma, sign, |abs| or neg( (see _register_tops)
_OPERAND_START = np.zeros(256, dtype=bool)
_OPERAND_START[list(b" \t\n\r\f\v,-|(")] = True
_IS_DIGIT = np.zeros(256, dtype=bool)
_IS_DIGIT[ord("0") : ord("9") + 1] = True
# mnemonics gfx950 has and gfx90a/gfx942 lack (LLVM FeatureGFX950Insts and friends): CDNA4 told by its ISA
_GFX950_ONLY = (
    "v_mfma_scale_", "v_mfma_f32_16x16x128", "v_mfma_f32_32x32x64", "v_mfma_f32_16x16x32_bf16",
    "v_mfma_f32_32x32x16_bf16", "v_mfma_f32_16x16x32_f16", "v_mfma_f32_32x32x16_f16", "v_mfma_i32_16x16x64_i8",
    "v_mfma_i32_32x32x32_i8", "v_cvt_scalef32_", "v_prng_b32", "v_permlane16_swap", "v_permlane32_swap",
    "v_bitop3_", "ds_read_b64_tr_", "ds_read_b96_tr_", "v_minimum3_f32", "v_maximum3_f32",
)  # fmt: skip
_WAVE32_OPERANDS = re.compile(r"\b(?:vcc_lo|vcc_hi|exec_lo|exec_hi)\b")


def wait_kind(isa: str) -> str | None:
    """For a wait instruction: ``vmem_wait``, ``lds_smem_wait``, ``combined`` (both), ``valu`` (ALU
    dependency counters) or ``other`` (export counter, events); None for any other instruction."""
    op, operands = _split_op(isa)
    if op == "s_waitcnt":
        # gfx9-11 "s_waitcnt vmcnt(0) lgkmcnt(0)"; a bare immediate ("s_waitcnt 0") sets every counter
        counters = set(_COUNTER.findall(operands)) or set(_VMEM_COUNTERS | _LGKM_COUNTERS)
    elif op.startswith("s_waitcnt_"):
        counters = {op.removeprefix("s_waitcnt_")}
    elif op.startswith("s_wait_"):
        name = op.removeprefix("s_wait_")
        # s_wait_idle waits for every counter; s_wait_loadcnt_dscnt names two
        counters = set(_VMEM_COUNTERS | _LGKM_COUNTERS) if name == "idle" else set(name.split("_"))
    elif op.startswith("s_waitcnt"):  # a wait whose mnemonic is damaged ("s_waitcnt\ufffd..."): counters unknown
        counters = set()
    else:
        return None
    vmem, lgkm = bool(counters & _VMEM_COUNTERS), bool(counters & _LGKM_COUNTERS)
    if vmem and lgkm:
        return _COMBINED
    if vmem or lgkm:
        return "vmem_wait" if vmem else "lds_smem_wait"
    return "valu" if counters & _ALU_WAITS else "other"


def _classify(isa: str) -> tuple[str, bool]:
    """An instruction's stall class, and whether it is a combined VMEM and LDS/SMEM wait."""
    kind = wait_kind(isa)
    if kind is not None:
        return ("vmem_wait", True) if kind == _COMBINED else (kind, False)
    return STALL_CLASS[amd_class(_split_op(isa)[0])], False


def _split(isa: str) -> tuple[str, str]:
    """Mnemonic and operands as written, split at the first whitespace of any kind (a tab, as some
    disassemblers write): the one place an instruction line is split."""
    op, *rest = isa.strip().split(None, 1) or [""]
    return op, rest[0] if rest else ""


def _split_op(isa: str) -> tuple[str, str]:
    """Mnemonic and operands, lower-cased (how the mnemonic and wait tables spell them)."""
    op, operands = _split(isa)
    return op.lower(), operands.lower()


def _mnemonics(isa: Sequence[str]) -> list[str]:
    """Each instruction's mnemonic as written (case kept)."""
    return [_split(x)[0] for x in isa]


_WAIT = -1  # class id placeholder: a wait's class depends on its operands


def _class_ids(ops: Sequence[str]) -> Int64s:
    """The ``STALL_CLASSES`` index of each mnemonic, looked up once per distinct one; ``_WAIT`` for waits."""
    of_op = {op: _CLASS_ID.get(STALL_CLASS[amd_class(op.lower())], _WAIT) for op in dict.fromkeys(ops)}
    return np.array([of_op[op] for op in ops], dtype=np.int64)


def stall_class(isa: str) -> str:
    """The class of ``STALL_CLASSES`` an instruction's stall cycles go to (combined waits: ``vmem_wait``;
    ``analyze`` refines those with the decoder's dependency records)."""
    return _classify(isa)[0]


def _combined_class(deps: Iterable[int], isa_of: dict[int, str]) -> str:
    """A combined wait's class from the memory instructions the decoder saw it wait on."""
    kinds = {stall_class(isa_of[d]) for d in deps if d in isa_of}
    if "vmem_issue" in kinds or not kinds:  # VMEM outstanding (the longest pole), or no record: VMEM
        return "vmem_wait"
    return "lds_smem_wait"


def _arch(gfxip: int | None, ops: Sequence[str], override: str | None) -> tuple[str | None, str]:
    if override:
        return override, "--arch"
    gfx950 = next((op for op in ops if op.startswith(_GFX950_ONLY)), None) if gfxip in (9, None) else None
    if gfx950 is not None:  # (some of these mnemonics exist on RDNA4 too, hence gfx9 only)
        return "gfx950", f"{gfx950}: of the gfx9 chips only gfx950 has it"
    if gfxip == 9 or (gfxip is None and any(op.startswith(("v_mfma", "v_accvgpr")) for op in ops)):
        return "gfx942", "gfxip 9 without gfx950-only instructions: gfx942's rules (gfx90a's are the same)"
    named = {11: "gfx1100", 12: "gfx1201"}
    if gfxip in named:
        return named[gfxip], f"gfxip {gfxip}: the rules of {named[gfxip]} (pass --arch for another chip)"
    return None, f"gfxip {gfxip}: no occupancy rules in kernelscope/data/arch (pass --arch)"


def _numbers(b: npt.NDArray[np.uint8], starts: Int64s, ends: Int64s) -> Int64s:
    """The decimal numbers at ``b[starts[i]:ends[i]]`` (digits only, at least one each)."""
    value = np.zeros(len(starts), dtype=np.int64)
    for k in range(int((ends - starts).max(initial=0))):
        inside = starts + k < ends
        digit = b[np.where(inside, starts + k, 0)].astype(np.int64) - ord("0")
        value = np.where(inside, value * 10 + digit, value)
    return value


def _register_tops(text: str) -> dict[str, int]:
    """Per register file (``v``, ``a``): the highest register index the operands name, plus one (0: none).

    An operand is ``v`` or ``a`` after a space, comma, sign, ``|`` (abs) or ``(`` (neg), then a number
    (``v7``) or a range ``[lo:hi]`` that counts its top. Array operations over the text's bytes: a regex
    walk costs 3-4x more on a long listing.
    """
    b = np.frombuffer(text.encode() + b"\0", dtype=np.uint8)  # the NUL: every operand has a byte after it
    nondigit = np.flatnonzero(~_IS_DIGIT[b])  # ends with the NUL

    def digits_end(starts: Int64s) -> Int64s:
        ends: Int64s = nondigit[np.searchsorted(nondigit, starts)]
        return ends

    letter, after = b[1:-1], b[2:]
    is_reg = (letter == ord("v")) | (letter == ord("a"))
    at = 1 + np.flatnonzero(is_reg & _OPERAND_START[b[:-2]] & (_IS_DIGIT[after] | (after == ord("["))))
    starts = at + 1
    ranged = b[starts] == ord("[")
    low_end = digits_end(starts + 1)  # a range: "[lo:" then the top
    starts = np.where(ranged, np.minimum(low_end + 1, len(b) - 1), starts)
    valid = ~ranged | ((low_end > at + 2) & (b[low_end] == ord(":")))
    ends = digits_end(starts)
    valid &= ends > starts
    at, starts, ends = at[valid], starts[valid], ends[valid]
    value = _numbers(b, starts, ends)
    vgpr = b[at] == ord("v")
    return {"v": int(value[vgpr].max(initial=-1)) + 1, "a": int(value[~vgpr].max(initial=-1)) + 1}


def registers(isa: Sequence[str], gfxip: int | None, arch: str | None = None) -> Registers:
    """VGPR and AGPR counts from register operands, and the waves per SIMD they allow.

    On gfx90a and later the file is unified: the footprint is align(arch VGPRs, 4) + AGPRs, allocated in
    granules (AMDGPUUsage, compute_pgm_rsrc1); the wave size is 32 on RDNA when the ISA names
    ``vcc_lo``/``exec_lo`` (wave32 code), else 64.
    """
    return _registers("\n".join(isa), _mnemonics(isa), gfxip, arch)


def _registers(text: str, ops: Sequence[str], gfxip: int | None, arch: str | None) -> Registers:
    """``registers`` of the instructions ``text`` (one per line), whose mnemonics are ``ops``."""
    top = _register_tops(text)
    name, source = _arch(gfxip, [op.lower() for op in dict.fromkeys(ops)], arch)
    lim = arch_limits(name) if name else None
    wave = 32 if (gfxip or 0) >= 10 and _WAVE32_OPERANDS.search(text) else 64
    alloc = waves = cap = None
    if lim is not None:
        unified = bool(lim.get("unified_vgpr_agpr"))
        total = roundup(top["v"], lim.get("arch_vgpr_align_in_unified_file")) + top["a"] if unified else top["v"]
        alloc = roundup(total, lim.get("vgpr_alloc_granule", wave))
        cap = lim.get("max_waves_per_simd", wave)
        kernel = KernelCode(
            name="", arch=lim.arch, vendor="amd", vgpr=total, arch_vgpr=top["v"], agpr=top["a"], wave_size=wave
        )
        occ = occupancy(kernel, block_size=wave, dynamic_shared=0)  # one wave per group: the VGPR limit alone
        waves = (occ.limits.get("vgpr") or occ.max_per_unit) if occ else None
    elif name:
        source += f"; no limits file for {name}"
    return Registers(
        arch=name,
        arch_source=source,
        wave_size=wave,
        arch_vgpr=top["v"],
        agpr=top["a"],
        vgpr_alloc=alloc,
        waves_per_simd=waves,
        max_waves_per_simd=cap,
    )


def resident_waves(events: dict[int, list[OccupancyEvent]], names: dict[int, str]) -> tuple[int, dict[str, int]]:
    """The most waves resident at once on one SIMD: over all waves, and per kernel name.

    A slot is live from its start event to its end event; at equal times ends go first (a slot freed
    and refilled in the same cycle holds one wave).
    """
    best = 0
    per_kernel: dict[str, int] = {}
    for evs in events.values():
        live: dict[tuple[int, int], dict[int, str]] = defaultdict(dict)  # (cu, simd) -> slot -> kernel
        for e in sorted(evs, key=lambda e: (e.time, e.start)):
            slots = live[(e.cu, e.simd)]
            if not e.start:
                slots.pop(e.slot, None)
                continue
            kernel = names.get(e.kernel, f"kernel {e.kernel}")
            slots[e.slot] = kernel
            best = max(best, len(slots))
            same = sum(1 for k in slots.values() if k == kernel)
            per_kernel[kernel] = max(per_kernel.get(kernel, 0), same)
    return best, per_kernel


def state_timeline(series: Sequence[StateSeries], bins: int) -> StateTimeline | None:
    """The mean number of waves in IDLE, EXEC, WAIT and STALL per time bin (wstates<k>.json)."""
    used = [s for s in series if len(s.time) and s.state in (1, 2, 3, 4)]
    if not used or bins <= 0:
        return None
    start = min(int(s.time[0]) for s in used)
    end = max(int(s.time[-1]) for s in used)
    edges = np.linspace(start, end, bins + 1)
    width = (end - start) / bins if end > start else 1.0
    means: dict[int, list[float]] = {}
    for s in used:
        # integral of the step function up to each edge
        area = np.concatenate(([0], np.cumsum(s.waves[:-1] * np.diff(s.time))))
        k = np.clip(np.searchsorted(s.time, edges, side="right") - 1, 0, None)
        upto = np.where(edges < s.time[0], 0.0, area[k] + s.waves[k] * (edges - s.time[k]))
        means[s.state] = np.round(np.diff(upto) / width, 3).tolist()
    empty = [0.0] * bins
    return StateTimeline(
        start=start,
        end=end,
        bin_cycles=width,
        idle=means.get(1, empty),
        exec=means.get(2, empty),
        wait=means.get(3, empty),
        stall=means.get(4, empty),
    )


def crosscheck(capture: AttCapture, state_cycles: dict[str, int], limit: int = 10) -> CrossCheck:
    """code.json against the sums over the wave files, wstates against the wave timelines."""
    s, c = capture.sums, capture.code
    size = max(len(s.hits), int(c.line.max()) + 1 if len(c) else 0)
    code = np.zeros((4, size), dtype=np.int64)
    code[:, c.line] = np.stack((c.hits, c.latency, c.stall, c.idle))  # line numbers are unique
    waves = np.zeros((4, size), dtype=np.int64)
    waves[:, : len(s.hits)] = np.stack((s.hits, s.latency, s.stall, s.idle))
    diff = waves - code
    bad = np.flatnonzero(np.any(diff != 0, axis=0))
    address = dict(zip(c.line.tolist(), c.address.tolist(), strict=True))
    counter, line = np.nonzero(diff)
    worst = np.argsort(-np.abs(diff[counter, line]), kind="stable")[:limit]
    found = [
        Mismatch(
            address=address.get(int(line[j])),
            line=int(line[j]),
            counter=COUNTERS[counter[j]],
            code=int(code[counter[j], line[j]]),
            waves=int(waves[counter[j], line[j]]),
        )
        for j in worst
    ]
    wstates = None
    if capture.wstates:
        wstates = {STATES[x.state]: int(np.sum(x.waves[:-1] * np.diff(x.time))) for x in capture.wstates}
    listed_ok = capture.listed_waves is None or capture.listed_waves == len(capture.waves)
    states_ok = wstates is None or all(state_cycles[k] == v for k, v in wstates.items())
    return CrossCheck(
        ok=len(bad) == 0 and listed_ok and states_ok,
        wave_files=len(capture.waves),
        listed_wave_files=capture.listed_waves,
        incomplete_waves=sum(not w.stitched for w in capture.waves),
        code_totals={k: int(v) for k, v in zip(COUNTERS, code.sum(axis=1), strict=True)},
        wave_totals={k: int(v) for k, v in zip(COUNTERS, waves.sum(axis=1), strict=True)},
        mismatched_lines=len(bad),
        mismatches=found,
        no_pc_instructions=s.no_pc,
        timeline_vs_lifetime=sum(sum(w.state_cycles) != w.end - w.begin for w in capture.waves),
        wstates_cycles=wstates,
    )


def _share(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0


def _take(items: list[str], rows: Int64s) -> list[str]:
    """``items`` at ``rows``; ``items`` itself when ``rows`` is every index in order."""
    if len(rows) == len(items) and bool(np.all(rows[1:] > rows[:-1])):
        return items
    return list(map(items.__getitem__, rows.tolist()))


class _Insts:
    """The instruction rows of a capture (labels dropped) as columns, with each one's stall class."""

    def __init__(
        self, c: CodeTable, ops: list[str], label: npt.NDArray[np.bool_], waitcnt: dict[int, frozenset[int]]
    ) -> None:
        keep = np.flatnonzero(~label)
        self.isa, self.source = _take(c.isa, keep), _take(c.source, keep)
        self.line, self.code_object, self.address = c.line[keep], c.code_object[keep], c.address[keep]
        self.hits, self.latency, self.stall, self.idle = c.hits[keep], c.latency[keep], c.stall[keep], c.idle[keep]
        self.class_id = _class_ids(_take(ops, keep))
        self.combined = CombinedWaits()
        waits = np.flatnonzero(self.class_id == _WAIT).tolist()
        isa_of: dict[int, str] = {}
        for i in waits:
            cls, both = _classify(self.isa[i])
            if both:
                isa_of = isa_of or dict(zip(self.line.tolist(), self.isa, strict=True))
                cls = _combined_class(waitcnt.get(int(self.line[i]), ()), isa_of)
                stall = int(self.stall[i])
                self.combined.instructions += 1
                self.combined.stall_cycles += stall
                self.combined.to_vmem += stall if cls == "vmem_wait" else 0
                self.combined.to_lds_smem += 0 if cls == "vmem_wait" else stall
            self.class_id[i] = _CLASS_ID[cls]

    def __len__(self) -> int:
        return len(self.isa)

    def by_class(self, rows: npt.NDArray[np.int64], groups: int) -> Int64s:
        """Stall cycles per (group, class) for rows assigned to ``groups`` groups."""
        flat = rows * len(STALL_CLASSES) + self.class_id
        sums = np.bincount(flat, weights=self.stall, minlength=groups * len(STALL_CLASSES))
        return np.rint(sums).astype(np.int64).reshape(groups, len(STALL_CLASSES))


def _hotspots(t: _Insts, top: int, context: int, total: int) -> list[Hotspot]:
    order = np.lexsort((t.address, t.code_object))  # address order within each code object
    at = np.empty(len(t), dtype=np.int64)
    at[order] = np.arange(len(t))
    ranked = np.lexsort((t.address, t.code_object, -t.latency, -t.stall))
    ranked = ranked[t.stall[ranked] != 0].tolist()
    out = []
    for i in ranked[:top] if top else ranked:
        pos = int(at[i])
        near = [
            int(j) for j in order[max(0, pos - context) : pos + context + 1] if t.code_object[j] == t.code_object[i]
        ]
        out.append(
            Hotspot(
                address=int(t.address[i]),
                code_object=int(t.code_object[i]),
                line=int(t.line[i]),
                instruction=t.isa[i],
                stall_class=STALL_CLASSES[t.class_id[i]],
                stall_cycles=int(t.stall[i]),
                latency_cycles=int(t.latency[i]),
                idle_cycles=int(t.idle[i]),
                hits=int(t.hits[i]),
                stall_share=_share(int(t.stall[i]), total),
                source=t.source[i] or None,
                context=[
                    ContextInstruction(
                        address=int(t.address[j]),
                        instruction=t.isa[j],
                        stall_cycles=int(t.stall[j]),
                        hits=int(t.hits[j]),
                        hot=j == i,
                    )
                    for j in near
                ],
            )
        )
    return out


def _source_lines(t: _Insts, total: int, top: int) -> list[SourceLine]:
    """The ``top`` source lines by stall cycles (0: all)."""
    index = {s: g for g, s in enumerate(dict.fromkeys(t.source))}
    gid = np.array([index[s] for s in t.source], dtype=np.int64)
    n = len(index)

    def per(col: Int64s | None) -> list[int]:
        sums: list[int] = np.rint(np.bincount(gid, weights=col, minlength=n)).astype(np.int64).tolist()
        return sums

    count, hits, latency, stall, idle = per(None), per(t.hits), per(t.latency), per(t.stall), per(t.idle)
    top_class = t.by_class(gid, n).argmax(axis=1).tolist()
    ranked = sorted(index.items(), key=lambda sg: (-stall[sg[1]], -latency[sg[1]], sg[0]))
    return [
        SourceLine(
            source=src or None,
            instructions=count[g],
            hits=hits[g],
            latency_cycles=latency[g],
            stall_cycles=stall[g],
            idle_cycles=idle[g],
            stall_share=_share(stall[g], total),
            top_class=STALL_CLASSES[top_class[g]] if stall[g] else None,
        )
        for src, g in (ranked[:top] if top else ranked)
    ]


def _kernels(
    c: CodeTable,
    ops: list[str],
    label: npt.NDArray[np.bool_],
    gfxip: int | None,
    arch: str | None,
    measured: dict[str, int],
) -> list[AttKernel]:
    """One summary per kernel: a ``; name`` label and the rows after it in line order (the decoder numbers
    each kernel's instructions consecutively after its label); rows before any label go by code object."""
    order = np.argsort(c.line, kind="stable")
    marks = np.flatnonzero(label[order]).tolist()
    spans: list[tuple[str | None, int | None, Int64s]] = [(None, None, order[: marks[0] if marks else len(order)])]
    for m, end in zip(marks, [*marks[1:], len(order)] if marks else [], strict=True):
        head = int(order[m])
        spans.append((c.isa[head].lstrip("; ").strip(), int(c.code_object[head]), order[m + 1 : end]))
    out = []
    for name, label_object, rows in spans:
        objects = np.unique(c.code_object[rows]).tolist() or ([] if label_object is None else [label_object])
        for obj in objects:
            idx = rows[c.code_object[rows] == obj]
            kname = name or f"code object {obj}"
            out.append(
                AttKernel(
                    name=kname,
                    code_object=int(obj),
                    instructions=len(idx),
                    hits=int(c.hits[idx].sum()),
                    stall_cycles=int(c.stall[idx].sum()),
                    measured_waves_per_simd=measured.get(kname),
                    registers=_registers("\n".join(_take(c.isa, idx)), _take(ops, idx), gfxip, arch),
                )
            )
    return out


def analyze(
    capture: AttCapture, *, top: int = 10, context: int = 3, bins: int = 200, arch: str | None = None
) -> AttResult:
    """The ``kscope att`` view of one capture.

    Args:
        top: hotspots and source lines kept (0: all).
        context: instructions shown before and after each hotspot, by address.
        bins: points of the wave-state timeline.
        arch: the occupancy rules to use (``gfx950``, ``gfx1201``); default: told from gfxip and the ISA.
    """
    ops = _mnemonics(capture.code.isa)
    label = np.array([op.startswith(";") for op in ops], dtype=bool)  # "; <kernel name>" rows
    t = _Insts(capture.code, ops, label, capture.sums.waitcnt)
    stall, latency = int(t.stall.sum()), int(t.latency.sum())
    breakdown = dict(zip(STALL_CLASSES, t.by_class(np.zeros(len(t), np.int64), 1)[0].tolist(), strict=True))
    measured, per_kernel = resident_waves(capture.occupancy, capture.dispatches) if capture.occupancy else (None, {})
    kernels = _kernels(capture.code, ops, label, capture.gfxip, arch, per_kernel)
    main = max(kernels, key=lambda k: k.hits, default=None)
    notes = list(capture.notes)
    cycles = check = None
    if capture.waves_read:
        cycles = _state_cycles(capture.waves)
        check = crosscheck(capture, cycles)
        notes += _check_notes(check)
    for kern in kernels:
        limit = kern.registers.waves_per_simd
        if kern.measured_waves_per_simd and limit is not None and kern.measured_waves_per_simd > limit:
            notes.append(
                f"{kern.name}: {kern.measured_waves_per_simd} waves measured on one SIMD, more than the {limit} "
                f"its VGPRs allow under {kern.registers.arch}'s rules: wrong architecture (pass --arch)?"
            )
    lifetime = sum(cycles.values()) if cycles else 0
    return AttResult(
        path=capture.path,
        gfxip=capture.gfxip,
        kernels=kernels,
        instructions=len(t),
        waves=len(capture.waves) if capture.waves_read else None,
        hits=int(t.hits.sum()),
        latency_cycles=latency,
        stall_cycles=stall,
        idle_cycles=int(t.idle.sum()),
        stall_pct=_share(stall, latency),
        stall_breakdown=breakdown,
        stall_breakdown_pct={k: _share(v, stall) for k, v in breakdown.items()},
        combined_waits=t.combined,
        state_cycles=cycles,
        state_pct={k: _share(v, lifetime) for k, v in cycles.items()} if cycles is not None else None,
        state_timeline=state_timeline(capture.wstates, bins),
        hotspots=_hotspots(t, top, context, stall),
        source_lines=_source_lines(t, stall, top),
        measured_waves_per_simd=measured,
        vgpr_alloc=main.registers.vgpr_alloc if main else None,
        vgpr_waves_per_simd=main.registers.waves_per_simd if main else None,
        crosscheck=check,
        notes=notes,
    )


def _state_cycles(waves: Sequence[AttWave]) -> dict[str, int]:
    """Cycles per decoder wave state, summed over the waves' timelines."""
    cycles = dict.fromkeys(STATES, 0)
    for w in waves:
        for k, v in zip(STATES, w.state_cycles, strict=True):
            cycles[k] += v
    return cycles


def _check_notes(check: CrossCheck) -> list[str]:
    notes = []
    if not check.ok:
        notes.append(
            f"code.json disagrees with the wave files on {check.mismatched_lines} instruction(s) "
            "(wave files missing or from another run?)"
        )
    if check.incomplete_waves:
        notes.append(f"{check.incomplete_waves} wave(s) not fully stitched (num_stitched < num_insts)")
    return notes
