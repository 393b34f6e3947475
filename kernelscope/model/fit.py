"""The ISA fit view of ``kscope fit`` (``analyses/fit.py``): resources against limits, mix, limiter.

Schema ``kernelscope.fit.v1``.
"""

from __future__ import annotations

import msgspec


class Gauge(msgspec.Struct, kw_only=True):
    label: str
    used: float
    limit: float | None  # None: the architecture's limit is UNKNOWN
    unit: str = ""


class KernelFit(msgspec.Struct, kw_only=True):
    name: str
    arch: str
    vendor: str
    gauges: list[Gauge]
    mix: dict[str, float]  # class -> share of instructions, percent
    matrix_share: float | None  # percent of instructions on the matrix units
    limiter: str | None
    readout: list[str]  # "left on the table", most important first


class FitReport(msgspec.Struct, kw_only=True):
    kernels: list[KernelFit]
    schema: str = "kernelscope.fit.v1"
