"""Nsight Compute's printed details, against ncu's own CSV export of the same report.

``tests/data/ncu/text/`` holds what ``ncu -i REPORT`` (Nsight Compute 2025.3.1, on the lent H200) printed for the
project's real H100 reports, beside which ``tests/data/ncu/`` already holds ``ncu -i REPORT --page details --csv``
of each: the same details page, printed two ways. The CSV is parsed here with the csv module alone.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelscope.cli import app
from kernelscope.errors import FormatError
from kernelscope.model import Dim3
from kernelscope.readers import _ncu, detect, ncu_text

DATA = Path(__file__).parent / "data" / "ncu"
TEXT = DATA / "text"
PAIRS = {
    "h100_softmax_fast.ncu.txt": "h100_softmax_fast_details.csv.gz",
    "h100_softmax_slow.ncu.txt": "h100_softmax_slow_details.csv.gz",
    "h100_triton_softmax_mm.ncu.txt.gz": "h100_triton_details.csv",
}


def _read(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode()


def _csv_kernels(path: Path) -> list[dict[str, object]]:
    """Per kernel, in order: its launch columns and every numeric metric as (value, unit) by ``Section/Metric``."""
    kernels: dict[str, dict[str, object]] = {}
    for row in csv.DictReader(io.StringIO(_read(path))):
        k = kernels.setdefault(
            row["ID"], {"name": row["Kernel Name"], "grid": row["Grid Size"], "block": row["Block Size"], "metrics": {}}
        )
        value = row["Metric Value"].replace(",", "")
        if row["Metric Name"] and re.fullmatch(r"-?[\d.]+(?:e[-+]?\d+)?", value):
            k["metrics"][f"{row['Section Name']}/{row['Metric Name']}"] = (float(value), row["Metric Unit"])  # type: ignore[index]
    return list(kernels.values())


@pytest.mark.parametrize("name", list(PAIRS))
def test_the_printed_details_are_the_csv_details(name: str) -> None:
    path = TEXT / name
    assert detect(path) == "ncu-text"
    prof = ncu_text.read(path)
    truth = _csv_kernels(DATA / PAIRS[name])
    assert [k.name for k in prof.launches] == [t["name"] for t in truth]
    for launch, t in zip(prof.launches, truth, strict=True):
        assert str((launch.grid_blocks.x, launch.grid_blocks.y, launch.grid_blocks.z)) == t["grid"]  # type: ignore[union-attr]
        assert str((launch.block.x, launch.block.y, launch.block.z)) == t["block"]  # type: ignore[union-attr]
        want = {key: v * _ncu.unit_scale(unit)[0] for key, (v, unit) in t["metrics"].items()}  # type: ignore[attr-defined]
        assert launch.metrics == want  # every metric the page holds, printed to the same digits
        duration, unit = t["metrics"]["GPU Speed Of Light Throughput/Duration"]  # type: ignore[index]
        assert launch.duration_ns == round(duration * {"us": 1e3, "ms": 1e6, "ns": 1.0}[unit])
    assert prof.timing == "serialized" and {d.arch for d in prof.devices} == {"sm_90"}


def test_base_units_agree_to_the_digits_the_csv_prints() -> None:
    """``--print-units base``: ns, byte and hz, printed whole; the CSV prints 2 decimals of its display unit."""
    base = ncu_text.read(TEXT / "h100_triton_softmax_mm_base.ncu.txt.gz")
    shown = ncu_text.read(TEXT / "h100_triton_softmax_mm.ncu.txt.gz")
    for b, s in zip(base.launches, shown.launches, strict=True):
        assert b.duration_ns == pytest.approx(s.duration_ns, abs=5)
        assert b.metrics is not None and s.metrics is not None and set(b.metrics) == set(s.metrics)
        assert all(b.metrics[k] == pytest.approx(v, rel=5e-3, abs=0.006) for k, v in s.metrics.items())


def test_a_live_run_in_its_log() -> None:
    """``ncu ./app`` as a log holds it: ncu's ==PROF== lines and the program's own output before the results."""
    path = TEXT / "live_log.ncu.txt"
    assert detect(path) == "ncu-text"
    (k,) = ncu_text.read(path).launches
    assert k.name.startswith("void <unnamed>::softmax_warp_forward<float, float, float, 11, 0, 0>")
    assert (k.grid_blocks, k.block, k.device, k.stream) == (Dim3(512, 1, 1), Dim3(32, 4, 1), 0, 7)
    assert k.duration_ns > 0 and k.registers == 80


def _as_2020(text: str) -> str:
    """The same details as Nsight Compute 2020-2021 printed them: a dated kernel line without its launch shape, tables
    of fixed widths (70, 15, 30) without a header row, and the Speed Of Light section and metrics under old names."""
    old = {"Memory Throughput": "Memory [%]", "DRAM Throughput": "SOL DRAM", "Compute (SM) Throughput": "SM [%]"}
    rule = "    " + " ".join("-" * w for w in (70, 15, 30))
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    rows = 0
    sol = False  # inside the Speed Of Light section, whose metrics were renamed
    for line in text.splitlines():
        if line.startswith("    Section: "):
            sol = line == "    Section: GPU Speed Of Light Throughput"
        if (k := re.match(r"^  (\S.*?) \(\d+, \d+, \d+\)x\(.*?, Context (\d+), Stream (\d+)", line)) is not None:
            out.append(f"  {k[1]}, 2020-Oct-28 10:36:31, Context {k[2]}, Stream {k[3]}")
        elif line == "    Section: GPU Speed Of Light Throughput":
            out.append("    Section: GPU Speed Of Light")
        elif re.fullmatch(r"    -+ -+ -+\s*", line):
            if not spans:  # the rule that opens a table (the one under its header row is dropped)
                spans, rows = [m.span() for m in re.finditer(r"-+", line)], 0
                out.append(rule)
            elif rows:  # the rule that closes it
                spans = []
                out.append(rule)
        elif spans:
            name, unit = (line[a:b].strip() for a, b in spans[:2])
            value = line[spans[2][0] :].strip()
            if name == "Metric Name":
                continue
            rows += 1
            out.append(f"    {old.get(name, name) if sol else name:<70} {unit:>15} {value:>30}")
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def test_the_layout_before_2022(tmp_path: Path) -> None:
    now = TEXT / "h100_softmax_fast.ncu.txt"
    path = tmp_path / "old.txt"
    path.write_text(_as_2020(now.read_text()))
    assert "Metric Name" not in path.read_text() and "Section: GPU Speed Of Light\n" in path.read_text()
    assert detect(path) == "ncu-text"
    (old,) = ncu_text.read(path).launches
    (new,) = ncu_text.read(now).launches
    assert old.grid_blocks is None and old.metrics == new.metrics  # the old names read as today's
    assert (old.duration_ns, old.registers, old.lds_bytes, old.stream) == (
        new.duration_ns,
        new.registers,
        new.lds_bytes,
        new.stream,
    )


def test_through_the_cli_and_bad_input(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["gap", str(TEXT / "h100_triton_softmax_mm.ncu.txt.gz"), "--json"])
    assert res.exit_code == 0, res.output
    assert {k["name"] for k in json.loads(res.output)["kernels"]} == {"softmax_k", "mm_k"}
    cut = tmp_path / "cut.txt"  # a paste that kept a kernel's launch statistics but not its Speed Of Light section
    text = (TEXT / "h100_softmax_fast.ncu.txt").read_text()
    cut.write_text(text[: text.index("    Section: GPU Speed Of Light")] + text[text.index("    Section: Launch") :])
    res = CliRunner().invoke(app, ["gap", str(cut)])
    assert res.exit_code == 2 and "SpeedOfLight" in res.output and "Traceback" not in res.output
    none = tmp_path / "none.txt"
    none.write_text("    Section: GPU Speed Of Light Throughput\n")
    with pytest.raises(FormatError, match="no kernel line"):
        ncu_text.read(none)
