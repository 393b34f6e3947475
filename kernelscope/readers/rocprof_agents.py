"""rocprofv3 ``agent_info.csv``: the GPUs of a run, which its kernel trace and stats name only as ``Agent N``.

rocprofv3 writes ``<run>_agent_info.csv`` beside ``<run>_kernel_trace.csv`` and ``<run>_kernel_stats.csv``.
One row per HSA agent, CPUs included; a GPU row names its ISA (``Name``: ``gfx950``), its product
(``Product_Name``: ``AMD Instinct MI350X``) and its CUs. ``Node_Id`` is the KFD node id, the N of the trace's
``Agent_Id`` ``"Agent N"``, so it is the device index here too.
"""

from __future__ import annotations

import re
from pathlib import Path

from kernelscope.errors import InputError, partial_input
from kernelscope.model import DeviceInfo
from kernelscope.readers._csv import norm, rows, to_int

_EXPECTED = "a rocprofv3 agent_info.csv (Node_Id, Agent_Type, Name columns)"
# the files of one rocprofv3 run, ``<run>_<what>``; ``readers.folder`` groups a folder's runs by it too
RUN_FILE = re.compile(r"^(?P<run>.+?)_(?P<what>kernel_trace\.csv|kernel_stats\.csv|results\.json|results\.db)$")
_ISA = re.compile(r"^gfx[0-9a-f]+$")


def beside(trace: Path) -> Path | None:
    """The ``<run>_agent_info.csv`` rocprofv3 wrote beside ``<run>_kernel_trace.csv`` (or ``_kernel_stats.csv``)."""
    m = RUN_FILE.match(trace.name)
    sibling = trace.with_name(f"{m['run']}_agent_info.csv") if m and m["what"].endswith(".csv") else None
    return sibling if sibling is not None and sibling.is_file() else None


def read(path: Path) -> list[DeviceInfo]:
    """The GPU agents of ``path``, indexed by KFD node id."""
    it = rows(path, _EXPECTED)
    header = [norm(h) for h in next(it, [])]
    missing = [h for h in ("nodeid", "agenttype", "name") if h not in header]
    if missing:
        raise InputError(f"{path}: not {_EXPECTED}: no {', '.join(missing)} column(s)")
    col = {h: i for i, h in enumerate(header)}
    out: list[DeviceInfo] = []
    broken = 0  # rows cut short or with no node id: a GPU among them would go unnamed
    for row in it:
        if len(row) != len(header):
            broken += 1
            continue
        if row[col["agenttype"]].strip() != "GPU":
            continue
        node = to_int(row[col["nodeid"]])
        isa = row[col["name"]].strip()
        if node is None or node < 0:
            broken += 1
            continue
        product = row[col["productname"]].strip() if "productname" in col else ""
        cus = to_int(row[col["cucount"]]) if "cucount" in col else None
        out.append(
            DeviceInfo(
                index=node,
                vendor="amd",
                name=product or None,
                arch=isa if _ISA.match(isa) else None,
                compute_units=cus if cus is not None and cus > 0 else None,
            )
        )
    if broken:
        partial_input(f"{path}: {broken} row(s) not read (wrong width or no Node_Id); their GPUs are not named")
    return out


def devices_beside(trace: Path) -> list[DeviceInfo]:
    """The GPUs named beside ``trace``; ``[]`` where there is no agent file, and with a warning where it cannot
    be read (the trace itself does not need it)."""
    sibling = beside(trace)
    if sibling is None:
        return []
    try:
        return read(sibling)
    except InputError as exc:
        partial_input(f"GPUs not named: {exc}")
        return []
