"""rocprofv3 ATT (advanced thread trace) decoder output: ``ui_output_agent_<pid>_dispatch_<n>/``.

The folder is what rocprofiler-sdk's ATT tool (``source/lib/att-tool``, tool version 3.0.0) writes for
the ROCprof Compute Viewer from ``rocprof-trace-decoder``'s records. Every file is JSON:

* ``code.json``: ``{"code": [rows], "header", "version"}``, one row per static instruction in the
  header's column order ``ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle``.
* ``se<SE>_sm<SIMD>_sl<SLOT>_wv<N>.json``: one traced wave, ``{"name": "SE<n>", "num_insts",
  "num_stitched", "duration", "wave": {cu, simd, slot, id, begin, end, instructions, timeline, waitcnt}}``.
* ``wstates<k>.json``, ``occupancy.json``, ``filenames.json`` (below); ``realtime.json`` and
  ``snapshots.json`` are not read.

Vendor quirks, all here:

* Instructions are named by the decoder's line number (code.json's ``LineNumber``), not by row
  position or address. A ``; <kernel>`` label row takes the number before its kernel's first
  instruction, so line 0 is a label and real instructions start at 1.
* A wave instruction is ``[time, category, stall, duration, line]``: ``time`` is the first issue
  attempt, the successful issue is ``time + stall``, and ``duration`` (code.json's latency) runs to
  issue complete. ``category`` is rocprof-trace-decoder's enum (1 SMEM, 2 SALU, 3 VMEM, 4 FLAT, 5 LDS,
  6 VALU incl. MFMA, 7 taken branch, 8 not-taken branch, 9 s_waitcnt/s_nop/s_barrier, 11 s_endpgm).
* code.json's counters are sums over the decoded waves, per instruction: hit += 1, latency +=
  duration, stall += stall, idle += max(time - prev_end, 0), where prev_end starts at the wave's begin
  and becomes max(prev_end, time + duration). Instructions without a PC are written to wave files as
  line 0 and are skipped by those sums, the idle clock included.
* A wave file exists only for waves with instructions or at least three timeline entries; the waves
  without one add nothing to code.json, so the sums over the files reproduce it exactly.
* The timeline is ``[[state, duration], ...]`` from the wave's begin; states are the decoder's
  ``wstate_type_t``: 0 EMPTY, 1 IDLE, 2 EXEC, 3 WAIT, 4 STALL (the numbering some tools shift by one).
  Its sum may exceed ``end - begin`` by one 4-cycle tick.
* ``waitcnt`` is the decoder's own dependency analysis: ``[[wait line, [[memory line, 0], ...]], ...]``,
  one entry per counter a wait actually waited on (a wait on vmcnt and lgkmcnt can yield two).
* ``wstates<k>.json`` is ``{"time": [...], "state": [...]}``: the number of waves in state ``k`` (in
  ``state``, despite the name) from each time on, built from the same timelines. All shader engines
  share the file, each on its own clock.
* ``occupancy.json``: ``{"<se>": [[time, cu, simd, slot, start, kernel id], ...], "dispatches": {id:
  name}, "version"}``; kernel id 0 is the unknown PC.
* ``filenames.json``: ``gfxip`` (major GFX version: 9 for gfx90a/gfx942/gfx950, 10 to 12 for RDNA) and
  ``wave_filenames[se][simd][slot][id] = [file, begin, end]``. "sm" in wave file names is the SIMD.

Wave files hold most of the bytes (millions of instructions in long captures). They are decoded by
msgspec with the instruction, timeline and waitcnt arrays kept as raw JSON, which numpy parses into
integer tables: a Python int per number would cost several times more. Large folders are read by a
pool of processes, each summing its share of the files.
"""

from __future__ import annotations

import fnmatch
import multiprocessing
import os
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import numpy as np

from kernelscope.errors import FormatError, InputError
from kernelscope.model import numbers, text
from kernelscope.model.att import (
    AttCapture,
    AttWave,
    CodeTable,
    Int64s,
    OccupancyEvent,
    StateSeries,
    WaveSums,
)
from kernelscope.readers._io import read_bytes

CODE_HEADER = "ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle"
WAVE_GLOB = "se*_sm*_sl*_wv*.json"
POOL_BYTES = 8 << 20  # below this the pool's start-up costs more than the second core saves
CHUNK_FILES = 64

Progress = Callable[[int, int], None]  # wave files read so far, wave files in the capture
T = TypeVar("T")


_Row = tuple[str, int, int, str, int, int, int, int, int, int]  # code.json's columns, in CODE_HEADER order


