"""``kernelscope.open``: one sniff and one decode per input, whatever the commands ask of it."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

import kernelscope
from kernelscope import api, readers
from kernelscope.readers import _sniff, kineto

EAGER = Path("tests/data/kineto/h100_transformer_eager.json.gz")


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the sniffer and the Kineto readers run."""
    seen = {"sniff": 0, "read": 0, "stream_columns": 0}

    def counted(name: str, module: object, fn: object) -> None:
        def wrapper(*args: object, **kwargs: object) -> object:
            seen[name] += 1
            return fn(*args, **kwargs)  # type: ignore[operator]

        monkeypatch.setattr(module, fn.__name__, wrapper)  # type: ignore[attr-defined]

    counted("sniff", readers, _sniff.sniff)
    counted("read", kineto, kineto.read)
    counted("stream_columns", kineto, kineto.stream_columns)
    return seen


def test_views_are_cached(counts: dict[str, int]) -> None:
    h = kernelscope.open(EAGER)
    assert kernelscope.open(h) is h
    assert (h.format, h.format) == ("kineto", "kineto")
    assert h.ops and h.profile.launches and h.gpu == "NVIDIA H100 80GB HBM3"
    assert counts == {"sniff": 1, "read": 1, "stream_columns": 0}


def test_report_decodes_the_trace_once(counts: dict[str, int]) -> None:
    """The gap table comes from the decode that gave the op shapes (no columnar second pass)."""
    api.report([EAGER], gpu="H100 SXM")
    assert counts == {"sniff": 1, "read": 1, "stream_columns": 0}


def test_gap_from_a_decoded_handle_equals_the_columnar_gap() -> None:
    h = kernelscope.open(EAGER)
    _ = h.ops
    enc = msgspec.json.encode
    assert enc(api.gap_report([h])) == enc(api.gap_report([EAGER]))
    assert enc(api.gap_report([h, h])) == enc(api.gap_report([EAGER, EAGER]))  # ranks set on a copy
    assert all(k.rank is None for k in h.profile.launches)


def test_shapes_view_keeps_the_records_view() -> None:
    """The shapes view adds ops; its launches, memory ops and annotations are the records view's."""
    shapes, records = kineto.read(EAGER, view="shapes"), kineto.read(EAGER)
    assert shapes.ops and not records.ops
    shapes.ops = []
    assert msgspec.json.encode(shapes) == msgspec.json.encode(records)
