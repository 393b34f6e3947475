"""The columnar path (``kineto.stream_columns`` → ``GapAccumulator.add_columns``), which ``kscope gap``
streams through, against sums computed from the raw JSON and against the records path.

The parallel byte-range decode is forced on small files (``PARALLEL_MIN_BYTES = 0``) with several
worker counts and block sizes, including names that contain the ``}, {`` separator, so range cuts
land inside strings and must be detected.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from conftest import KERNEL_CAT, MEMORY_CATS, chrome_trace, events, ns

from kernelscope import api, gap, readers
from kernelscope.analyses.gap import GapAccumulator
from kernelscope.data import demo_file
from kernelscope.errors import FormatError
from kernelscope.model.gap import GapResult
from kernelscope.readers import kineto


def _columns_gap(path: Path, workers: int | None = None) -> GapResult:
    acc = GapAccumulator()
    for cols in kineto.stream_columns(path, workers=workers):
        acc.add_columns(cols)
    return acc.result()


def _truth(evs: list[dict[str, object]]) -> tuple[Counter[str], dict[str, int]]:
    calls: Counter[str] = Counter()
    total: dict[str, int] = defaultdict(int)
    for e in evs:
        calls[str(e["name"])] += 1
        total[str(e["name"])] += ns(float(e["dur"]))  # type: ignore[arg-type]
    return calls, dict(total)


def test_columns_match_raw_json(kineto_name: str) -> None:
    calls, total = _truth(events(kineto_name, KERNEL_CAT))
    res = _columns_gap(demo_file(kineto_name))
    assert {r.name: r.calls for r in res.kernels} == calls
    assert {r.name: round(r.total_us * 1000) for r in res.kernels} == total
    assert res.totals.memory_ops == len(events(kineto_name, *MEMORY_CATS))


def test_columns_equal_records(kineto_name: str) -> None:
    by_columns = _columns_gap(demo_file(kineto_name))
    by_records = gap(readers.read(demo_file(kineto_name)))
    assert by_columns.kernels == by_records.kernels
    assert by_columns.totals == by_records.totals


def _plain_copy(name: str, tmp_path: Path) -> Path:
    out = tmp_path / name.removesuffix(".gz")
    out.write_bytes(gzip.decompress(demo_file(name).read_bytes()))
    return out


@pytest.mark.parametrize("workers", [2, 3, 7])
@pytest.mark.parametrize("block", [4096, 1 << 20])
def test_parallel_ranges_equal_sequential(
    workers: int, block: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _plain_copy("h100_train_steps.json.gz", tmp_path)
    sequential = _columns_gap(path, workers=1)
    monkeypatch.setattr(kineto, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(kineto, "BLOCK_BYTES", block)
    parallel = _columns_gap(path, workers=workers)
    assert parallel.kernels == sequential.kernels
    assert parallel.totals == sequential.totals
    calls, _ = _truth(events("h100_train_steps.json.gz", KERNEL_CAT))
    assert parallel.totals.launches == sum(calls.values())


def test_parallel_cuts_inside_names_fall_back_correctly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = json.loads(json.dumps(chrome_trace("h100_transformer_eager.json.gz")))
    for i, e in enumerate(doc["traceEvents"]):
        if e.get("cat") == KERNEL_CAT:
            e["name"] = f"{e['name']}::{{lambda()#{i % 5}}}, {{x}}" + ", {y}" * 40
    path = tmp_path / "braces.json"
    path.write_text(json.dumps(doc))  # compact: every separator is "}, {", and so are many bytes of names
    calls, total = _truth([e for e in doc["traceEvents"] if e.get("cat") == KERNEL_CAT])
    monkeypatch.setattr(kineto, "PARALLEL_MIN_BYTES", 0)
    for workers in (2, 5, 11):
        res = _columns_gap(path, workers=workers)
        assert {r.name: r.calls for r in res.kernels} == calls
        assert {r.name: round(r.total_us * 1000) for r in res.kernels} == total


def test_parallel_on_a_truncated_file_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _plain_copy("h100_train_steps.json.gz", tmp_path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size * 2 // 3])
    monkeypatch.setattr(kineto, "PARALLEL_MIN_BYTES", 0)
    with pytest.raises(FormatError, match=str(path.name)):
        _columns_gap(path, workers=3)


def test_gap_report_streams_columns_and_ranks_several_files(tmp_path: Path) -> None:
    a, b = demo_file("h100_transformer_eager.json.gz"), demo_file("h100_transformer_compile.json.gz")
    res = api.gap_report([a, b], per_rank=True)
    ranks = {r.rank for r in res.kernels}
    assert ranks == {0, 1}
    calls_a, _ = _truth(events(a.name, KERNEL_CAT))
    assert sum(r.calls for r in res.kernels if r.rank == 0) == sum(calls_a.values())


def test_untimed_columns_from_serialized_profiles() -> None:
    """Nsight Compute records carry no start: busy time is the kernel sum, wall and idle unknown."""
    prof = readers.read(Path(__file__).parent / "data" / "ncu" / "h100_triton_details.csv")
    res = gap(prof)
    assert res.totals.launches == len(prof.launches) > 0
    assert res.totals.busy_time_us == res.totals.kernel_time_us
    assert res.totals.wall_time_us is None and res.totals.idle_time_us is None
    assert res.warnings