class _Code(msgspec.Struct, gc=False):
    code: list[_Row]
    header: str | None = None
    version: str | None = None


class _Wave(msgspec.Struct, gc=False):
    cu: int
    simd: int
    slot: int
    id: int
    begin: int
    end: int
    instructions: msgspec.Raw
    timeline: msgspec.Raw
    waitcnt: msgspec.Raw = msgspec.Raw(b"[]")


class _WaveFile(msgspec.Struct, gc=False):
    name: str
    num_insts: int
    num_stitched: int
    wave: _Wave


class _WStates(msgspec.Struct, gc=False):
    time: list[int]
    state: list[int]


class _Gfxip(msgspec.Struct, gc=False):
    gfxip: int | None = None


class _Filenames(_Gfxip, gc=False):
    wave_filenames: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}


_BRACKETS = bytes.maketrans(b"[]", b"  ")


def _decode(path: Path, kind: type[T], expected: str) -> T:
    try:
        return text.json(read_bytes(path), type=kind)
    except msgspec.ValidationError as exc:
        raise FormatError(path, expected, f"another layout ({exc})") from None
    except msgspec.DecodeError as exc:
        raise FormatError(path, expected, f"invalid or truncated JSON ({exc})") from None


def _table(value: msgspec.Raw, width: int, path: Path, what: str) -> Int64s:
    """A JSON array of ``width``-integer arrays as an (n, width) int64 table."""
    raw = bytes(value)
    rows = raw.count(b"[") - 1
    if rows <= 0:
        if raw.strip() == b"[]":
            return np.empty((0, width), dtype=np.int64)
        raise FormatError(path, f"{what}: an array of arrays", text.name(raw[:40]))
    try:
        flat = np.fromstring(raw.translate(_BRACKETS), dtype=np.int64, sep=",")
    except (ValueError, DeprecationWarning):  # numpy's complaint about unparsable text (see _read_part)
        flat = np.empty(0, dtype=np.int64)
    if flat.size != rows * width:
        raise FormatError(path, f"{what}: arrays of {width} integers", "other values or lengths")
    # cycles, counts, line numbers: never negative, and bounded so that sums over a capture stay exact in
    # float64 and int64 and a line number cannot size a bincount beyond memory
    if flat.size and (int(flat.min()) < 0 or int(flat.max()) > _MAX_VALUE):
        bad = int(flat.min()) if int(flat.min()) < 0 else int(flat.max())
        raise FormatError(path, f"{what}: integers from 0 to 2**{_MAX_BITS}", str(bad))
    return flat.reshape(rows, width)


_MAX_BITS = 40  # 18 minutes of cycles at 1 GHz per value; a capture is milliseconds
_MAX_VALUE = 1 << _MAX_BITS


_WAITCNT = "wave.waitcnt: [[wait line, [[memory line, 0], ...]], ...]"


def _dependencies(raws: Sequence[bytes]) -> Int64s:
    """(wait line, memory line) pairs of the decoder's waitcnt records, as wait << 32 | memory, unique.

    The records of many waves are parsed at once: joined into one array, every ``[`` gets its nesting
    depth (3: a wait's entry, 5: one ``[line, 0]`` pair of it), which says how many pairs each wait has
    and so where its numbers sit in the flat parse. ValueError when the layout is not that.
    """
    raw = b"[" + b",".join(raws) + b"]"
    chars = np.frombuffer(raw, dtype=np.uint8)
    opens = chars == ord("[")
    depth = np.cumsum(opens.astype(np.int64) - (chars == ord("]")))
    entries, pairs = np.flatnonzero(opens & (depth == 3)), np.flatnonzero(opens & (depth == 5))
    if not len(entries):
        return np.empty(0, dtype=np.int64)
    per_wait = np.diff(np.searchsorted(pairs, np.append(entries, len(chars))))
    try:
        flat = np.fromstring(raw.translate(_BRACKETS), dtype=np.int64, sep=",")
    except DeprecationWarning:  # unparsable text (an error under _read_part's filter)
        raise ValueError(_WAITCNT) from None
    sizes = 1 + 2 * per_wait
    if flat.size != sizes.sum() or len(pairs) != per_wait.sum():
        raise ValueError(_WAITCNT)
    starts = np.cumsum(sizes) - sizes
    within = np.arange(len(pairs)) - np.repeat(np.cumsum(per_wait) - per_wait, per_wait)
    memory = flat[np.repeat(starts, per_wait) + 1 + 2 * within]
    return np.unique(np.repeat(flat[starts], per_wait) << 32 | memory)


