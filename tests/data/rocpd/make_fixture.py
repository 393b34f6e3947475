"""Regenerate ``rmsnorm_results.db``: real rocprofv3 kernel dispatches in a rocpd SQLite database.

No real rocpd database is obtainable here, so this one is laid out from the rocpd schema as documented in
/tmp/research/formats.md §1 (rocprofiler-sdk ``rocpd_tables.sql``, ``rocpd_views.sql``, ``data_views.sql``,
written here independently, keeping the documented column names and join semantics):

* every table carries a ``_<uuid>`` suffix and a ``guid`` column; unsuffixed pass-through views name them;
* the ``kernels`` view joins dispatch, agent, event, string, kernel symbol, stream, queue, process and thread
  with the same INNER/LEFT joins as rocprofiler-sdk, and exposes the same column names;
* ``memory_copies`` likewise, over an empty ``rocpd_memory_copy`` table (the run made no async copies).

The rows are real: every row of ``rmsnorm_kernel_trace.csv`` (rocprofv3's kernel_trace.csv of the rmsnorm
test on an MI350X) is one dispatch. Agents, mangled symbols and static LDS sizes come from the real capture
on the same host through ``../rocprof_json/rmsnorm_results.json`` (see that folder's make_fixture.py).
As the rocpd writer does: ``agent_id`` is the agent's KFD node id, ``queue_id``/``stream_id`` are row ids,
``rocpd_event.stack_id`` holds the internal correlation id (the CSV's ``Correlation_Id``) and
``rocpd_event.correlation_id`` the external one (0 here), ``pid``/``tid`` columns are row ids.

Run from anywhere: ``python tests/data/rocpd/make_fixture.py``.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GUID = "0195f0e2-4b1c-7a3d-9e5f-1c2d3e4f5a6b"
UUID = "_" + GUID.replace("-", "_")

TABLES = {
    "rocpd_metadata": "id INTEGER PRIMARY KEY, tag TEXT NOT NULL, value TEXT NOT NULL",
    "rocpd_string": "id INTEGER PRIMARY KEY, guid TEXT NOT NULL, string TEXT NOT NULL",
    "rocpd_info_node": "id INTEGER PRIMARY KEY, guid TEXT NOT NULL, hash INTEGER, machine_id TEXT, hostname TEXT",
    "rocpd_info_process": "id INTEGER PRIMARY KEY, guid TEXT NOT NULL, nid INTEGER, ppid INTEGER, pid INTEGER, "
    "init BIGINT, fini BIGINT, start BIGINT, end BIGINT, command TEXT, environment JSONB, extdata JSONB",
    "rocpd_info_thread": "id INTEGER PRIMARY KEY, guid TEXT NOT NULL, nid INTEGER, ppid INTEGER, pid INTEGER, "
    "tid INTEGER, name TEXT, start BIGINT, end BIGINT, extdata JSONB",
    "rocpd_info_agent": "id INTEGER PRIMARY KEY, guid TEXT NOT NULL, nid INTEGER, pid INTEGER, type TEXT, "
    "absolute_index INTEGER, logical_index INTEGER, type_index INTEGER, uuid INTEGER, name TEXT, model_name TEXT, "
    "vendor_name TEXT, product_name TEXT, user_name TEXT, extdata JSONB",
    "rocpd_info_queue": "id INTEGER PRIMARY KEY, guid TEXT NOT NULL, nid INTEGER, pid INTEGER, name TEXT, "
    "extdata JSONB",
    "rocpd_info_stream": "id INTEGER PRIMARY KEY, guid TEXT NOT NULL, nid INTEGER, pid INTEGER, name TEXT, "
    "extdata JSONB",
    "rocpd_info_kernel_symbol": "id INTEGER PRIMARY KEY, guid TEXT NOT NULL, nid INTEGER, pid INTEGER, "
    "code_object_id INTEGER, kernel_name TEXT, display_name TEXT, kernel_object INTEGER, kernarg_segment_size INTEGER, "
    "kernarg_segment_alignment INTEGER, group_segment_size INTEGER, private_segment_size INTEGER, sgpr_count INTEGER, "
    "arch_vgpr_count INTEGER, accum_vgpr_count INTEGER, extdata JSONB",
    "rocpd_event": "id INTEGER PRIMARY KEY, guid TEXT NOT NULL, category_id INTEGER, stack_id INTEGER, "
    "parent_stack_id INTEGER, correlation_id INTEGER, call_stack JSONB, line_info JSONB, extdata JSONB",
    "rocpd_kernel_dispatch": "id INTEGER PRIMARY KEY, guid TEXT NOT NULL, nid INTEGER NOT NULL, pid INTEGER NOT NULL, "
    "tid INTEGER, agent_id INTEGER NOT NULL, kernel_id INTEGER NOT NULL, dispatch_id INTEGER NOT NULL, "
    "queue_id INTEGER NOT NULL, stream_id INTEGER NOT NULL, start BIGINT NOT NULL, end BIGINT NOT NULL, "
    "private_segment_size INTEGER, group_segment_size INTEGER, workgroup_size_x INTEGER NOT NULL, "
    "workgroup_size_y INTEGER NOT NULL, workgroup_size_z INTEGER NOT NULL, grid_size_x INTEGER NOT NULL, "
    "grid_size_y INTEGER NOT NULL, grid_size_z INTEGER NOT NULL, region_name_id INTEGER, event_id INTEGER, "
    "extdata JSONB NOT NULL DEFAULT '{}'",
    "rocpd_memory_copy": "id INTEGER PRIMARY KEY, guid TEXT NOT NULL, nid INTEGER, pid INTEGER, tid INTEGER, "
    "start BIGINT NOT NULL, end BIGINT NOT NULL, name_id INTEGER, dst_agent_id INTEGER, dst_address INTEGER, "
    "src_agent_id INTEGER, src_address INTEGER, size INTEGER, queue_id INTEGER, stream_id INTEGER, "
    "region_name_id INTEGER, event_id INTEGER, extdata JSONB NOT NULL DEFAULT '{}'",
}

# Same output columns and join kinds as rocprofiler-sdk's data_views.sql (formats.md §1.4).
KERNELS_VIEW = """
CREATE VIEW kernels AS
SELECT k.id, k.guid, t.tid,
       (SELECT s.string FROM rocpd_string s WHERE s.id = e.category_id AND s.guid = e.guid) AS category,
       r.string AS region, ks.display_name AS name, k.nid, p.pid,
       a.absolute_index AS agent_abs_index, a.logical_index AS agent_log_index,
       a.type_index AS agent_type_index, a.type AS agent_type, ks.code_object_id,
       k.kernel_id, k.dispatch_id, k.stream_id, k.queue_id, q.name AS queue, st.name AS stream,
       k.start, k.end, k.end - k.start AS duration,
       k.grid_size_x AS grid_x, k.grid_size_y AS grid_y, k.grid_size_z AS grid_z,
       k.workgroup_size_x AS workgroup_x, k.workgroup_size_y AS workgroup_y, k.workgroup_size_z AS workgroup_z,
       k.group_segment_size AS lds_size, k.private_segment_size AS scratch_size,
       ks.arch_vgpr_count AS vgpr_count, ks.accum_vgpr_count, ks.sgpr_count,
       ks.group_segment_size AS static_lds_size, ks.private_segment_size AS static_scratch_size,
       e.stack_id, e.parent_stack_id, e.correlation_id AS corr_id
