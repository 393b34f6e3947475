"""Results as DataFrames, Arrow tables and notebook HTML, checked against the inputs' own numbers."""

from __future__ import annotations

import gzip
import json
import math
from collections import defaultdict
from pathlib import Path

import msgspec
import pytest

from kernelscope import api
from kernelscope.model.frames import HTML_ROWS, html_table, to_arrow, to_pandas

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

DATA = Path(__file__).parent / "data"
TRACE = DATA / "kineto" / "h100_transformer_eager.json.gz"


def _kernel_sums(trace: Path) -> dict[str, tuple[int, float]]:
    """(calls, total µs) per kernel name, straight from the trace's events."""
    with gzip.open(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    out: dict[str, list[float]] = defaultdict(list)
    for e in events:
        if e.get("cat") == "kernel":
            out[e["name"]].append(e["dur"])
    return {n: (len(d), math.fsum(d)) for n, d in out.items()}


def test_gap_frame_equals_the_trace() -> None:
    df = api.gap_report([TRACE]).to_pandas()
    truth = _kernel_sums(TRACE)
    assert sorted(df["name"]) == sorted(truth)
    for row in df.itertuples():
        calls, total = truth[row.name]
        assert row.calls == calls and row.total_us == pytest.approx(total, rel=1e-9)
    assert str(df["calls"].dtype) == "Int64" and str(df["total_us"].dtype) == "Float64"
    assert str(df["name"].dtype) == "string"


def test_isa_frame_equals_the_compilers_metadata() -> None:
    meta = json.loads((DATA / "codeobj" / "triton_metadata.json").read_text())
    df = to_pandas(api.isa([DATA / "codeobj" / name for name in meta]))
    assert len(df) == len(meta)
    for row in df.itertuples():
        m = meta[Path(row.path).name]
        assert row.name == m["kernel"]
        assert m["arch"] in row.arch  # the cubins' metadata says "90" for sm_90a
    arrow = to_arrow(api.isa([DATA / "codeobj" / "mm_gfx942.hsaco"]))
    assert arrow.num_rows == 1 and {"vgpr", "agpr", "lds_bytes", "mix.valu"} <= set(arrow.column_names)


def test_ncu_and_att_hotspots_carry_their_kernel_or_capture() -> None:
    ncu = api.ncu(DATA / "ncu" / "h100_softmax_slow.ncu-rep")
    df = ncu.to_pandas()
    assert len(df) == sum(len(k.hotspots) for k in ncu.kernels)
    assert set(df["kernel"]) == {k.name for k in ncu.kernels if k.hotspots}
    assert df["stall_samples"].tolist() == [h.stall_samples for k in ncu.kernels for h in k.hotspots]
    att = api.att([DATA / "att" / "rmsnorm"])
    adf = att.to_pandas()
    assert len(adf) == sum(len(c.hotspots) for c in att.captures)
    assert adf["stall_cycles"].tolist() == [h.stall_cycles for c in att.captures for h in c.hotspots]


def test_flattened_columns_are_the_json_fields() -> None:
    """Nested objects become parent.child columns: the names a user knows from --json."""
    gap = api.gap_report([TRACE])
    columns: dict[str, None] = {}
    for row in msgspec.to_builtins(gap.kernels):  # e.g. top_variant -> top_variant.grid, top_variant.block...
        for key, value in row.items():
            columns.update(dict.fromkeys([f"{key}.{k}" for k in value] if isinstance(value, dict) else [key]))
    df = gap.to_pandas()
    assert list(df.columns) == list(columns) and "top_variant.registers" in columns


def test_classify_list_and_html_escaping() -> None:
    ids = api.classify_names(["nvjet_tst_192x8_64x8_4x1_v_bz_TNT", "void foo<bar>(int)\x1b[2J"])
    df = to_pandas(ids)
    assert df["kind"].tolist()[0] == "cublas" and df["tile"].tolist()[0] == "192x8x64"
    page = html_table("names", to_pandas(ids).to_dict("records"))
    assert "<bar>" not in page and "&lt;bar&gt;" in page
    many = html_table("t", [{"i": i} for i in range(HTML_ROWS + 7)])
    assert many.count("<tr>") == HTML_ROWS + 1 and "7 more rows" in many


def test_notebook_runs_and_shows_tables_and_plots() -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    folder = Path(__file__).parent.parent / "examples" / "notebook"
    nb = nbformat.read(folder / "kernelscope.ipynb", as_version=4)
    where = {"metadata": {"path": str(folder)}}
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources=where).execute()
    html = [o["data"].get("text/html", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if "data" in o]  # fmt: skip
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert not errors
    assert all("<table" in h for h in html) and len(html) == 6
    assert sum("<svg" in h for h in html) == 2  # the roofline and the ATT capture show their plots inline


@pytest.mark.parametrize(
    "argv",
    [
        ["isa", str(DATA / "codeobj" / "mm_gfx942.hsaco"), str(DATA / "codeobj" / "add_gfx1201.hsaco")],
        ["diff", str(TRACE), str(DATA / "kineto" / "h100_transformer_compile.json.gz")],
        ["classify", "nvjet_tst_192x8_64x8_4x1_v_bz_TNT", "_ZN5aiter19fmha_fwd_hd128_bf16E"],
    ],
    ids=["isa", "diff", "classify"],
)
def test_parquet_wherever_csv(argv: list[str], tmp_path: Path) -> None:
    """--parquet -o F holds the CSV's columns and rows, typed."""
    import csv
    import subprocess
    import sys

    import pyarrow.parquet as pq

    run = [sys.executable, "-m", "kernelscope", *argv]
    text = subprocess.run([*run, "--csv"], capture_output=True, text=True, check=True, timeout=300).stdout
    header, *rows = list(csv.reader(text.splitlines()))
    out = tmp_path / "t.parquet"
    subprocess.run([*run, "--parquet", "-o", str(out)], capture_output=True, text=True, check=True, timeout=300)
    table = pq.read_table(out)
    assert table.column_names == header and table.num_rows == len(rows) > 0
    first = table.column(header[0]).to_pylist()
    assert [str(v) if v is not None else "" for v in first] == [r[0] for r in rows]