def _part_deps(waits: Sequence[tuple[Path, bytes]]) -> Int64s:
    try:
        return _dependencies([raw for _, raw in waits])
    except ValueError:  # find the wave file to blame
        for path, raw in waits:
            try:
                _dependencies([raw])
            except ValueError:
                raise FormatError(path, _WAITCNT, "another layout") from None
        raise


class _Part:
    """What one worker read: its waves, and per line number the counters summed over them.

    Waves are collected as arrays and folded in one pass per chunk (``reduce``): numpy calls per wave
    are what a capture of thousands of small wave files costs.
    """

    def __init__(self) -> None:
        self.meta: list[tuple[Path, int, _Wave, int, bool]] = []  # file, SE, wave, instructions, stitched
        self.insts: list[Int64s] = []  # per wave: [time, category, stall, duration, line], PC-less rows dropped
        self.idle: list[Int64s] = []
        self.timelines: list[Int64s] = []
        self.waves: list[AttWave] = []
        self.counters = np.zeros((4, 0), dtype=np.int64)  # hits, latency, stall, idle per line
        self.no_pc = 0
        self.waitcnt_raw: list[tuple[Path, bytes]] = []
        self.waitcnt = np.empty(0, dtype=np.int64)  # see _dependencies

    def reduce(self) -> None:
        """Fold the collected arrays into ``counters`` and ``waves`` (small to send back from a worker)."""
        insts = np.concatenate([np.zeros((0, 5), np.int64), *self.insts])
        idle = np.concatenate([np.zeros(0, np.int64), *self.idle])
        lines = insts[:, 4]
        size = int(lines.max()) + 1 if len(lines) else 0
        # float64 sums are exact for integers below 2**53 cycles
        sums = [np.bincount(lines, weights=w, minlength=size) for w in (None, insts[:, 3], insts[:, 2], idle)]
        self.add(np.rint(np.stack(sums)).astype(np.int64))
        timeline = np.concatenate([np.zeros((0, 2), np.int64), *self.timelines])
        wave_of = np.repeat(np.arange(len(self.timelines)), [len(t) for t in self.timelines])
        states = timeline[:, 0]
        bad = np.flatnonzero((states < 0) | (states > 4))
        if len(bad):
            path = self.meta[int(wave_of[bad[0]])][0]
            raise FormatError(path, "wave states 0..4 (EMPTY, IDLE, EXEC, WAIT, STALL)", f"state {states[bad[0]]}")
        flat = np.bincount(wave_of * 5 + states, weights=timeline[:, 1], minlength=5 * len(self.meta))
        cycles = np.rint(flat).astype(np.int64).reshape(-1, 5).tolist()
        for (path, se, w, n, stitched), c in zip(self.meta, cycles, strict=True):
            self.waves.append(
                AttWave(
                    file=path.name,
                    se=se,
                    cu=w.cu,
                    simd=w.simd,
                    slot=w.slot,
                    id=w.id,
                    begin=w.begin,
                    end=w.end,
                    instructions=n,
                    stitched=stitched,
                    state_cycles=(c[0], c[1], c[2], c[3], c[4]),
                )
            )
        self.waitcnt = np.union1d(self.waitcnt, _part_deps(self.waitcnt_raw))
        self.meta, self.insts, self.idle, self.timelines, self.waitcnt_raw = [], [], [], [], []

    def add(self, counters: Int64s) -> None:
        if counters.shape[1] > self.counters.shape[1]:
            self.counters, counters = counters.copy(), self.counters
        self.counters[:, : counters.shape[1]] += counters

    def merge(self, other: _Part) -> None:
        self.waves += other.waves
        self.add(other.counters)
        self.no_pc += other.no_pc
        self.waitcnt = np.union1d(self.waitcnt, other.waitcnt)


def _read_wave(path: Path, part: _Part) -> None:
    doc = _decode(path, _WaveFile, "a rocprofv3 ATT wave file (se*_sm*_sl*_wv*.json)")
    w = doc.wave
    insts = _table(w.instructions, 5, path, "wave.instructions")
    low = int(insts[:, 4].min()) if len(insts) else 1  # never negative: _table
    if low == 0:  # line 0: no PC; the decoder leaves these out of its sums and its idle clock
        has_pc = insts[:, 4] != 0
        part.no_pc += len(insts) - int(has_pc.sum())
        insts = insts[has_pc]
    ends = insts[:, 0] + insts[:, 3]
    # the decoder's idle clock: the latest end so far, from the wave's begin
    prev_end = np.maximum.accumulate(np.concatenate(([w.begin], ends[:-1])))
    part.insts.append(insts)
    part.idle.append(np.maximum(insts[:, 0] - prev_end, 0))
    part.timelines.append(_table(w.timeline, 2, path, "wave.timeline"))
    waitcnt = bytes(w.waitcnt)
    if waitcnt.strip() != b"[]":
        part.waitcnt_raw.append((path, waitcnt))
    se = doc.name.removeprefix("SE")
    part.meta.append((path, int(se) if se.isdigit() else -1, w, doc.num_insts, doc.num_insts == doc.num_stitched))


