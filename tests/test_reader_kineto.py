"""The Kineto reader against sums computed here from the raw Chrome trace with ``json`` + ``gzip``."""

from __future__ import annotations

import gzip
import json
import random
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import (
    API_CATS,
    KERNEL_CAT,
    MEMORY_CATS,
    PREFILL_DECODE,
    api_calls,
    assert_one_error_line,
    chrome_trace,
    events,
    ns,
)

from kernelscope import api, readers
from kernelscope.analyses.gap import gap
from kernelscope.data import demo_file
from kernelscope.errors import FormatError
from kernelscope.hw import specs
from kernelscope.model import Dim3, Profile
from kernelscope.model.gap import GapOptions
from kernelscope.readers import kineto

# --- totals against an independent parse ----------------------------------------------------------


def test_launch_and_kernel_totals(kineto_name: str, kineto_path: Path) -> None:
    kernels = events(kineto_name, KERNEL_CAT)
    assert kernels, "every bundled trace has kernels"
    want_dur = sum(e["dur"] for e in kernels) * 1000
    by_name: dict[str, list[float]] = defaultdict(list)
    for e in kernels:
        by_name[e["name"]].append(e["dur"])

    prof = readers.read(kineto_path)
    assert len(prof.launches) == len(kernels)
    assert sum(k.duration_ns for k in prof.launches) == pytest.approx(want_dur, abs=len(kernels))

    result = api.gap_report([kineto_path])
    t = result.totals
    assert t.launches == len(kernels)
    assert t.kernels == len(by_name)
    assert t.kernel_time_us * 1000 == pytest.approx(want_dur, abs=len(kernels))
    rows = {r.name: r for r in result.kernels}
    assert set(rows) == set(by_name)
    for name, durs in by_name.items():
        assert rows[name].calls == len(durs), name
        assert rows[name].total_us * 1000 == pytest.approx(sum(durs) * 1000, abs=len(durs)), name
        assert rows[name].kind not in (None, "memory")  # kernels, classified (memory rows are not kernels)
    assert sum(r.pct for r in result.kernels) == pytest.approx(100.0, abs=1e-6)


def test_memory_ops_are_counted_apart(kineto_name: str, kineto_path: Path) -> None:
    mem = events(kineto_name, *MEMORY_CATS)
    kernels = events(kineto_name, KERNEL_CAT)
    assert mem, "every bundled trace has memsets or memcpys"
    mem_ns = sum(e["dur"] for e in mem) * 1000
    tol = len(kernels) + len(mem)

    prof = readers.read(kineto_path)
    assert len(prof.memory_ops) == len(mem)
    assert Counter(m.kind for m in prof.memory_ops) == Counter(e["cat"].removeprefix("gpu_") for e in mem)

    without = gap(prof)
    assert without.totals.memory_ops == len(mem)
    assert without.totals.memory_time_us * 1000 == pytest.approx(mem_ns, abs=len(mem))
    assert all(r.kind != "memory" for r in without.kernels)
    assert without.totals.launches == len(kernels)

    with_mem = gap(prof, GapOptions(include_memory=True))
    mem_rows = [r for r in with_mem.kernels if r.kind == "memory"]
    assert mem_rows
    assert {r.name for r in mem_rows} == {e["name"] for e in mem}
    assert sum(r.calls for r in mem_rows) == len(mem)
    grown = (with_mem.totals.kernel_time_us - without.totals.kernel_time_us) * 1000
    assert grown == pytest.approx(mem_ns, abs=tol)
    assert with_mem.totals.launches == len(kernels) + len(mem)
    # the CLI path (streamed) agrees with the in-memory path
    assert api.gap_report([kineto_path], include_memory=True).totals == with_mem.totals


def _merged_length(spans: list[tuple[int, int]]) -> int:
    """Length of the union of [start, end) intervals: sort, merge overlapping neighbours, add up."""
    total = 0
    cur: list[int] | None = None
    for s, e in sorted(spans):
        if cur is None or s > cur[1]:
            if cur is not None:
                total += cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    if cur is not None:
        total += cur[1] - cur[0]
    return total


def test_busy_time_is_the_union_of_kernel_intervals(kineto_name: str, kineto_path: Path) -> None:
    per_device: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for e in events(kineto_name, KERNEL_CAT):
        start = ns(e["ts"])
        per_device[e["args"]["device"]].append((start, start + ns(e["dur"])))
    want = sum(_merged_length(v) for v in per_device.values())

    t = api.gap_report([kineto_path]).totals
    assert t.busy_time_us is not None
    assert t.busy_time_us * 1000 == pytest.approx(want, abs=1e-6)
    assert t.busy_time_us <= t.kernel_time_us + 1e-9
    gpu = events(kineto_name, KERNEL_CAT, *MEMORY_CATS)
    wall = max(ns(e["ts"]) + ns(e["dur"]) for e in gpu) - min(ns(e["ts"]) for e in gpu)
    assert t.wall_time_us is not None
    assert t.wall_time_us * 1000 == pytest.approx(wall, abs=1e-6)


