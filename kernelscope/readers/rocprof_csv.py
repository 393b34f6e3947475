"""rocprofv3 ``kernel_trace.csv`` in every header version, rocpd-converted CSV, and rocprof v1 ``results.csv``.

Headers are matched after normalization (case, ``_``, ``-`` and spaces dropped), so ``Kernel_Name``,
``KernelName`` and the rocpd export's spellings read alike. The field table below is the one place the
vendor names live. Quirks: ``Grid_Size_*`` counts work-items, not workgroups; ``Agent_Id`` is a label
``"Agent N"`` with N the KFD node id (not the HIP device ordinal); timestamps are ns on CLOCK_BOOTTIME;
``LDS_Block_Size`` is the static LDS rounded up to the allocation granule; on gfx950 ``VGPR_Count``
is half the real allocation (see the corpus notes); the ROCm 6.2 headers say
``Group_Segment_Size``/``Private_Segment_Size``; rocprof v1 ``grd``/``wgr`` are totals, not per-dimension
(they land in the x dimension).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from kernelscope.errors import FormatError
from kernelscope.model import Dim3, KernelLaunch, Profile, numbers
from kernelscope.model.records import blocks_from_items
from kernelscope.readers import rocprof_agents
from kernelscope.readers._csv import norm, rows, to_int

FORMAT = "rocprof-kernel-trace"
BATCH = 100_000
_EXPECTED = "a rocprofv3 kernel_trace.csv (Kernel_Name, Start_Timestamp, End_Timestamp columns)"

# canonical field -> normalized header spellings, first present wins
FIELDS: dict[str, tuple[str, ...]] = {
    "name": ("kernelname",),
    "start": ("starttimestamp", "beginns"),
    "end": ("endtimestamp", "endns"),
    "agent": ("agentid", "gpuid"),
    "queue": ("queueid",),
    "stream": ("streamid",),
    "correlation": ("correlationid",),
    "lds": ("ldsblocksize", "groupsegmentsize", "lds"),
    "scratch": ("scratchsize", "privatesegmentsize", "scr"),
    "vgpr": ("vgprcount", "archvgpr"),
    "agpr": ("accumvgprcount", "accumvgpr"),
    "sgpr": ("sgprcount", "sgpr"),
    "wg_x": ("workgroupsizex", "wgr"),
    "wg_y": ("workgroupsizey",),
    "wg_z": ("workgroupsizez",),
    "grid_x": ("gridsizex", "grd"),
    "grid_y": ("gridsizey",),
    "grid_z": ("gridsizez",),
}
_AGENT = re.compile(r"(-?\d+)\s*$")


def _columns(header: list[str], path: Path) -> dict[str, int]:
    idx = {norm(h): i for i, h in enumerate(header)}
    cols: dict[str, int] = {}
    for field, spellings in FIELDS.items():
        for s in spellings:
            if s in idx:
                cols[field] = idx[s]
                break
    missing = [f for f in ("name", "start", "end") if f not in cols]
    if missing:
        raise FormatError(path, _EXPECTED, f"a CSV without {', '.join(missing)} columns")
    return cols


def _agent(v: str) -> int | None:
    m = _AGENT.search(v)
    return int(m.group(1)) if m else None


def _dim(row: list[str], cols: dict[str, int], prefix: str) -> Dim3 | None:
    if f"{prefix}_x" not in cols:
        return None
    vals = [to_int(row[cols[f"{prefix}_{a}"]]) if f"{prefix}_{a}" in cols else 1 for a in "xyz"]
    return Dim3(*(v if v is not None else 1 for v in vals))


def stream(path: Path, *, rank: int | None = None) -> Iterator[Profile]:
    it = rows(path, _EXPECTED)
    header = next(it, None)
    if header is None:
        raise FormatError(path, _EXPECTED, "an empty file")
    get = cols = _columns(header, path)
    names: dict[str, str] = {}
    # the first batch carries the GPUs of the agent_info.csv beside the trace, as a Kineto header's do
    batch = Profile(sources=[str(path)], formats=[FORMAT], devices=rocprof_agents.devices_beside(path))
    src = str(path)
    width = len(header)
    dropped = 0
    for line, row in enumerate(it, start=2):
        if not row:
            continue
        if len(row) != width:
            raise FormatError(path, _EXPECTED, f"line {line} with {len(row)} fields instead of {width} (truncated?)")
        start, end = to_int(row[get["start"]]), to_int(row[get["end"]])
        if start is None or end is None:
            raise FormatError(path, _EXPECTED, f"line {line} without integer timestamps")
        duration = numbers.to_duration(end - start)
        if duration is None:  # ends before it starts, or spans more than int64
            dropped += 1
            continue
        block = _dim(row, cols, "wg")
        items = _dim(row, cols, "grid")
        name = row[get["name"]].strip()

        def opt(field: str, row: list[str] = row) -> int | None:
            return to_int(row[get[field]]) if field in get else None

        batch.launches.append(
            KernelLaunch(
                name=names.setdefault(name, name),
                start_ns=start,
                duration_ns=duration,
                vendor="amd",
                device=_agent(row[get["agent"]]) if "agent" in get else None,
                rank=rank,
                queue=opt("queue"),
                stream=opt("stream"),
                correlation_id=opt("correlation"),
                grid_items=items,
                grid_blocks=blocks_from_items(items, block) if items and block else None,
                block=block,
                vgpr=opt("vgpr"),
                agpr=opt("agpr"),
                sgpr=opt("sgpr"),
                lds_bytes=opt("lds"),
                scratch_bytes=opt("scratch"),
                source=src,
                source_format=FORMAT,
            )
        )
        if len(batch.launches) >= BATCH:
            yield batch
            batch = Profile(sources=[src], formats=[FORMAT])
    numbers.count_dropped("kernel launches", dropped, path)
    yield batch


def read(path: Path, *, rank: int | None = None) -> Profile:
    prof = Profile.combine(list(stream(path, rank=rank)))
    prof.sources, prof.formats = [str(path)], [FORMAT]
    return prof
