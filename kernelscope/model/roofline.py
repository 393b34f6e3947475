"""Where kernels sit against the roofs: ``kscope roofline`` (``analyses/roofline.py``)."""

from __future__ import annotations

from typing import Any

import msgspec

from kernelscope.model.frames import Tabular, records

TARGET = 0.9


class Peaks(msgspec.Struct, kw_only=True):
    """The roofs: datasheet (cited) and measured, TFLOPS per dtype and GB/s."""

    gpu: str | None
    datasheet_tflops: dict[str, float]  # "bf16" (matrix), "vector" (fp32 vector)
    datasheet_gbs: float | None
    measured_tflops: dict[str, float] = msgspec.field(default_factory=dict)
    measured_gbs: float | None = None
    measured_on: str | None = None
    sources: dict[str, str] = msgspec.field(default_factory=dict)


class RooflinePoint(msgspec.Struct, kw_only=True):
    label: str
    dtype: str
    matrix: bool
    calls: int
    flops: float
    bytes: float
    time_us: float
    intensity: float  # flop/byte
    achieved_tflops: float
    achieved_gbs: float
    peak_tflops: float | None
    ridge: float | None  # flop/byte where the datasheet roofs meet
    bound: str | None  # memory | compute
    roof_tflops: float | None  # min(peak, intensity x bandwidth) from the datasheet
    pct_of_roof: float | None
    measured_roof_tflops: float | None = None
    pct_of_measured_roof: float | None = None
    meets_target: bool | None = None  # at least 90 % of the (measured, else datasheet) roof
    note: str = ""


class RooflineResult(msgspec.Struct, Tabular, kw_only=True):
    peaks: Peaks
    points: list[RooflinePoint]
    unmodeled: dict[str, float] = msgspec.field(default_factory=dict)  # op -> kernel µs without a cost model
    target: float = TARGET
    notes: list[str] = msgspec.field(default_factory=list)  # what the points include (graph replays attributed)
    schema: str = "kernelscope.roofline.v1"

    def _rows(self) -> list[dict[str, Any]]:
        return records(self.points)
