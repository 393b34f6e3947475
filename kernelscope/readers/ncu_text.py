"""Nsight Compute's printed details (``ncu ./app``, ``ncu -i REPORT``): the form ncu results are pasted in as logs,
READMEs and issues. Each profiled kernel is a line naming it and its launch, then its sections as tables of metric
name, unit and value: the details page, printed, so it is read into the same metrics as the details-page CSV
(``Section/Metric Name``, normalized units) and the same launches (``timing="serialized"``: ncu replays each kernel
alone).

Every layout ncu printed is read, alone or after the program's own output and ncu's ``==PROF==`` lines:
* since 2022: ``name (grid)x(block), Context 1, Stream 7, Device 0, CC 9.0`` and tables with a header row
  (``Metric Name  Metric Unit  Metric Value``) between dashed rules;
* before: ``name, 2020-Oct-28 10:36:31, Context 1, Stream 7`` (no launch shape) and tables without a header row;
  ``GPU Speed Of Light`` and its ``Memory [%]``/``SOL DRAM`` rows are today's section and metrics under old names;
* units as ncu prints them (``usecond``, ``cycle/nsecond``, ``Kbyte/block``) or in base units (``--print-units base``).
The columns of a table are the spans of its dashed rule. Rule results (``OPT``/``INF`` paragraphs), ``--print-summary``
tables (minimum, maximum, average) and the source page are not read. A kernel without a duration (its Speed Of Light
section not captured, or cut from the paste) is one error line, as in the CSV.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.errors import FormatError
from kernelscope.model import DeviceInfo, Dim3, KernelLaunch, Profile
from kernelscope.readers import _ncu
from kernelscope.readers._tables import lines

FORMAT = "ncu-text"
_EXPECTED = "Nsight Compute's printed details (a kernel line, then Section: tables of metric, unit, value)"
_FIX = "print the report again with ncu -i REPORT (or pass its .ncu-rep or --csv export)"
_DIMS = r"\((\d+), (\d+), (\d+)\)"
# "  name (512, 1, 1)x(32, 4, 1), Context 1, Stream 7, Device 0, CC 9.0" (the launch part from 2022 on; a paste may
# lose the indent)
_KERNEL = re.compile(
    rf"^ {{0,2}}(?P<name>\S.*?) {_DIMS}x{_DIMS}"
    r"(?:, Context (?P<ctx>\d+), Stream (?P<stream>\d+)(?:, Device (?P<dev>\d+))?(?:, CC (?P<cc>\d+\.\d+))?)?\s*$"
)
# "  name, 2020-Oct-28 10:36:31, Context 1, Stream 7" (before 2022: no launch shape)
_DATED = re.compile(
    r"^ {0,2}(?P<name>\S.*?), \d{4}-[A-Z][a-z]{2}-\d{2} \d\d:\d\d:\d\d, "
    r"Context (?P<ctx>\d+), Stream (?P<stream>\d+)\s*$"
)
_SECTION = re.compile(r"^    Section: (?P<name>.+?)\s*$")
_RULE = re.compile(r"^    -+ -+ -+\s*$")  # a table of three columns: name, unit, value
_HEADER = ("Metric Name", "Metric Unit", "Metric Value")
_PROCESS = re.compile(r"^\[\d+\] \S+@\S+\s*$")


@dataclass
class _Kernel:
    name: str
    grid: Dim3 | None
    block: Dim3 | None
    stream: int | None
    device: int | None
    cc: str
    metrics: dict[str, float] = field(default_factory=dict)


def _kernel(line: str) -> _Kernel | None:
    if (m := _KERNEL.match(line)) is not None:
        g = [int(m.group(i)) for i in range(2, 8)]
        return _Kernel(
            m["name"],
            Dim3(g[0], g[1], g[2]),
            Dim3(g[3], g[4], g[5]),
            int(m["stream"]) if m["stream"] else None,
            int(m["dev"]) if m["dev"] else None,
            m["cc"] or "",
        )
    if (m := _DATED.match(line)) is not None:
        return _Kernel(m["name"], None, None, int(m["stream"]), None, "")
    return None


def looks_like(head: bytes) -> bool:
    """``head`` holds a kernel line with a section under it."""
    text = head.decode("utf-8", "replace").splitlines()
    return any(_kernel(a) is not None and _SECTION.match(b) is not None for a, b in itertools.pairwise(text))


def _kernels(text: Iterable[str]) -> list[_Kernel]:
    """Every kernel of the text with its metrics (normalized units, today's names)."""
    out: list[_Kernel] = []
    section = ""
    spans: list[tuple[int, int]] | None = None  # inside a table: its columns
    rows = 0
    for raw in text:
        line = raw.rstrip("\r\n")
        if (k := _kernel(line)) is not None:
            out.append(k)
            section, spans = "", None
        elif (m := _SECTION.match(line)) is not None:
            section, spans = m["name"], None
        elif _RULE.match(line):
            if spans is not None and rows:  # the rule that closes the table
                spans = None
            elif spans is None:
                spans, rows = [r.span() for r in re.finditer(r"-+", line)], 0
        elif spans is not None and out and section:
            cells = [line[a:b].strip() for a, b in spans[:2]] + [line[spans[2][0] :].strip()]
            if tuple(cells) == _HEADER or not cells[0]:
                continue
            rows += 1
            value = _ncu.number(cells[2])
            if value is not None:
                factor, _ = _ncu.unit_scale(cells[1])
                out[-1].metrics[_ncu.detail_key(section, cells[0])] = value * factor
    return out


def read(path: Path, *, rank: int | None = None) -> Profile:
    """Read every kernel of Nsight Compute's printed details."""
    kernels = _kernels(lines(path, _EXPECTED))
    if not kernels:
        raise FormatError(path, _EXPECTED, "no kernel line (name (grid)x(block), Context, Stream)", _FIX)
    launches: list[KernelLaunch] = []
    devices: dict[int, DeviceInfo] = {}
    for k in kernels:
        launch = _ncu.launch(
            name=k.name,
            metrics=k.metrics,
            page=0,
            grid=k.grid,
            block=k.block,
            stream=k.stream,
            device=k.device,
            rank=rank,
            source=str(path),
            source_format=FORMAT,
        )
        if launch is None:
            raise _ncu.no_duration(path, 0, f"kernel {len(launches) + 1} ({k.name[:60]})")
        launches.append(launch)
        if k.device is not None and k.cc and k.device not in devices:
            devices[k.device] = _ncu.device_info(k.device, k.cc)
    return Profile(
        launches=launches,
        devices=list(devices.values()),
        sources=[str(path)],
        formats=[FORMAT],
        timing="serialized",
    )
