"""Presenters of classified kernel names: rich table, JSON (a list of objects), CSV, Markdown."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from rich.table import Table as RichTable

from kernelscope.model.identity import KernelIdentity
from kernelscope.presenters.base import (
    Column,
    Presenter,
    Table,
    fitted_table,
    render_csv,
    render_markdown,
    render_parquet,
)
from kernelscope.presenters.base import render_json as base_render_json

CLASSIFY_SCHEMA = "kernelscope.classify.v1"

COLUMNS = [
    Column("name", "Name", justify="left"),
    Column("kind", "Kind", justify="left"),
    Column("category", "Category", justify="left"),
    Column("function", "Function", justify="left"),
    Column("dtype", "Dtype", justify="left"),
    Column("tile", "Tile", justify="left"),
    Column("mma", "MMA", justify="left"),
    Column("layout", "Layout", justify="left"),
    Column("vendor", "Vendor", justify="left"),
    Column("demangled", "Demangled", justify="left"),
]


def _row(ident: KernelIdentity) -> dict[str, object]:
    return {c.key: getattr(ident, c.key) for c in COLUMNS}


def table(idents: Sequence[KernelIdentity]) -> Table:
    return Table("Kernel identity", COLUMNS, [_row(i) for i in idents])


def render_json(idents: Sequence[KernelIdentity]) -> str:
    """A JSON array; every object carries ``schema`` so a lone element is still self-describing."""
    return base_render_json([{"schema": CLASSIFY_SCHEMA, **msgspec.to_builtins(i)} for i in idents])


def rich_renderable(idents: Sequence[KernelIdentity], width: int = 200) -> RichTable:
    """The identity table for a terminal ``width`` columns wide: names and functions take what the fields leave."""
    shown = Table("Kernel identity", [c for c in COLUMNS if c.key != "demangled"], [_row(i) for i in idents])
    return fitted_table(shown, width, ("name", "function"), ("vendor", "layout", "mma", "tile"))


PRESENTERS: dict[str, Presenter] = {
    "json": Presenter("json", ".json", False, render_json),
    "csv": Presenter("csv", ".csv", False, lambda r: render_csv([table(r)])),
    "parquet": Presenter("parquet", ".parquet", True, lambda r: render_parquet([table(r)])),
    "markdown": Presenter("markdown", ".md", False, lambda r: render_markdown([table(r)])),
}
