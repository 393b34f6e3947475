"""rocprofv3 kernel_trace.csv in every header dialect, from the REAL MI350X rmsnorm capture.

The real rows are rewritten under each header spelling the field has used (CamelCase, the rocpd
export's leading ``Guid`` column, ROCm 6.2's segment-size columns, rocprof v1's ``results.csv``); every
dialect must give rocprofv3's own kernel_stats.csv of the same run, read independently.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import csv_rows, run_kscope
from truth import assert_matches_rocprof_stats

from kernelscope.data import demo_file
from kernelscope.errors import FormatError
from kernelscope.readers import detect, read

TRACE = demo_file("mi350x", "rmsnorm", "discover_kernel_trace.csv")
STATS = demo_file("mi350x", "rmsnorm", "discover_kernel_stats.csv")
Row = dict[str, str]


def _camel(r: Row) -> Row:
    return {k.replace("_", ""): v for k, v in r.items()}


def _rocpd(r: Row) -> Row:
    return {"Guid": "0000ddb5-8903-7903-b269-cd8d3745bb8a", **r}


def _rocm62(r: Row) -> Row:
    drop = {"Stream_Id", "Thread_Id", "Dispatch_Id", "LDS_Block_Size", "Scratch_Size", "VGPR_Count"}
    out = {k: v for k, v in r.items() if k not in drop | {"Accum_VGPR_Count", "SGPR_Count"}}
    out["Private_Segment_Size"], out["Group_Segment_Size"] = r["Scratch_Size"], r["LDS_Block_Size"]
    return out


def _v1(r: Row) -> Row:
    grid = int(r["Grid_Size_X"]) * int(r["Grid_Size_Y"]) * int(r["Grid_Size_Z"])
    wg = int(r["Workgroup_Size_X"]) * int(r["Workgroup_Size_Y"]) * int(r["Workgroup_Size_Z"])
    return {
        "Index": r["Dispatch_Id"],
        "KernelName": r["Kernel_Name"],
        "gpu-id": r["Agent_Id"].split()[-1],
        "grd": str(grid),
        "wgr": str(wg),
        "lds": r["LDS_Block_Size"],
        "scr": r["Scratch_Size"],
        "arch_vgpr": r["VGPR_Count"],
        "accum_vgpr": r["Accum_VGPR_Count"],
        "sgpr": r["SGPR_Count"],
        "BeginNs": r["Start_Timestamp"],
        "EndNs": r["End_Timestamp"],
    }


def _write(path: Path, rows: list[Row]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), quoting=csv.QUOTE_ALL)
        w.writeheader()
        w.writerows(rows)
    return path


@pytest.mark.parametrize("dialect", [_camel, _rocpd, _rocm62, _v1], ids=["camel", "rocpd", "rocm62", "v1"])
def test_every_dialect_matches_rocprofv3_stats(dialect: Callable[[Row], Row], tmp_path: Path) -> None:
    rows = csv_rows(TRACE)
    path = _write(tmp_path / "kernel_trace.csv", [dialect(r) for r in rows])
    assert detect(path) == "rocprof-kernel-trace"
    prof = read(path)
    assert_matches_rocprof_stats(prof.launches, STATS)
    first, raw = prof.launches[0], rows[0]
    assert first.vendor == "amd" and first.start_ns == int(raw["Start_Timestamp"])
    assert first.lds_bytes == int(raw["LDS_Block_Size"]) and first.scratch_bytes == int(raw["Scratch_Size"])


def test_grid_counts_work_items_and_blocks_are_derived() -> None:
    for k, r in zip(read(TRACE).launches, csv_rows(TRACE), strict=True):
        items = [int(r[f"Grid_Size_{a}"]) for a in "XYZ"]
        wg = [int(r[f"Workgroup_Size_{a}"]) for a in "XYZ"]
        assert k.grid_items is not None and [k.grid_items.x, k.grid_items.y, k.grid_items.z] == items
        assert k.grid_blocks is not None
        assert [k.grid_blocks.x, k.grid_blocks.y, k.grid_blocks.z] == [
            -(-i // w) for i, w in zip(items, wg, strict=True)
        ]
        assert k.device == int(r["Agent_Id"].split()[-1])


@pytest.mark.parametrize(
    "mangle",
    [
        lambda text: text[: len(text) * 2 // 3],  # cut mid-row
        lambda text: text.replace("Start_Timestamp", "Begin"),  # a required column missing
        lambda text: text.split("\n", 1)[0] + "\n" + '"x","y"\n',  # a row of the wrong width
        lambda text: "",  # empty
    ],
    ids=["truncated", "missing-column", "short-row", "empty"],
)
def test_bad_input(mangle: Callable[[str], str], tmp_path: Path) -> None:
    path = tmp_path / "kernel_trace.csv"
    path.write_text(mangle(TRACE.read_text()))
    with pytest.raises(FormatError, match=r"kernel_trace\.csv"):
        read(path, fmt="rocprof-kernel-trace")


def test_the_agent_info_beside_names_the_gpus(tmp_path: Path) -> None:
    """rocprofv3's ``agent_info.csv`` beside the trace gives the run's GPUs (read here with the csv module, not
    the reader): ISA, product and CUs per KFD node, the N of the trace's ``Agent N``. The trace and the stats
    both carry them; each launch's device is one of them."""
    run = demo_file("mi350x", "rmsnorm")
    agents = [r for r in csv_rows(run / "discover_agent_info.csv") if r["Agent_Type"] == "GPU"]
    want = {(int(r["Node_Id"]), r["Name"], r["Product_Name"], int(r["Cu_Count"])) for r in agents}
    assert len(want) == 8 and {w[1] for w in want} == {"gfx950"}
    for what in ("kernel_trace", "kernel_stats", "agent_info"):
        (tmp_path / f"run_{what}.csv").write_bytes((run / f"discover_{what}.csv").read_bytes())
    trace, stats = read(tmp_path / "run_kernel_trace.csv"), read(tmp_path / "run_kernel_stats.csv")
    for prof in (trace, stats):
        assert {(d.index, d.arch, d.name, d.compute_units) for d in prof.devices} == want
    assert {launch.device for launch in trace.launches} <= {w[0] for w in want}


