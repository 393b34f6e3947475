"""Presenters of code objects: rich tables per object, JSON (kernelscope.isa.v1), CSV, Markdown."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from rich.console import Group, RenderableType
from rich.text import Text

from kernelscope.model.codeobj import CodeObject, CodeObjects, KernelCode
from kernelscope.presenters.base import (
    Column,
    Presenter,
    Table,
    display_names,
    note_text,
    render_csv,
    render_json,
    render_markdown,
    render_parquet,
    rich_table,
)

AMD_COLUMNS = [
    Column("name", "Kernel", justify="left"),
    Column("arch", "Arch", justify="left"),
    Column("vgpr", "VGPR"),
    Column("agpr", "AGPR"),
    Column("sgpr", "SGPR"),
    Column("vgpr_spill", "VGPR spill"),
    Column("sgpr_spill", "SGPR spill"),
    Column("lds_bytes", "LDS B"),
    Column("scratch_bytes", "Scratch B"),
    Column("wave_size", "Wave"),
]
NV_COLUMNS = [
    Column("name", "Kernel", justify="left"),
    Column("arch", "Arch", justify="left"),
    Column("registers", "Regs"),
    Column("shared_bytes", "Shared B"),
    Column("local_bytes", "Local B"),
    Column("stack_bytes", "Stack B"),
]
TAIL = [
    Column("occupancy", "Occupancy", justify="left"),
    Column("limiter", "Limiter", justify="left"),
    Column("instructions", "Instr"),
    Column("top_mix", "Top of the mix", justify="left"),
]


def _occ(k: KernelCode) -> str | None:
    o = k.occupancy
    if o is None:
        return None
    return f"{o.per_unit} ({o.pct:.0f}%, block {o.block_size})"


def _row(k: KernelCode) -> dict[str, object]:
    top = sorted(((c, v) for c, v in k.mix.items() if "." not in c), key=lambda cv: -cv[1])[:5]
    return {
        **msgspec.to_builtins(k),
        "occupancy": _occ(k),
        "limiter": k.occupancy.limiter if k.occupancy else None,
        "top_mix": " ".join(f"{c}:{v}" for c, v in top) or None,
    }


def tables(objs: Sequence[CodeObject]) -> list[Table]:
    shown = display_names([k.name for o in objs for k in o.kernels])
    return [
        Table(
            f"{o.path} — {o.vendor} {o.arch} ({o.format})",
            (AMD_COLUMNS if o.vendor == "amd" else NV_COLUMNS) + TAIL,
            [{**_row(k), "name": shown[k.name]} for k in o.kernels],
            notes=list(o.notes),
        )
        for o in objs
    ]


def rich_renderable(objs: Sequence[CodeObject]) -> Group:
    parts: list[RenderableType] = []
    for t in tables(objs):
        parts += [rich_table(t), *(note_text(n) for n in t.notes), Text("")]
    return Group(*parts)


def _json(objs: Sequence[CodeObject]) -> str:
    return render_json(CodeObjects(objects=list(objs)))


def _flat(objs: Sequence[CodeObject]) -> list[Table]:
    """One table for CSV/Markdown: the union of both vendors' columns."""
    cols = AMD_COLUMNS + [c for c in NV_COLUMNS if c.key not in ("name", "arch")] + TAIL
    rows = [{**_row(k), "path": o.path} for o in objs for k in o.kernels]
    return [Table("Code objects", [Column("path", "Path", justify="left"), *cols], rows)]


PRESENTERS: dict[str, Presenter] = {
    "json": Presenter("json", ".json", False, _json),
    "csv": Presenter("csv", ".csv", False, lambda o: render_csv(_flat(o))),
    "parquet": Presenter("parquet", ".parquet", True, lambda o: render_parquet(_flat(o))),
    "markdown": Presenter("markdown", ".md", False, lambda o: render_markdown(_flat(o))),
}
