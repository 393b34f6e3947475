"""Regenerate ``rmsnorm_results.json``: real rocprofv3 kernel dispatches laid out as ``--output-format json``.

No real results.json with dispatch records exists here (the MI350X JSON captures are ATT runs with an empty
``kernel_dispatch`` list), so the dispatch records are rebuilt from real rows:

* ``rmsnorm_kernel_trace.csv`` — rocprofv3's own kernel_trace.csv of the rmsnorm test on an MI350X (ROCm 7
  header). Every row becomes one ``buffer_records.kernel_dispatch[]`` record, field for field, in the
  structure of rocprofiler-sdk ``save.hpp`` (see /tmp/research/formats.md §3.1): ``Correlation_Id`` →
  ``correlation_id.internal``, ``Grid_Size_*`` (work-items) → ``dispatch_info.grid_size``,
  ``Scratch_Size`` → ``private_segment_size``, ``Queue_Id``/``Stream_Id`` → ``{"handle": ...}``.
* ``rmsnorm_att_results.json.gz`` — a real results.json of the same program on the same host. It supplies
  ``agents`` (with their large ``mem_banks``/``caches``/``io_links`` lists emptied to keep the fixture small),
  ``strings.buffer_records`` and ``metadata`` verbatim, and the mangled symbol (``kernel_name``) and static
  LDS size of each kernel, matched by demangled name (all 16 kernels match exactly one symbol).

Deliberate differences from a real file, each one a case the reader must handle:
* ``kernel_symbols`` holds only the 16 kernels used (plus the blank entry 0) instead of a list padded to
  ``max(kernel_id) + 1``, so lookups must go by the ``kernel_id`` field, not by position.
* ``group_segment_size`` of a dispatch is the symbol's static LDS (the CSV only has it rounded up to 512 B in
  ``LDS_Block_Size``); these PyTorch kernels use no dynamic LDS, so it is the runtime value too.
* ``agent_id.handle`` is the real handle of the agent the CSV names (``Agent 3`` = ``logical_node_id`` 3).

Run from anywhere: ``python tests/data/rocprof_json/make_fixture.py``.
"""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
KIND_KERNEL_DISPATCH = 11  # index of "KERNEL_DISPATCH" in strings.buffer_records
OP_COMPLETE = 2  # "KERNEL_DISPATCH_COMPLETE"


def build(trace_csv: Path, att_json: Path) -> dict[str, Any]:
    proc = json.loads(gzip.decompress(att_json.read_bytes()))["rocprofiler-sdk-tool"][0]
    by_name: dict[str, dict[str, Any]] = {}
    for s in proc["kernel_symbols"]:
        by_name.setdefault(s["demangled_kernel_name"].removesuffix(" [clone .kd]").removesuffix(".kd"), s)
    agents = [{**a, "mem_banks": [], "caches": [], "io_links": []} for a in proc["agents"]]
    handle_of = {f"Agent {a['logical_node_id']}": a["id"]["handle"] for a in agents}

    rows = list(csv.DictReader(trace_csv.open(newline="")))
    symbols: dict[int, dict[str, Any]] = {0: {**proc["kernel_symbols"][0]}}
    dispatches = []
    for r in rows:
        kid = int(r["Kernel_Id"])
        real = by_name[r["Kernel_Name"]]
        symbols.setdefault(
            kid,
            {
                **real,
                "kernel_id": kid,
                "formatted_kernel_name": r["Kernel_Name"],
                "demangled_kernel_name": r["Kernel_Name"],
                "sgpr_count": int(r["SGPR_Count"]),
                "arch_vgpr_count": int(r["VGPR_Count"]),
                "accum_vgpr_count": int(r["Accum_VGPR_Count"]),
            },
        )
        dispatches.append(
            {
                "size": 112,
                "kind": KIND_KERNEL_DISPATCH,
                "operation": OP_COMPLETE,
                "thread_id": int(r["Thread_Id"]),
                "correlation_id": {"internal": int(r["Correlation_Id"]), "external": 0, "ancestor": 0},
                "start_timestamp": int(r["Start_Timestamp"]),
                "end_timestamp": int(r["End_Timestamp"]),
                "dispatch_info": {
                    "size": 64,
                    "agent_id": {"handle": handle_of[r["Agent_Id"]]},
                    "queue_id": {"handle": int(r["Queue_Id"])},
                    "kernel_id": kid,
                    "dispatch_id": int(r["Dispatch_Id"]),
                    "private_segment_size": int(r["Scratch_Size"]),
                    "group_segment_size": real["group_segment_size"],
                    "workgroup_size": {a: int(r[f"Workgroup_Size_{a.upper()}"]) for a in "xyz"},
                    "grid_size": {a: int(r[f"Grid_Size_{a.upper()}"]) for a in "xyz"},
                },
                "stream_id": {"handle": int(r["Stream_Id"])},
            }
        )
    empty = ["hip_api", "hsa_api", "marker_api", "rccl_api", "memory_copy", "memory_allocation", "scratch_memory"]
    return {
        "rocprofiler-sdk-tool": [
            {
                "metadata": {**proc["metadata"], "pid": int(rows[0]["Thread_Id"])},
                "agents": agents,
                "counters": [],
                "strings": {"buffer_records": proc["strings"]["buffer_records"], "correlation_id": {"external": []}},
                "code_objects": [],
                "kernel_symbols": [symbols[k] for k in sorted(symbols)],
                "host_functions": [],
                "summary": [],
                "callback_records": {"counter_collection": []},
                "buffer_records": {"kernel_dispatch": dispatches, **{k: [] for k in empty}},
            }
        ]
    }


if __name__ == "__main__":
    doc = build(HERE / "rmsnorm_kernel_trace.csv", HERE / "rmsnorm_att_results.json.gz")
    (HERE / "rmsnorm_results.json").write_text(json.dumps(doc, separators=(",", ":")) + "\n")