def test_an_agent_info_cut_short_names_the_gpus_it_has_and_says_so(tmp_path: Path) -> None:
    """A last row cut mid-way is one GPU the file cannot name: the others are read, with one warning."""
    from kernelscope.errors import PartialInputWarning

    run = demo_file("mi350x", "rmsnorm")
    text = (run / "discover_agent_info.csv").read_text()
    whole = [r for r in csv_rows(run / "discover_agent_info.csv") if r["Agent_Type"] == "GPU"]
    cut = text.rstrip("\n")
    cut = cut[: cut.rindex("\n") + len(cut[cut.rindex("\n") :]) // 2]  # half of the last row
    (tmp_path / "run_kernel_trace.csv").write_bytes(TRACE.read_bytes())
    (tmp_path / "run_agent_info.csv").write_text(cut + "\n")
    with pytest.warns(PartialInputWarning, match=r"run_agent_info\.csv: 1 row\(s\) not read"):
        prof = read(tmp_path / "run_kernel_trace.csv")
    assert len(prof.devices) == len(whole) - 1


def test_an_unreadable_agent_info_costs_the_gpus_not_the_trace(tmp_path: Path) -> None:
    """The trace does not need the agent file: a damaged one gives one warning and no GPUs, and the launches
    as without it."""
    from kernelscope.errors import PartialInputWarning

    (tmp_path / "run_kernel_trace.csv").write_bytes(TRACE.read_bytes())
    (tmp_path / "run_agent_info.csv").write_bytes(b'"Node_Id","Agent_Type"\n2,"GPU"\n')  # no Name column
    with pytest.warns(PartialInputWarning, match="GPUs not named: .*run_agent_info.csv"):
        prof = read(tmp_path / "run_kernel_trace.csv")
    assert prof.devices == [] and len(prof.launches) == len(read(TRACE).launches)
    # gap's result says so (its --json too), once: --find-sources takes the GPUs from the read, not a second one
    said = (
        f"GPUs not named: {tmp_path / 'run_agent_info.csv'}: not a rocprofv3 agent_info.csv "
        "(Node_Id, Agent_Type, Name columns): no name column(s)"
    )
    cli = run_kscope("gap", tmp_path / "run_kernel_trace.csv", "--json", "--find-sources", "--repo", tmp_path)
    got = json.loads(cli.stdout)
    assert cli.returncode == 0 and got["totals"]["launches"] == len(prof.launches)
    assert got["warnings"] == [said] and "warning" not in cli.stderr
    human = run_kscope("gap", tmp_path / "run_kernel_trace.csv")
    assert human.returncode == 0 and said in " ".join(human.stdout.split())