def _read_part(paths: Sequence[Path]) -> _Part:
    part = _Part()
    with warnings.catch_warnings():  # numpy warns (a future version raises) on text it cannot parse
        warnings.filterwarnings("error", "string or file could not be read", DeprecationWarning)
        for p in paths:
            _read_wave(p, part)
        part.reduce()
    return part


def _pool_context() -> Any:
    # fork: the workers need no re-import of numpy and kernelscope (spawn costs ~0.3 s per worker); callers
    # should not run threads that hold locks the workers need (kscope's progress bar refreshes on ticks)
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else None)


def _read_waves(files: list[Path], workers: int | None, progress: Progress | None) -> _Part:
    chunks = [files[i : i + CHUNK_FILES] for i in range(0, len(files), CHUNK_FILES)]
    n_workers = min(workers or os.cpu_count() or 1, len(chunks))
    total = _Part()
    done = 0

    def take(part: _Part, n: int) -> None:
        nonlocal done
        total.merge(part)
        done += n
        if progress:
            progress(done, len(files))

    if n_workers > 1 and sum(f.stat().st_size for f in files) > POOL_BYTES:
        with ProcessPoolExecutor(n_workers, mp_context=_pool_context()) as pool:
            for chunk, part in zip(chunks, pool.map(_read_part, chunks), strict=True):
                take(part, len(chunk))
    else:
        for chunk in chunks:
            take(_read_part(chunk), len(chunk))
    return total


def _occupancy(path: Path) -> tuple[dict[int, list[OccupancyEvent]], dict[int, str]]:
    expected = 'occupancy.json: {"<se>": [[time, cu, simd, slot, start, kernel], ...], "dispatches": {...}}'
    doc = _decode(path, dict[str, msgspec.Raw], expected)
    events: dict[int, list[OccupancyEvent]] = {}
    dispatches: dict[int, str] = {}
    try:
        for key, raw in doc.items():
            if key.isdigit():
                events[int(key)] = text.json(raw, type=list[OccupancyEvent])
            elif key == "dispatches":
                dispatches = {int(k): v for k, v in text.json(raw, type=dict[str, str]).items()}
    except (msgspec.ValidationError, ValueError) as exc:
        raise FormatError(path, expected, f"another layout ({exc})") from None
    return events, dispatches


def _wstates(folder: Path) -> list[StateSeries]:
    series = []
    for state in range(5):
        path = folder / f"wstates{state}.json"
        if path.is_file():
            doc = _decode(path, _WStates, 'wstates<k>.json: {"time": [...], "state": [...]}')
            if len(doc.time) != len(doc.state):
                raise FormatError(path, "as many counts as times", f"{len(doc.state)} and {len(doc.time)}")
            times, counts = numbers.int64s(doc.time), numbers.int64s(doc.state)
            if times is None or counts is None:
                raise FormatError(path, "integer times and counts", "a number outside int64")
            if (times < 0).any() or (counts < 0).any():
                raise FormatError(path, "times and wave counts that are not negative", "a negative number")
            series.append(StateSeries(state, times, counts))
    return series


def _columns(rows: list[_Row], path: Path) -> CodeTable:
    cols: list[tuple[Any, ...]] = list(zip(*rows, strict=True)) if rows else [()] * 10
    isa, _, line, source, obj, address, hits, latency, stall, idle = cols
    ints = [numbers.int64s(c) for c in (line, obj, address, hits, latency, stall, idle)]
    if any(a is None for a in ints):
        raise FormatError(path, f"code.json: [{CODE_HEADER}] with integer numbers", "a number outside int64")
    line_a, obj_a, address_a, hits_a, latency_a, stall_a, idle_a = (a for a in ints if a is not None)
    if any(bool((a < 0).any()) for a in (hits_a, latency_a, stall_a, idle_a)):
        raise FormatError(
            path, "code.json: hit, latency, stall and idle counts that are not negative", "a negative count"
        )
    table = CodeTable(
        isa=list(isa),
        source=list(source),
        line=line_a,
        code_object=obj_a,
        address=address_a,
        hits=hits_a,
        latency=latency_a,
        stall=stall_a,
        idle=idle_a,
    )
    if len(np.unique(table.line)) != len(table):
        raise FormatError(path, "one row per LineNumber", "repeated line numbers")
    return table


