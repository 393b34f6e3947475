"""Records of a decoded AMD ATT (thread trace) capture and of its analysis (``kscope att``).

Input side (``readers/att.py`` fills them): the static instructions of ``code.json`` with the decoder's
own per-instruction sums, one ``AttWave`` per wave file, the same per-instruction sums recomputed from
the wave files (``WaveSums``), the resident-wave events of ``occupancy.json`` and the wave-count series
of ``wstates<k>.json``. Cycles are shader-clock cycles as the decoder reports them.

Output side (``analyses/att.py`` builds them): ``AttResult``, schema ``kernelscope.att.v1``
(``docs/schemas.md``, ``docs/att.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from kernelscope.model.frames import Tabular, flat, uniform
from kernelscope.model.hotspots import Hotspot, SourceLine

ATT_SCHEMA = "kernelscope.att.v1"

# rocprofiler_thread_trace_decoder_wstate_type_t, in enum order (0..4)
STATES = ("empty", "idle", "exec", "wait", "stall")

Int64s = npt.NDArray[np.int64]


@dataclass(frozen=True)
class CodeTable:
    """``code.json``'s rows as columns, in the file's order (its header:
    ``ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle``).

    ``line`` is the decoder's line number, the key wave files use for instructions. Rows whose ISA starts
    with ``;`` name a kernel (``label``) and carry zero counters. Counters are sums over the traced waves:
    ``hits`` executions, ``latency`` cycles from first issue attempt to issue complete, of which ``stall``
    before the successful issue, and ``idle`` cycles between the previous instruction's end and this
    one's first attempt. ``source`` is "file:line", "" when the code object has no line info.
    """

    isa: list[str]
    source: list[str]
    line: Int64s
    code_object: Int64s
    address: Int64s
    hits: Int64s
    latency: Int64s
    stall: Int64s
    idle: Int64s

    def __len__(self) -> int:
        return len(self.isa)


class AttWave(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One wave file: where the wave ran, its lifetime, and its cycles per wave state."""

    file: str
    se: int
    cu: int
    simd: int
    slot: int
    id: int  # the decoder's running number of waves in this SIMD slot
    begin: int
    end: int
    instructions: int
    stitched: bool  # num_stitched == num_insts: every instruction was placed on the timeline
    state_cycles: tuple[int, int, int, int, int]  # timeline durations per STATES entry


@dataclass(frozen=True)
class WaveSums:
    """Per decoder line number (array index), the code.json counters recomputed from the wave files."""

    hits: Int64s
    latency: Int64s
    stall: Int64s
    idle: Int64s
    no_pc: int  # dynamic instructions without a PC (line 0): the decoder does not count them
    waitcnt: dict[int, frozenset[int]]  # wait instruction line -> memory instruction lines it waited on