def test_overlapping_streams_make_busy_less_than_kernel_time() -> None:
    # h100_train_steps runs kernels on two streams at once: busy time must count the overlap once
    t = api.gap_report([demo_file("h100_train_steps.json.gz")]).totals
    assert t.busy_time_us is not None
    assert t.busy_time_us < t.kernel_time_us


def test_grid_block_and_device_fields(kineto_name: str, kineto_path: Path) -> None:
    kernels = events(kineto_name, KERNEL_CAT)
    prof = readers.read(kineto_path)
    for e, k in zip(kernels, prof.launches, strict=True):  # the reader keeps file order
        a = e["args"]
        assert (k.name, k.correlation_id, k.start_ns) == (e["name"], a["correlation"], ns(e["ts"]))
        gx, gy, gz = a["grid"]
        bx, by, bz = a["block"]
        assert k.grid_blocks == Dim3(gx, gy, gz)
        assert k.block == Dim3(bx, by, bz)
        assert k.grid_items == Dim3(gx * bx, gy * by, gz * bz)
        assert k.registers == a["registers per thread"]
        assert k.lds_bytes == a["shared memory"]
        assert k.stream == a["stream"]
        assert k.device == a["device"]
        assert k.vendor == "nvidia"

    props = chrome_trace(kineto_name)["deviceProperties"]
    assert [(d.index, d.name, d.compute_units) for d in prof.devices] == [
        (p["id"], p["name"], p["numSms"]) for p in props
    ]
    assert [d.arch for d in prof.devices] == ["sm_90"]
    assert [d.compute_units for d in prof.devices] == [132]
    assert [d.vendor for d in prof.devices] == ["nvidia"]