FROM rocpd_kernel_dispatch k
JOIN rocpd_info_agent a ON a.id = k.agent_id AND a.guid = k.guid
JOIN rocpd_event e ON e.id = k.event_id AND e.guid = k.guid
JOIN rocpd_string r ON r.id = k.region_name_id AND r.guid = k.guid
JOIN rocpd_info_kernel_symbol ks ON ks.id = k.kernel_id AND ks.guid = k.guid
LEFT JOIN rocpd_info_stream st ON st.id = k.stream_id AND st.guid = k.guid
LEFT JOIN rocpd_info_queue q ON q.id = k.queue_id AND q.guid = k.guid
JOIN rocpd_info_process p ON p.id = q.pid AND p.guid = q.guid
JOIN rocpd_info_thread t ON t.id = k.tid AND t.guid = k.guid
"""

MEMORY_COPIES_VIEW = """
CREATE VIEW memory_copies AS
SELECT m.id, m.guid,
       (SELECT s.string FROM rocpd_string s WHERE s.id = e.category_id AND s.guid = e.guid) AS category,
       m.nid, p.pid, t.tid, m.start, m.end, m.end - m.start AS duration,
       n.string AS name, r.string AS region_name, m.stream_id, m.queue_id, st.name AS stream_name,
       q.name AS queue_name, m.size,
       da.name AS dst_device, da.absolute_index AS dst_agent_abs_index, da.logical_index AS dst_agent_log_index,
       da.type_index AS dst_agent_type_index, da.type AS dst_agent_type, m.dst_address,
       sa.name AS src_device, sa.absolute_index AS src_agent_abs_index, sa.logical_index AS src_agent_log_index,
       sa.type_index AS src_agent_type_index, sa.type AS src_agent_type, m.src_address,
       e.stack_id, e.parent_stack_id, e.correlation_id AS corr_id
