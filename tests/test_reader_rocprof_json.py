"""rocprofv3 JSON reader, checked against rocprofv3's own CSV output and real MI350X captures.

Fixtures (tests/data/rocprof_json/): ``rmsnorm_results.json`` holds the real dispatches of
``rmsnorm_kernel_trace.csv`` in the JSON layout (see make_fixture.py); ``rmsnorm_kernel_stats.csv`` is
rocprofv3's own --stats output of the same run; ``*_att_results.json.gz`` are real results.json files
(ATT runs: agents and kernel symbols, no dispatch records).
"""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from truth import assert_launch_matches_trace_row, assert_matches_rocprof_stats

from kernelscope.errors import FormatError
from kernelscope.readers import detect, rocprof_json

DATA = Path(__file__).parent / "data" / "rocprof_json"
FIXTURE = DATA / "rmsnorm_results.json"
ATT = [DATA / "rmsnorm_att_results.json.gz", DATA / "flash_attn_att_results.json.gz"]


def _csv(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(newline="") as f:
        return list(csv.DictReader(f))


def _process(path: Path) -> dict[str, Any]:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return json.loads(raw)["rocprofiler-sdk-tool"][0]  # type: ignore[no-any-return]


def test_sniffed() -> None:
    assert detect(FIXTURE) == "rocprof-json"
    assert all(detect(p) == "rocprof-json" for p in ATT)


def test_per_kernel_calls_and_totals_equal_rocprofv3_stats() -> None:
    assert_matches_rocprof_stats(rocprof_json.read(FIXTURE).launches, DATA / "rmsnorm_kernel_stats.csv")


def test_launch_fields_match_the_kernel_trace_rows() -> None:
    prof = rocprof_json.read(FIXTURE, rank=3)
    rows = _csv("rmsnorm_kernel_trace.csv")
    assert len(prof.launches) == len(rows)
    # "Agent 3" is logical_node_id 3; the reader reports the GPU's index among GPUs.
    gpu = next(a for a in _process(FIXTURE)["agents"] if a["logical_node_id"] == 3)["logical_node_type_id"]
    for k, r in zip(prof.launches, rows, strict=True):
        assert_launch_matches_trace_row(k, r)
        assert (k.queue, k.stream, k.correlation_id) == (
            int(r["Queue_Id"]),
            int(r["Stream_Id"]),
            int(r["Correlation_Id"]),
        )
        assert (k.device, k.rank, k.vendor, k.source_format) == (gpu, 3, "amd", "rocprof-json")
    rms = next(k for k in prof.launches if k.name == "rmsnorm_kernel_0")
    assert rms.mangled == "rmsnorm_kernel_0.kd" and rms.lds_bytes == 32


@pytest.mark.parametrize("path", ATT, ids=lambda p: p.name)
def test_real_capture_agents_become_devices(path: Path) -> None:
    gpus = [a for a in _process(path)["agents"] if a["type"] == 2]
    prof = rocprof_json.read(path)
    assert prof.launches == [] and len(gpus) == 8
    expected = [(a["logical_node_type_id"], a["name"], a["product_name"], a["cu_count"]) for a in gpus]
    assert [(d.index, d.arch, d.name, d.compute_units) for d in prof.devices] == expected
    assert {d.arch for d in prof.devices} == {"gfx950"} and {d.compute_units for d in prof.devices} == {256}
    assert prof.metadata["processes"][0]["pid"] == _process(path)["metadata"]["pid"]


@pytest.mark.parametrize("path", ATT, ids=lambda p: p.name)
def test_real_capture_kernel_symbols_name_dispatches(path: Path, tmp_path: Path) -> None:
    """Dispatches added to a real file take name, mangled symbol and registers from its real symbols."""
    proc = _process(path)
    symbols = [s for s in proc["kernel_symbols"] if s["kernel_id"]][::97]
    gpu = next(a for a in proc["agents"] if a["type"] == 2)
    proc["buffer_records"]["kernel_dispatch"] = [
        {
            "correlation_id": {"internal": i, "external": 0},
            "start_timestamp": 1000 * i,
            "end_timestamp": 1000 * i + 10,
            "dispatch_info": {"agent_id": gpu["id"], "queue_id": {"handle": 1}, "kernel_id": s["kernel_id"]},
        }
        for i, s in enumerate(symbols)
    ]
    copy = tmp_path / "results.json"
    copy.write_text(json.dumps({"rocprofiler-sdk-tool": [proc]}))
    got = [(k.name, k.mangled, k.sgpr, k.vgpr, k.agpr, k.device) for k in rocprof_json.read(copy).launches]
    want = [
        (s["formatted_kernel_name"], s["kernel_name"], s["sgpr_count"], s["arch_vgpr_count"], s["accum_vgpr_count"], 0)
        for s in symbols
    ]
    assert got == want and len(got) > 10


def test_memory_copies(tmp_path: Path) -> None:
    proc = _process(ATT[0])
    gpu = next(a for a in proc["agents"] if a["type"] == 2 and a["logical_node_type_id"] == 1)
    cpu = next(a for a in proc["agents"] if a["type"] == 1)
    proc["buffer_records"]["memory_copy"] = [
        {
            "kind": 10,
            "operation": 2,
            "correlation_id": {"internal": 7, "external": 0},
            "start_timestamp": 100,
            "end_timestamp": 350,
            "thread_id": 1,
            "dst_agent_id": gpu["id"],
            "src_agent_id": cpu["id"],
            "bytes": 4096,
        },
    ]
    path = tmp_path / "copy_results.json"
    path.write_text(json.dumps({"rocprofiler-sdk-tool": [proc]}))
    [op] = rocprof_json.read(path).memory_ops
    assert (op.name, op.kind, op.start_ns, op.duration_ns) == ("MEMORY_COPY_HOST_TO_DEVICE", "memcpy", 100, 250)
    assert (op.device, op.bytes, op.correlation_id) == (1, 4096, 7)


def _bad(tmp_path: Path, name: str, content: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(content)
    return p


def test_truncated_json(tmp_path: Path) -> None:
    data = FIXTURE.read_bytes()
    with pytest.raises(FormatError, match=r"expected a rocprofv3 JSON results file.*truncated"):
        rocprof_json.read(_bad(tmp_path, "t_results.json", data[: len(data) // 2]))


def test_json_of_another_tool(tmp_path: Path) -> None:
    kineto = json.dumps({"traceEvents": [{"ph": "X", "name": "k", "ts": 1, "dur": 2}]}).encode()
    with pytest.raises(FormatError, match=r"another shape.*rocprofiler-sdk-tool"):
        rocprof_json.read(_bad(tmp_path, "trace.json", kineto))


def test_field_of_wrong_type(tmp_path: Path) -> None:
    doc = json.loads(FIXTURE.read_bytes())
    doc["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"][0]["start_timestamp"] = None
    with pytest.raises(FormatError, match=r"kernel_dispatch\[0\]\.start_timestamp"):
        rocprof_json.read(_bad(tmp_path, "x_results.json", json.dumps(doc).encode()))


@pytest.mark.parametrize(
    ("content", "found"), [(b"", "an empty file"), (b"\x1f\x8b\x08\x00garbage", "a damaged file")], ids=["empty", "gz"]
)
def test_empty_or_damaged_file(tmp_path: Path, content: bytes, found: str) -> None:
    with pytest.raises(FormatError, match=found):
        rocprof_json.read(_bad(tmp_path, "bad_results.json", content))
