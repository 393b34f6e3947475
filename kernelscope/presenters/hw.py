"""Presenters of the hardware spec database."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.table import Table as RichTable
from rich.text import Text

from kernelscope.hw.specs import GpuSpec, GpuSpecs
from kernelscope.presenters.base import Presenter
from kernelscope.presenters.base import render_json as base_render_json

SUMMARY = (
    "compute_units",
    "memory_bandwidth_gbs",
    "bf16_matrix_tflops",
    "fp8_matrix_tflops",
    "fp32_tflops",
    "l2_cache_mib",
)


def _v(spec: GpuSpec, field: str) -> str:
    v = spec.specs.get(field)
    if v is None:
        return ""
    return "UNKNOWN" if v.value == "UNKNOWN" else ("n/a" if v.value is None else f"{v.value:,}")


def renderable(specs: Sequence[GpuSpec], detected: str | None, full: bool) -> Group:
    parts: list[RichTable | Text] = []
    head = Text(f"present GPU: {detected or 'none detected'}", style="dim")
    if full:
        for s in specs:
            tab = RichTable(title=f"{s.name} ({s.vendor} {s.arch})", title_justify="left", header_style="bold")
            for h in ("spec", "value", "unit", "source", "section"):
                tab.add_column(h, overflow="fold")
            for k, v in s.specs.items():
                tab.add_row(k, _v(s, k), v.unit, v.source, v.section + (f" — {v.note}" if v.note else ""))
            parts.append(tab)
        return Group(head, *parts)
    tab = RichTable(title="Hardware database (kscope hw NAME for values and citations)", title_justify="left")
    for h in ("key", "name", "vendor", "arch", *SUMMARY):
        tab.add_column(h, justify="left" if h in ("key", "name", "vendor", "arch") else "right")
    for s in specs:
        tab.add_row(s.key, s.name, s.vendor, s.arch, *(_v(s, f) for f in SUMMARY))
    return Group(head, tab)


def render_json(doc: tuple[Sequence[GpuSpec], str | None]) -> str:
    specs, detected = doc
    return base_render_json(GpuSpecs(detected=detected, gpus=list(specs)))


PRESENTERS: dict[str, Presenter] = {"json": Presenter("json", ".json", False, render_json)}