FROM rocpd_memory_copy m
JOIN rocpd_string n ON n.id = m.name_id AND n.guid = m.guid
LEFT JOIN rocpd_string r ON r.id = m.region_name_id AND r.guid = m.guid
JOIN rocpd_info_agent da ON da.id = m.dst_agent_id AND da.guid = m.guid
JOIN rocpd_info_agent sa ON sa.id = m.src_agent_id AND sa.guid = m.guid
JOIN rocpd_event e ON e.id = m.event_id AND e.guid = m.guid
LEFT JOIN rocpd_info_stream st ON st.id = m.stream_id AND st.guid = m.guid
LEFT JOIN rocpd_info_queue q ON q.id = m.queue_id AND q.guid = m.guid
JOIN rocpd_info_process p ON p.id = m.pid AND p.guid = m.guid
JOIN rocpd_info_thread t ON t.id = m.tid AND t.guid = m.guid
"""


def create_schema(con: sqlite3.Connection, uuid: str = UUID, *, views: bool = True) -> None:
    for table, cols in TABLES.items():
        con.execute(f"CREATE TABLE {table}{uuid} ({cols})")
        if views:
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM {table}{uuid}")
    if views:
        con.execute(KERNELS_VIEW)
        con.execute(MEMORY_COPIES_VIEW)


def fill(con: sqlite3.Connection, rows: list[dict[str, str]], proc: dict[str, Any], uuid: str = UUID) -> None:
    guid = uuid[1:].replace("_", "-")

    def ins(table: str, **values: Any) -> None:
        names = ", ".join(values)
        con.execute(
            f"INSERT INTO {table}{uuid} (guid, {names}) VALUES (?{', ?' * len(values)})", (guid, *values.values())
        )

    con.execute(
        f"INSERT INTO rocpd_metadata{uuid} (tag, value) VALUES ('schema_version', '3'), ('uuid', ?), ('guid', ?)",
        (uuid, guid),
    )
    meta, tid = proc["metadata"], int(rows[0]["Thread_Id"])
    ins("rocpd_info_node", id=1, hash=0, machine_id=meta["node"]["machine_id"], hostname=meta["node"]["hostname"])
    ins(
        "rocpd_info_process",
        id=1,
        nid=1,
        ppid=0,
        pid=tid,
        init=meta["init_time"],
        fini=meta["fini_time"],
        start=meta["init_time"],
        end=meta["fini_time"],
        command=" ".join(meta["command"]),
        environment="{}",
        extdata="{}",
    )
    ins("rocpd_info_thread", id=1, nid=1, ppid=0, pid=1, tid=tid, name="python", start=0, end=0, extdata="{}")
    for a in proc["agents"]:
        ins(
            "rocpd_info_agent",
            id=a["node_id"],
            nid=1,
            pid=1,
            type="GPU" if a["type"] == 2 else "CPU",
            absolute_index=a["node_id"],
            logical_index=a["logical_node_id"],
            type_index=a["logical_node_type_id"],
            uuid=a["uuid"] if isinstance(a["uuid"], int) else 0,
            name=a["name"],
            model_name=a["model_name"],
            vendor_name=a["vendor_name"],
            product_name=a["product_name"],
            user_name=a["product_name"],
            extdata=json.dumps(a),
        )
    ins("rocpd_info_queue", id=1, nid=1, pid=1, name="Queue 1", extdata="{}")
    ins("rocpd_info_stream", id=0, nid=1, pid=1, name="Default Stream", extdata="{}")
    strings: dict[str, int] = {}

    def string(s: str) -> int:
        if s not in strings:
            strings[s] = len(strings) + 1
            ins("rocpd_string", id=strings[s], string=s)
        return strings[s]

    category = string("KERNEL_DISPATCH")
    for s in proc["kernel_symbols"][1:]:
        ins(
            "rocpd_info_kernel_symbol",
            id=s["kernel_id"],
            nid=1,
            pid=1,
            code_object_id=s["code_object_id"],
            kernel_name=s["kernel_name"],
            display_name=s["formatted_kernel_name"],
            kernel_object=s["kernel_object"],
            kernarg_segment_size=s["kernarg_segment_size"],
            kernarg_segment_alignment=s["kernarg_segment_alignment"],
            group_segment_size=s["group_segment_size"],
            private_segment_size=s["private_segment_size"],
            sgpr_count=s["sgpr_count"],
            arch_vgpr_count=s["arch_vgpr_count"],
            accum_vgpr_count=s["accum_vgpr_count"],
            extdata=json.dumps(s),
        )
    static_lds = {s["kernel_id"]: s["group_segment_size"] for s in proc["kernel_symbols"]}
    node_of = {f"Agent {a['logical_node_id']}": a["node_id"] for a in proc["agents"]}
    for i, r in enumerate(rows, 1):
        corr = int(r["Correlation_Id"])
        ins(
            "rocpd_event",
            id=i,
            category_id=category,
            stack_id=corr,
            parent_stack_id=corr,
            correlation_id=0,
            call_stack="{}",
            line_info="{}",
            extdata="{}",
        )
        ins(
            "rocpd_kernel_dispatch",
            id=int(r["Dispatch_Id"]),
            nid=1,
            pid=1,
            tid=1,
            agent_id=node_of[r["Agent_Id"]],
            kernel_id=int(r["Kernel_Id"]),
            dispatch_id=int(r["Dispatch_Id"]),
            queue_id=int(r["Queue_Id"]),
            stream_id=int(r["Stream_Id"]),
            start=int(r["Start_Timestamp"]),
            end=int(r["End_Timestamp"]),
            private_segment_size=int(r["Scratch_Size"]),
            group_segment_size=static_lds[int(r["Kernel_Id"])],
            **{f"workgroup_size_{a}": int(r[f"Workgroup_Size_{a.upper()}"]) for a in "xyz"},
            **{f"grid_size_{a}": int(r[f"Grid_Size_{a.upper()}"]) for a in "xyz"},
            region_name_id=string(r["Kernel_Name"]),
            event_id=i,
        )


def main() -> None:
    with (HERE / "rmsnorm_kernel_trace.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    proc = json.loads((HERE.parent / "rocprof_json" / "rmsnorm_results.json").read_bytes())["rocprofiler-sdk-tool"][0]
    out = HERE / "rmsnorm_results.db"
    out.unlink(missing_ok=True)
    con = sqlite3.connect(out)
    with con:
        create_schema(con)
        fill(con, rows, proc)
    con.execute("VACUUM")
    con.close()


if __name__ == "__main__":
    main()