def _by_wait(pairs: Int64s) -> dict[int, frozenset[int]]:
    waits, memory = (pairs >> 32).tolist(), (pairs & 0xFFFFFFFF).tolist()
    out: dict[int, set[int]] = {}
    for w, m in zip(waits, memory, strict=True):
        out.setdefault(w, set()).add(m)
    return {k: frozenset(v) for k, v in out.items()}


_NONE = np.zeros(0, dtype=np.int64)
_NO_SUMS = WaveSums(_NONE, _NONE, _NONE, _NONE, 0, {})


def find_captures(path: Path) -> list[Path]:
    """``path`` itself when it holds code.json, else every folder below it that does (sorted)."""
    if not path.exists():
        raise InputError(f"{path}: no such directory")
    if not path.is_dir():
        raise InputError(f"{path}: not a directory; pass an ATT folder (ui_output_agent_*) or a parent of them")
    if (path / "code.json").is_file():
        return [path]
    found = sorted(p.parent for p in path.rglob("code.json"))
    if not found:
        raise InputError(
            f"{path}: no code.json here or below; expected a rocprofv3 ATT folder (ui_output_agent_<pid>_dispatch_<n>, "
            "written by rocprofv3 --att) or a folder that contains them"
        )
    return found


CODE_ONLY_NOTE = "code.json only (--code-only): no wave states, measured occupancy or cross-check"


def read(
    path: str | Path, *, waves: bool = True, workers: int | None = None, progress: Progress | None = None
) -> AttCapture:
    """Read one ATT folder: code.json, every wave file, occupancy.json and wstates<k>.json.

    Args:
        path: the ``ui_output_agent_*`` folder (it must hold ``code.json``).
        waves: False reads code.json and the gfxip of filenames.json only (``--code-only``: the totals,
            hotspots, source lines and registers, without the bulk of a capture's bytes).
        workers: processes for the wave files of large captures (default: one per CPU).
        progress: called with (wave files read, wave files) as the reading advances.
    """
    folder = Path(path)
    code_path = folder / "code.json"
    if not code_path.is_file():
        raise InputError(f"{folder}: no code.json; expected a rocprofv3 ATT folder (ui_output_agent_*)")
    doc = _decode(code_path, _Code, f"rocprofv3 ATT code.json rows [{CODE_HEADER}]")
    if doc.header is not None and doc.header.replace(" ", "") != CODE_HEADER.replace(" ", ""):
        raise FormatError(code_path, f"the columns [{CODE_HEADER}]", f"[{doc.header}]")
    code = _columns(doc.code, code_path)
    names = folder / "filenames.json"
    expected = "filenames.json with gfxip and wave_filenames"
    if not waves:
        gfxip = _decode(names, _Gfxip, expected).gfxip if names.is_file() else None
        return AttCapture(path=str(folder), code=code, waves=[], sums=_NO_SUMS, gfxip=gfxip, waves_read=False,
                          notes=[CODE_ONLY_NOTE])  # fmt: skip
    notes: list[str] = []
    gfxip = listed = None
    if names.is_file():
        fn = _decode(names, _Filenames, expected)
        gfxip = fn.gfxip
        listed = sum(
            len(ids) for simds in fn.wave_filenames.values() for slots in simds.values() for ids in slots.values()
        )
    # names sorted as strings: sorting Path objects costs more than reading a small wave file
    files = [folder / n for n in sorted(fnmatch.filter(os.listdir(folder), WAVE_GLOB))]
    if not files:
        notes.append(f"no wave files ({WAVE_GLOB}): wave states and the cross-check need them")
    part = _read_waves(files, workers, progress)
    hits, latency, stall, idle = part.counters
    occupancy: dict[int, list[OccupancyEvent]] | None = None
    dispatches: dict[int, str] = {}
    if (folder / "occupancy.json").is_file():
        occupancy, dispatches = _occupancy(folder / "occupancy.json")
    else:
        notes.append("no occupancy.json: resident waves not measured")
    return AttCapture(
        path=str(folder),
        code=code,
        waves=part.waves,
        sums=WaveSums(hits, latency, stall, idle, part.no_pc, _by_wait(part.waitcnt)),
        gfxip=gfxip,
        listed_waves=listed,
        occupancy=occupancy,
        dispatches=dispatches,
        wstates=_wstates(folder),
        notes=notes,
    )