def test_launch_time_comes_from_the_api_call_with_the_same_correlation(kineto_name: str, kineto_path: Path) -> None:
    prof = readers.read(kineto_path)
    by_corr = {k.correlation_id: k for k in prof.launches}
    calls = api_calls(kineto_name)
    linked = [e for e in events(kineto_name, KERNEL_CAT) if e["args"]["correlation"] in calls]
    assert linked
    # a few, spread over the file, checked by a linear scan of the raw events
    for e in linked[:: max(1, len(linked) // 7)]:
        corr = e["args"]["correlation"]
        call = next(
            x
            for x in chrome_trace(kineto_name)["traceEvents"]
            if x.get("cat") in API_CATS and x.get("args", {}).get("correlation") == corr
        )
        assert by_corr[corr].launch_ns == ns(call["ts"])
    # every launch with an API call is linked; the ones without (launched before tracing began) are not
    for k in prof.launches:
        assert (k.launch_ns is not None) == (k.correlation_id in calls)


def test_trailer_keys_after_the_event_array_are_kept() -> None:
    # in this file "traceName" comes after "traceEvents"
    prof = readers.read(demo_file(PREFILL_DECODE))
    assert prof.metadata["traceName"] == chrome_trace(PREFILL_DECODE)["traceName"]
    assert prof.metadata["baseTimeNanoseconds"] == chrome_trace(PREFILL_DECODE)["baseTimeNanoseconds"]


_KINETO = Path(__file__).parent / "data" / "kineto"
_RESAVED = _KINETO / "tracelens_h100_qwen_step.json.gz"  # TraceLens's copy: header keys after traceEvents


def test_devices_named_after_the_event_array_are_read() -> None:
    """A trace re-saved by a Python tool may put ``deviceProperties`` after ``traceEvents``; the GPU it names is
    the trace's GPU on every path (it was none, so ``roofline`` asked "which GPU?")."""
    raw = json.loads(gzip.decompress(_RESAVED.read_bytes()))
    assert list(raw).index("deviceProperties") > list(raw).index("traceEvents")
    want = [(p["name"], f"sm_{p['computeMajor']}{p['computeMinor']}") for p in raw["deviceProperties"]]
    head, _ = kineto.read_ops(_RESAVED)
    for got in (readers.read(_RESAVED).devices, head.devices, readers.devices(_RESAVED)):
        assert [(d.name, d.arch) for d in got] == want
    assert api.roofline(_RESAVED).peaks.gpu == specs.lookup(want[0][0]).name


def test_header_keys_read_the_same_before_or_after_the_events(tmp_path: Path) -> None:
    """The same trace with its header keys (a rank in ``distributedInfo``, the devices) written first, as Kineto
    does, or last: every record carries the same rank and vendor, the profile the same devices."""
    items, header = (
        chrome_trace(PREFILL_DECODE)["traceEvents"],
        {k: v for k, v in chrome_trace(PREFILL_DECODE).items() if k != "traceEvents"},
    )
    header["distributedInfo"] = {"backend": "nccl", "rank": 5, "world_size": 8}
    first, last = tmp_path / "first.json", tmp_path / "last.json"
    first.write_text(json.dumps(header | {"traceEvents": items}))
    last.write_text(json.dumps({"traceEvents": items} | header))
    a, b = readers.read(first), readers.read(last)
    assert {k.rank for k in a.launches} == {5} and {a.rank for a in a.annotations} == {5}
    assert _strip_source(b) == _strip_source(a)
    cols = [[(c.rank, c.vendor, c.kernels.names) for c in readers.stream_columns(p) or []] for p in (first, last)]
    assert cols[0] == cols[1] and {c[:2] for c in cols[0]} == {(5, "nvidia")}
    assert kineto.read_ops(last)[0].devices == kineto.read_ops(first)[0].devices == a.devices


# --- streaming, layouts ---------------------------------------------------------------------------


def _strip_source(p: Profile) -> dict[str, Any]:
    """The profile as builtins, without the path it was read from."""
    d: dict[str, Any] = msgspec.to_builtins(p)
    for key in ("launches", "memory_ops"):
        for r in d.get(key, []):
            r.pop("source", None)
    d.pop("sources", None)
    d.get("metadata", {}).pop("traceName", None)
    return d


@pytest.mark.parametrize("block", [4096, 997])
def test_small_blocks_read_the_same(kineto_path: Path, block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    whole_read = readers.read(kineto_path)
    whole_stream = list(readers.stream(kineto_path))
    whole_gap = api.gap_report([kineto_path])
    assert len(whole_stream) <= 3  # header batch, the rest: this is the whole-file reference

    monkeypatch.setattr(kineto, "BLOCK_BYTES", block)
    small_stream = list(readers.stream(kineto_path))
    assert len(small_stream) > 20  # the cut logic really ran, many times
    assert readers.read(kineto_path) == whole_read
    small, whole = Profile.combine(small_stream), Profile.combine(whole_stream)
    for field in ("launches", "memory_ops", "annotations", "devices", "metadata", "timing"):
        assert getattr(small, field) == getattr(whole, field), field
    assert api.gap_report([kineto_path]) == whole_gap


def test_cuts_inside_names_that_contain_the_separator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """C++ names hold ``}, {``: a cut there must be taken back, never split an event."""
    doc = json.loads(json.dumps(chrome_trace("h100_transformer_eager.json.gz")))
    for i, e in enumerate(doc["traceEvents"]):
        if e.get("cat") == KERNEL_CAT:
            e["name"] = f'{e["name"]}::{{lambda()#{i % 5}}}, {{"ph": "X"}}, {{x}}'
    path = tmp_path / "braces.json"
    path.write_text(json.dumps(doc))  # compact: every separator is "}, {"
    want = Counter(e["name"] for e in doc["traceEvents"] if e.get("cat") == KERNEL_CAT)
    want_ns = sum(ns(e["dur"]) for e in doc["traceEvents"] if e.get("cat") == KERNEL_CAT)
    reference = readers.read(path)
    for block in (64, 1000, 4096):
        monkeypatch.setattr(kineto, "BLOCK_BYTES", block)
        prof = readers.read(path)
        assert Counter(k.name for k in prof.launches) == want
        assert sum(k.duration_ns for k in prof.launches) == want_ns
        assert prof == reference


def test_plain_array_and_uncompressed_copies_read_the_same(kineto_name: str, tmp_path: Path) -> None:
    original = readers.read(demo_file(kineto_name))
    doc = chrome_trace(kineto_name)

    plain = tmp_path / "trace.json"
    with gzip.open(demo_file(kineto_name), "rb") as f:
        plain.write_bytes(f.read())
    assert _strip_source(readers.read(plain)) == _strip_source(original)

    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(doc["traceEvents"], indent=1))
    arr = readers.read(bare)
    # the bare array has no deviceProperties: no devices, and the vendor cannot be told
    fields = ("name", "start_ns", "duration_ns", "correlation_id", "launch_ns", "grid_blocks", "block", "stream")
    assert [tuple(getattr(k, f) for f in fields) for k in arr.launches] == [
        tuple(getattr(k, f) for f in fields) for k in original.launches
    ]
    assert len(arr.memory_ops) == len(original.memory_ops)
    assert arr.annotations == original.annotations


def test_numbers_written_as_strings_read_as_numbers(tmp_path: Path) -> None:
    """Some writers quote every number (rocprof's Chrome traces, converters): ``"ts": "1234.5"`` is still a time,
    on both decodes; a time that is no number is one clean error about the event, not "truncated?"."""
    doc = json.loads(json.dumps(chrome_trace(_SOURCE)))  # a copy: the parsed trace is cached for every test
    for e in doc["traceEvents"]:
        for key in ("ts", "dur"):
            if isinstance(e.get(key), int | float):
                e[key] = repr(e[key])
    quoted = tmp_path / "quoted.json"
    quoted.write_text(json.dumps(doc))
    want, got = api.gap_report([demo_file(_SOURCE)]), api.gap_report([quoted])
    assert got.totals.kernel_time_us == pytest.approx(want.totals.kernel_time_us)
    assert got.totals.launches == want.totals.launches > 0
    assert gap(readers.read(quoted), GapOptions()).totals.launches == want.totals.launches
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    kernel["ts"] = "soon"
    bad = tmp_path / "bad_ts.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match="unexpected shape"):
        readers.read(bad)


def test_a_trace_without_kernels_says_so(tmp_path: Path) -> None:
    """A host-only profile is read (exit 0) but says it holds no GPU kernel, instead of a silent empty table."""
    cpu = tmp_path / "cpu_only.json"
    cpu.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]}))
    result = api.gap_report([cpu])
    assert result.totals.launches == 0 and any("no GPU kernel" in w for w in result.warnings)
    assert not any("no GPU kernel" in w for w in api.gap_report([demo_file(_SOURCE)]).warnings)


