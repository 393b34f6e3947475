"""``kscope report``'s one report over a workload: every result and a headline (``analyses/report.py``)."""

from __future__ import annotations

import msgspec

from kernelscope.model.att import AttResult
from kernelscope.model.codeobj import CodeObject
from kernelscope.model.gap import GapResult
from kernelscope.model.ncu import NcuResult
from kernelscope.model.roofline import RooflineResult
from kernelscope.model.shapes import Coverage
from kernelscope.model.suggest import Experiment


class Finding(msgspec.Struct, kw_only=True):
    """One headline line: what (``topic``), the statement, and where it comes from."""

    topic: str  # host | time | bound | occupancy | resources | stalls | hotspot | coverage | candidate
    text: str
    evidence: str


class Report(msgspec.Struct, kw_only=True):
    title: str
    created: str
    inputs: list[str]
    gap: GapResult | None = None
    roofline: RooflineResult | None = None
    code: list[CodeObject] = msgspec.field(default_factory=list)
    coverage: Coverage | None = None
    ncu: NcuResult | None = None
    att: list[AttResult] = msgspec.field(default_factory=list)
    candidates: list[Experiment] = msgspec.field(default_factory=list)  # kscope suggest's ranking, best first
    headline: list[Finding] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)  # what the inputs could not give (no roofline: why)
    schema: str = "kernelscope.report.v1"
