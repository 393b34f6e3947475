"""Terminal tables fit the terminal without cutting a number: the gap and identity tables at common widths
against the analysis's own values (each row's share, kind and category must be readable whole)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from kernelscope import gap, readers
from kernelscope.data import demo_file
from kernelscope.identity import classify
from kernelscope.presenters import gap as gap_presenter
from kernelscope.presenters import identity as identity_presenter
from kernelscope.presenters.base import Column, Table, fitted_table

DATA = Path(__file__).parent / "data"

WIDTHS = (80, 100, 140, 200)


def _render(renderable: object, width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text().splitlines()


@pytest.mark.parametrize("width", WIDTHS)
def test_gap_table_keeps_every_share_kind_and_category_whole(width: int) -> None:
    result = gap(readers.read(demo_file("h100_train_steps.json.gz")))
    lines = _render(gap_presenter.rich_renderable(result, top=10, width=width), width)
    rows = [line for line in lines if line.startswith("│")]
    assert len(rows) == 10
    assert max(map(len, lines)) <= width
    for line, k in zip(rows, result.kernels[:10], strict=True):
        cells = [c.strip() for c in line.strip("│").split("│")]
        assert f"{k.pct:.2f}" in cells and f"{k.total_us:,.1f}" in cells
        assert k.kind in cells and k.category in cells


@pytest.mark.parametrize("width", WIDTHS)
def test_identity_table_keeps_the_fields_whole(width: int) -> None:
    names = ["nvjet_sm90_tst_128x248_64x4_2x1_v_bz_coopA_NNT", "_fwd_kernel_stage1", "x" * 300]
    idents = classify(names)
    lines = _render(identity_presenter.rich_renderable(idents, width=width), width)
    assert max(map(len, lines)) <= width
    for line, i in zip([x for x in lines if x.startswith("│")], idents, strict=True):
        cells = [c.strip() for c in line.strip("│").split("│")]
        assert i.kind in cells and i.category in cells


def test_fitted_table_drops_in_order_and_hides_empty_columns() -> None:
    cols = [Column("name", "Name", justify="left"), Column("a", "A"), Column("b", "B"), Column("c", "C")]
    rows = [{"name": "n" * 60, "a": 1.0, "b": 22.0, "c": None}]
    t = Table("t", cols, rows)
    header = next(x for x in _render(fitted_table(t, 200, drop=("b", "a")), 200) if x.startswith("┃"))
    assert [h.strip() for h in header.strip("┃").split("┃")] == ["Name", "A", "B"]  # C: empty everywhere
    narrow = _render(fitted_table(t, 34, drop=("b", "a")), 34)
    header = next(x for x in narrow if x.startswith("┃"))
    assert [h.strip() for h in header.strip("┃").split("┃")] == ["Name", "A"]  # B went first
    assert max(map(len, narrow)) <= 34


@pytest.mark.parametrize("width", (60, 100, 140, 200))
def test_code_object_table_never_breaks_a_number(width: int) -> None:
    """``kscope isa`` on a real gfx942 object (14 columns): every register and byte count from the compiler's
    metadata reads whole at every width; narrower than the numbers need, each kernel is ``field value`` lines."""
    from kernelscope import api
    from kernelscope.presenters import isa as isa_presenter

    objs = api.isa([DATA / "codeobj" / "mm_gfx942.hsaco"])
    lines = _render(isa_presenter.rich_renderable(objs), width)
    assert max(map(len, lines)) <= width
    tokens = {tok for line in lines for tok in line.replace("│", " ").replace("┃", " ").split()}
    k = objs[0].kernels[0]
    for value in (k.vgpr, k.agpr, k.sgpr, k.vgpr_spill, k.sgpr_spill, k.scratch_bytes, k.lds_bytes):
        assert str(value) in tokens
    if width == 60:
        assert any(line.split()[:3] == ["VGPR", "spill", str(k.vgpr_spill)] for line in lines if line.strip())


def test_hotspot_disassembly_is_one_instruction_per_line() -> None:
    """A real ncu source page: each hotspot's context instructions (as the reader parsed them) print on lines of
    their own, the hotspot marked, not joined by a visible ``\\n``; a control character in one is still escaped."""
    import msgspec

    from kernelscope import api
    from kernelscope.presenters import ncu as ncu_presenter

    result = api.ncu(DATA / "ncu" / "h100_softmax_slow_source_sass.csv.gz")
    text = "\n".join(_render(ncu_presenter.rich_renderable(result), 250))
    assert "\\n" not in text
    hot = result.kernels[0].hotspots[0]
    marked = next(c for c in hot.context if c.address == hot.address)
    assert any(x.split("│")[-2].strip().startswith(f"> {marked.offset:#06x}") for x in text.splitlines() if "│" in x)
    evil = msgspec.structs.replace(marked, instruction="NOP\x1b[2J")
    ctx = tuple(evil if c is marked else c for c in hot.context)
    kernel = msgspec.structs.replace(result.kernels[0], hotspots=[msgspec.structs.replace(hot, context=ctx)])
    shown = "\n".join(_render(ncu_presenter.rich_renderable(msgspec.structs.replace(result, kernels=[kernel])), 250))
    assert "\x1b" not in shown and "NOP\\x1b[2J" in shown


def test_an_empty_table_still_prints_its_header() -> None:
    from kernelscope.presenters.base import rich_table

    cols = [Column("name", "Name", justify="left"), Column("n", "Calls")]
    lines = _render(rich_table(Table("nothing", cols, [])), 80)
    assert any("Name" in x and "Calls" in x for x in lines)
