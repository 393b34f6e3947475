"""``kernelscope.open`` and the Kineto shapes view: one sniff and one decode per input."""

from __future__ import annotations

import gzip
from pathlib import Path

import msgspec
import pytest

import kernelscope
from kernelscope import api, readers
from kernelscope.analyses.gap import GapAccumulator
from kernelscope.errors import FormatError
from kernelscope.readers import _sniff, kineto

EAGER = Path("tests/data/kineto/h100_transformer_eager.json.gz")


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the sniffer and the Kineto decoders run."""
    seen = {"sniff": 0, "read": 0, "read_ops": 0, "stream_columns": 0}

    def counted(module: object, fn: object) -> None:
        name = fn.__name__  # type: ignore[attr-defined]

        def wrapper(*args: object, **kwargs: object) -> object:
            seen[name] += 1
            return fn(*args, **kwargs)  # type: ignore[operator]

        monkeypatch.setattr(module, name, wrapper)

    counted(readers, _sniff.sniff)
    for fn in (kineto.read, kineto.read_ops, kineto.stream_columns):
        counted(kineto, fn)
    return seen


def test_views_are_cached(counts: dict[str, int]) -> None:
    h = kernelscope.open(EAGER)
    assert kernelscope.open(h) is h
    assert (h.format, h.format) == ("kineto", "kineto")
    assert h.ops and h.ops is h.ops and h.gpu == "NVIDIA H100 80GB HBM3"
    assert counts == {"sniff": 1, "read": 0, "read_ops": 1, "stream_columns": 0}


@pytest.mark.parametrize("command", [api.report, api.suggest])
def test_report_and_suggest_decode_the_trace_once(command: object, counts: dict[str, int]) -> None:
    """The gap table comes from the decode that gave the op shapes (no columnar second pass)."""
    command([EAGER], gpu="H100 SXM")  # type: ignore[operator]
    assert counts == {"sniff": 1, "read": 0, "read_ops": 1, "stream_columns": 0}


def test_gap_from_a_decoded_handle_equals_the_streamed_gap() -> None:
    h = kernelscope.open(EAGER)
    _ = h.ops
    enc = msgspec.json.encode
    assert enc(api.gap_report([h])) == enc(api.gap_report([EAGER]))
    assert enc(api.gap_report([h, h])) == enc(api.gap_report([EAGER, EAGER]))  # ranks set on copies


@pytest.mark.parametrize("enclosing", [False, True])
def test_shapes_view_in_parallel_ranges_equals_one_pass(
    enclosing: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Byte-range workers merge their ops into the tables one sequential pass builds; the columns are the
    columns view's."""
    plain = tmp_path / "eager.json"
    plain.write_bytes(gzip.decompress(EAGER.read_bytes()))
    monkeypatch.setattr(kineto, "PARALLEL_MIN_BYTES", 0)
    one, cols = kineto.read_ops(plain, enclosing=enclosing, workers=1)
    assert one.ops and one.devices
    for workers in (2, 3, 5):
        many, _ = kineto.read_ops(plain, enclosing=enclosing, workers=workers)
        assert msgspec.json.encode(many.ops) == msgspec.json.encode(one.ops)
    a, b = GapAccumulator(), GapAccumulator()
    for c in cols:
        a.add_columns(c)
    for c in kineto.stream_columns(plain, workers=1):
        b.add_columns(c)
    assert msgspec.json.encode(a.result()) == msgspec.json.encode(b.result())


def test_ops_of_a_format_without_them_is_a_format_error() -> None:
    nsys = Path("tests/data/nsys/h100_transformer_eager.sqlite")
    with pytest.raises(FormatError, match=r"expected a PyTorch profiler \(Kineto\) trace.*found a nsys-sqlite file"):
        api.shapes([nsys])
    with pytest.raises(FormatError, match="found a nsys-sqlite file"):
        api.roofline(nsys, gpu="H100 SXM")


def test_report_loads_an_ncu_rep_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its source page and its launches (the counters' roofline) come from one load of the report."""
    pytest.importorskip("ncu_report")
    from kernelscope.readers import ncu_rep

    loads: list[Path] = []
    load = ncu_rep.open_report
    monkeypatch.setattr(ncu_rep, "open_report", lambda p: loads.append(p) or load(p))
    rep = api.report([EAGER], ncu_report=Path("tests/data/ncu/h100_softmax_slow.ncu-rep"), gpu="H100 SXM")
    assert rep.ncu is not None and len(loads) == 1