class OccupancyEvent(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """An ``occupancy.json`` event, in the file's order: a wave started (``start`` 1) or ended in a slot."""

    time: int
    cu: int
    simd: int
    slot: int
    start: int
    kernel: int  # key of occupancy.json's "dispatches"; 0 is the unknown PC


@dataclass(frozen=True)
class StateSeries:
    """``wstates<state>.json``: the number of waves in ``state`` from ``time[i]`` until ``time[i+1]``."""

    state: int
    time: Int64s
    waves: Int64s


@dataclass(frozen=True)
class AttCapture:
    """One decoded ATT folder (``ui_output_agent_<pid>_dispatch_<n>``)."""

    path: str
    code: CodeTable
    waves: list[AttWave]
    sums: WaveSums
    gfxip: int | None = None  # major GFX version from filenames.json (9 = CDNA/Vega, 10-12 = RDNA)
    listed_waves: int | None = None  # wave files filenames.json names
    occupancy: dict[int, list[OccupancyEvent]] | None = None  # shader engine -> events
    dispatches: dict[int, str] = field(default_factory=dict)  # occupancy kernel id -> name
    wstates: list[StateSeries] = field(default_factory=list)
    waves_read: bool = True  # False: code.json alone was read (the wave files may exist)
    notes: list[str] = field(default_factory=list)


# --- analysis results: kernelscope.att.v1 --------------------------------------------------------


class CombinedWaits(msgspec.Struct, kw_only=True):
    """Waits on VMEM and LDS/SMEM counters at once, and where their stall cycles went (docs/att.md)."""

    instructions: int = 0
    stall_cycles: int = 0
    to_vmem: int = 0
    to_lds_smem: int = 0


class StateTimeline(msgspec.Struct, kw_only=True):
    """Mean number of waves in each state per time bin, from wstates<k>.json (for a plot)."""

    start: int
    end: int
    bin_cycles: float
    idle: list[float]
    exec: list[float]
    wait: list[float]
    stall: list[float]


class Mismatch(msgspec.Struct, kw_only=True):
    address: int | None  # None: a line number wave files use but code.json lacks
    line: int
    counter: str
    code: int
    waves: int


class CrossCheck(msgspec.Struct, kw_only=True):
    """code.json against the wave files it was summed from, and wstates against the wave timelines."""

    ok: bool
    wave_files: int
    listed_wave_files: int | None
    incomplete_waves: int
    code_totals: dict[str, int]
    wave_totals: dict[str, int]
    mismatched_lines: int
    mismatches: list[Mismatch]  # the largest differences first
    no_pc_instructions: int
    timeline_vs_lifetime: int  # waves whose state timeline does not add up to end - begin
    wstates_cycles: dict[str, int] | None  # integral of wstates<k>.json per state


class Registers(msgspec.Struct, kw_only=True):
    """The VGPR footprint read from the ISA's register operands, and the waves per SIMD it allows."""

    arch: str | None  # the limits used (kernelscope/data/arch/<arch>.yaml)
    arch_source: str  # how the arch was chosen
    wave_size: int
    arch_vgpr: int  # highest v register + 1 (v[a:b] counts b)
    agpr: int  # highest a register + 1
    vgpr_alloc: int | None  # per wave, allocation granules included; None without the arch's rules
    waves_per_simd: int | None  # what the VGPR allocation alone allows
    max_waves_per_simd: int | None  # the architecture's cap


class AttKernel(msgspec.Struct, kw_only=True):
    """One kernel of the capture (code.json's ``; <name>`` label and the instructions after it)."""

    name: str
    code_object: int
    instructions: int
    hits: int
    stall_cycles: int
    measured_waves_per_simd: int | None  # most of its waves resident on one SIMD at once
    registers: Registers


class AttResult(msgspec.Struct, kw_only=True):
    path: str
    gfxip: int | None
    kernels: list[AttKernel]
    instructions: int
    waves: int | None  # traced waves (wave files); None when they were not read (--code-only)
    hits: int
    latency_cycles: int
    stall_cycles: int
    idle_cycles: int
    stall_pct: float
    stall_breakdown: dict[str, int]
    stall_breakdown_pct: dict[str, float]
    combined_waits: CombinedWaits
    state_cycles: dict[str, int] | None  # None: wave files not read
    state_pct: dict[str, float] | None
    state_timeline: StateTimeline | None
    hotspots: list[Hotspot]
    source_lines: list[SourceLine]
    measured_waves_per_simd: int | None  # most waves resident on one SIMD at once, all kernels
    vgpr_alloc: int | None  # of the kernel with the most executed instructions
    vgpr_waves_per_simd: int | None  # what that allocation alone allows
    crosscheck: CrossCheck | None  # None: wave files not read
    notes: list[str]
    schema: str = ATT_SCHEMA


class AttReport(msgspec.Struct, Tabular, kw_only=True):
    """Several captures (``kscope att DIR DIR...`` or a parent folder)."""

    captures: list[AttResult]
    schema: str = ATT_SCHEMA

    def _rows(self) -> list[dict[str, Any]]:
        """The stall hotspots of every capture, each with its capture's folder."""
        return uniform([flat(h, capture=c.path) for c in self.captures for h in c.hotspots])