# --- bad input ------------------------------------------------------------------------------------

_SOURCE = "h100_transformer_eager.json.gz"


def _raw() -> bytes:
    with gzip.open(demo_file(_SOURCE), "rb") as f:
        return f.read()


def _corrupt(data: bytes, byte: int) -> bytes:
    b = bytearray(data)
    b[len(b) // 2] = byte
    return bytes(b)


BAD: dict[str, Any] = {
    "truncated.json": lambda: _raw()[: len(_raw()) // 2],
    "truncated.json.gz": lambda: demo_file(_SOURCE).read_bytes()[: demo_file(_SOURCE).stat().st_size // 2],
    "corrupt.json.gz": lambda: _corrupt(demo_file(_SOURCE).read_bytes(), 0x55),
    "corrupt.json": lambda: _corrupt(_raw(), 0x00),
    "other_tool.json": lambda: b'{"foo": 1}',
    "empty.json": lambda: b"",
    "binary.json": lambda: random.Random(13).randbytes(4096),
    "events_wrong_shape.json": lambda: b'{"traceEvents": [{"ph": 1, "cat": []}]}',
}


@pytest.fixture(params=sorted(BAD))
def bad_file(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / str(request.param)
    path.write_bytes(BAD[request.param]())
    return path


def test_bad_input_raises_format_error_naming_the_file(bad_file: Path) -> None:
    with pytest.raises(FormatError) as sniffed:
        readers.read(bad_file)
    assert str(bad_file) in str(sniffed.value)
    with pytest.raises(FormatError) as forced:
        kineto.read(bad_file)
    assert str(bad_file) in str(forced.value)
    with pytest.raises(FormatError):
        api.gap_report([bad_file], fmt="kineto")


@pytest.mark.parametrize("flag", [(), ("--json",)], ids=["table", "json"])
def test_bad_input_through_the_cli(bad_file: Path, flag: tuple[str, ...], kscope: Any) -> None:
    proc = kscope("gap", bad_file, *flag)
    assert_one_error_line(proc)
    assert bad_file.name in proc.stderr


def test_damaged_large_trace_fails_fast(tmp_path: Path) -> None:
    """A truncated/damaged uncompressed trace used to be re-decoded once per ``]`` (minutes for 5 MB)."""
    with gzip.open(demo_file(PREFILL_DECODE), "rb") as f:
        raw = f.read()
    for name, data in (("cut.json", raw[: len(raw) // 2]), ("nul.json", _corrupt(raw, 0x00))):
        path = tmp_path / name
        path.write_bytes(data)
        began = time.perf_counter()
        with pytest.raises(FormatError, match=name):
            kineto.read(path)
        assert time.perf_counter() - began < 10.0  # linear: ~0.1 s; the quadratic search took 140+ s
