"""Presenters of the hardware spec database."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.text import Text

from kernelscope.hw.specs import GpuSpec, GpuSpecs
from kernelscope.presenters.base import Column, Presenter, Table, rich_table
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


SUMMARY_COLUMNS = [
    Column("key", "key", justify="left"),
    Column("name", "name", justify="left"),
    Column("arch", "arch", justify="left"),  # says the vendor (gfx*, sm_*); the JSON and `kscope hw NAME` name it
    Column("compute_units", "CUs / SMs"),
    Column("memory_bandwidth_gbs", "memory GB/s"),
    Column("bf16_matrix_tflops", "bf16 matrix TFLOPS"),
    Column("fp8_matrix_tflops", "fp8 matrix TFLOPS"),
    Column("fp32_tflops", "fp32 TFLOPS"),
    Column("l2_cache_mib", "L2 MiB"),
]
SPEC_COLUMNS = [
    Column("spec", "spec", justify="left"),
    Column("value", "value", justify="left"),
    Column("unit", "unit", justify="left"),
    Column("source", "source", justify="left"),
    Column("section", "section", justify="left"),
]


def renderable(specs: Sequence[GpuSpec], detected: str | None, full: bool) -> Group:
    head = Text(f"present GPU: {detected or 'none detected'}", style="dim")
    if full:
        tables = [
            Table(
                f"{s.name} ({s.vendor} {s.arch})",
                SPEC_COLUMNS,
                [
                    {"spec": k, "value": _v(s, k), "unit": v.unit, "source": v.source,
                     "section": v.section + (f" — {v.note}" if v.note else "")}
                    for k, v in s.specs.items()
                ],
            )
            for s in specs
        ]  # fmt: skip
        return Group(head, *map(rich_table, tables))
    rows = [{"key": s.key, "name": s.name, "arch": s.arch} | {f: _v(s, f) for f in SUMMARY} for s in specs]
    title = "Hardware database (kscope hw NAME for values and citations)"
    return Group(head, rich_table(Table(title, SUMMARY_COLUMNS, rows)))


def render_json(doc: tuple[Sequence[GpuSpec], str | None]) -> str:
    specs, detected = doc
    return base_render_json(GpuSpecs(detected=detected, gpus=list(specs)))


PRESENTERS: dict[str, Presenter] = {"json": Presenter("json", ".json", False, render_json)}
