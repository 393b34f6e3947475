"""Nsight Compute source page: the .ncu-rep reader and the CSV-export reader against each other, the summary
against the CSV export and the details page.

Ground truth is parsed here with csv/gzip alone: ``h100_triton_source_sass.csv.gz`` is ncu 2025.3.1's own
``--page source --csv --print-source sass`` export of ``h100_triton_softmax_mm.ncu-rep``, and
``h100_triton_details.csv`` its ``--page details --csv`` export.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kernelscope.analyses.ncu import UNATTRIBUTED, summarize
from kernelscope.errors import FormatError, InputError
from kernelscope.model.ncu import NcuKernelSource, NcuSource, SassInstruction
from kernelscope.model.source import SourceLocation
from kernelscope.readers import ncu_rep, ncu_source, ncu_source_csv

DATA = Path(__file__).parent / "data" / "ncu"
REP = DATA / "h100_triton_softmax_mm.ncu-rep"
SOURCE_CSV = DATA / "h100_triton_source_sass.csv.gz"
DETAILS = DATA / "h100_triton_details.csv"
# ncu's SourceCounters section labels its stall columns with short names (section file, ncu 2025.3).
CSV_LABEL_TO_REASON = {
    "stall_barrier": "barrier", "stall_branch_resolving": "branch_resolving", "stall_dispatch": "dispatch_stall",
    "stall_drain": "drain", "stall_imc": "imc_miss", "stall_lg": "lg_throttle", "stall_long_sb": "long_scoreboard",
    "stall_math": "math_pipe_throttle", "stall_membar": "membar", "stall_mio": "mio_throttle", "stall_misc": "misc",
    "stall_no_inst": "no_instructions", "stall_not_selected": "not_selected", "stall_selected": "selected",
    "stall_short_sb": "short_scoreboard", "stall_sleep": "sleeping", "stall_sleeping": "sleeping",
    "stall_tex": "tex_throttle", "stall_wait": "wait",
}  # fmt: skip
_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6}


def _wheel() -> None:
    pytest.importorskip("ncu_report")


@cache
def csv_blocks() -> dict[str, list[dict[str, str]]]:
    """Kernel name -> its source-page rows (header names as keys), parsed with csv alone."""
    out: dict[str, list[dict[str, str]]] = {}
    header: list[str] = []
    name = ""
    for row in csv.reader(io.StringIO(gzip.decompress(SOURCE_CSV.read_bytes()).decode())):
        if row[0] == "Kernel Name":
            name, header = row[1], []
            out[name] = []
        elif not header:
            header = row
        else:
            out[name].append(dict(zip(header, row, strict=True)))
    return out


def _reasons(row: dict[str, str], not_issued: bool = False) -> dict[str, int]:
    out: Counter[str] = Counter()
    for label, value in row.items():
        base = label.removesuffix(" (Not Issued)")
        if base in CSV_LABEL_TO_REASON and (base != label) == not_issued and int(value):
            out[CSV_LABEL_TO_REASON[base]] += int(value)
    return dict(out)


@cache
def rep() -> NcuSource:
    return ncu_source.read(REP)


@cache
def exported() -> NcuSource:
    return ncu_source_csv.read(SOURCE_CSV)


# --- the .ncu-rep reader against ncu's own CSV export --------------------------------------------------


def test_report_counters_equal_the_csv_export() -> None:
    _wheel()
    blocks = csv_blocks()
    assert [k.name for k in rep().kernels] == list(blocks) == ["softmax_k", "mm_k"]
    for k in rep().kernels:
        rows = blocks[k.name]
        assert [i.address for i in k.instructions] == [int(r["Address"], 16) for r in rows]  # listing + order
        assert k.function_start == int(rows[0]["Address"], 16)
        for i, r in zip(k.instructions, rows, strict=True):
            assert i.samples == int(r["Warp Stall Sampling (All Samples)"]) == int(r["# Samples"]), r["Address"]
            assert i.not_issued == int(r["Warp Stall Sampling (Not-issued Samples)"]), r["Address"]
            assert i.executed == int(r["Instructions Executed"]), r["Address"]
            assert i.thread_executed == int(r["Thread Instructions Executed"]), r["Address"]
            # the report has every reason; the CSV has no column for warpgroup_arrive
            assert {x: n for x, n in i.reasons.items() if x != "warpgroup_arrive"} == _reasons(r), r["Address"]
            assert {x: n for x, n in i.not_issued_reasons.items() if x != "warpgroup_arrive"} == _reasons(r, True)
            assert sum(i.reasons.values()) == i.samples  # complete in the report
            assert sum(i.not_issued_reasons.values()) == i.not_issued


def test_report_sass_equals_the_export_up_to_the_disassembler_version() -> None:
    """The report stores machine code; the wheel (2026.3) disassembles it again, ncu 2025.3 did for the CSV.

    Opcodes agree everywhere; the newer disassembler writes LDGSTS operands in another order, names HGMMA's
    scoreboard ``R24.gsb0`` and keeps the ``.L_x_0`` label of a BRA: those rows alone differ.
    """
    _wheel()
    differ = set()
    for k in rep().kernels:
        for i, r in zip(k.instructions, csv_blocks()[k.name], strict=True):
            theirs = r["Source"].strip()
            assert _opcode(i.sass) == _opcode(theirs), (i.sass, theirs)
            if i.sass != theirs:
                differ.add(_opcode(i.sass))
    assert differ == {"LDGSTS.E.BYPASS.128", "HGMMA.64x128x16.F32.BF16", "BRA"}


def _opcode(sass: str) -> str:
    words = sass.split()
    return words[1] if words[0].startswith("@") else words[0]


def test_csv_reader_equals_the_report_reader() -> None:
    _wheel()
    assert exported().format == "ncu-source-csv" and rep().format == "ncu-rep"
    for a, b in zip(rep().kernels, exported().kernels, strict=True):
        assert (a.index, a.name, a.function_start, a.has_counters) == (b.index, b.name, b.function_start, True)
        for x, y in zip(a.instructions, b.instructions, strict=True):
            assert (x.address, x.samples, x.not_issued, x.executed, x.thread_executed) == (
                y.address, y.samples, y.not_issued, y.executed, y.thread_executed,
            )  # fmt: skip
            assert {r: n for r, n in x.reasons.items() if r != "warpgroup_arrive"} == y.reasons
        assert b.duration_ns is None and b.headline.bound is None and not b.has_line_info  # not in the export


# --- the summary ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["rep", "csv"])
def test_summary_totals_and_breakdown_match_the_export(source: str) -> None:
    if source == "rep":
        _wheel()
    result = summarize(rep() if source == "rep" else exported(), top=5)
    for k in result.kernels:
        rows = csv_blocks()[k.name]
        assert k.stall_samples == sum(int(r["# Samples"]) for r in rows)
        assert k.not_issued_samples == sum(int(r["Warp Stall Sampling (Not-issued Samples)"]) for r in rows)
        assert k.executed == sum(int(r["Instructions Executed"]) for r in rows)
        truth: Counter[str] = Counter()
        for r in rows:
            truth.update(_reasons(r))
        got = {s.reason: s.samples for s in k.stall_breakdown}
        assert {r: n for r, n in got.items() if r not in ("warpgroup_arrive", UNATTRIBUTED)} == dict(truth)
        assert sum(got.values()) == k.stall_samples
        assert sum(s.pct for s in k.stall_breakdown) == pytest.approx(100.0)
        named = [s.samples for s in k.stall_breakdown if s.reason != UNATTRIBUTED]
        assert named == sorted(named, reverse=True) and k.stall_breakdown[-1].samples <= named[0]
        # hotspots: the CSV rows with the most samples, in that order
        ranked = sorted(rows, key=lambda r: -int(r["# Samples"]))[:5]
        assert [h.address for h in k.hotspots] == [int(r["Address"], 16) for r in ranked]
        assert [h.stall_samples for h in k.hotspots] == [int(r["# Samples"]) for r in ranked]


def test_known_numbers_of_the_two_kernels() -> None:
    """The figures the report states (and docs/ncu.md quotes); each also follows from the CSV above."""
    _wheel()
    soft, mm = summarize(rep(), top=1).kernels
    assert (soft.stall_samples, mm.stall_samples) == (3958, 19987)
    assert [(s.reason, s.samples) for s in soft.stall_breakdown[:3]] == [
        ("long_scoreboard", 1697), ("barrier", 582), ("short_scoreboard", 523),
    ]  # fmt: skip
    assert [(s.reason, s.samples) for s in mm.stall_breakdown[:3]] == [
        ("barrier", 6623), ("long_scoreboard", 3392), ("dispatch_stall", 3352),
    ]  # fmt: skip
    h = soft.hotspots[0]
    assert (h.address, h.offset, h.stall_samples) == (0x7F61077AEBD0, 0x1D0, 1486)
    assert h.instruction == "PRMT R15, R4, 0x7632, R15"
    assert next(iter(h.reasons.items())) == ("long_scoreboard", 1460) and h.source == "/tmp/tk.py:5"
    h = mm.hotspots[0]
    assert (h.address, h.offset, h.stall_samples) == (0x7F61077BC8B0, 0xEB0, 5363)
    assert h.instruction == "@!PT  LDS RZ, [RZ]"
    assert next(iter(h.reasons.items())) == ("barrier", 4991) and h.executed == 524288


def test_hotspot_context_is_the_neighbouring_instructions() -> None:
    _wheel()
    for k in summarize(rep(), top=10, context=3).kernels:
        by_address = {i.address: i for i in next(x for x in rep().kernels if x.index == k.index).instructions}
        for h in k.hotspots:
            addresses = [c.address for c in h.context]
            assert h.address in addresses and addresses == sorted(addresses)
            assert all(b - a == 16 for a, b in itertools.pairwise(addresses))
            assert len(addresses) == 7 or addresses[0] == min(by_address) or addresses[-1] == max(by_address)
            assert all(c.instruction == by_address[c.address].sass for c in h.context)
    tail = summarize(rep(), top=4, context=2).kernels[0].hotspots[3]  # the BRA right after EXIT
    assert [c.instruction for c in tail.context][:2] == ["STG.E.128 desc[UR6][R12.64+0x1000], R4", "EXIT"]


def test_source_lines_aggregate_the_instructions() -> None:
    _wheel()
    src = rep()
    for k, s in zip(summarize(src, top=1000).kernels, src.kernels, strict=True):
        assert s.has_line_info and s.source_text
        assert sum(line.stall_samples for line in k.lines) == k.stall_samples  # every PC has a line here
        assert sum(line.instructions for line in k.lines) == len(s.instructions)
        for line in k.lines:
            mine = [i for i in s.instructions if i.source and (i.source.file, i.source.line) == (line.file, line.line)]
            assert line.stall_samples == sum(i.samples for i in mine)
            assert line.executed == sum(i.executed or 0 for i in mine)
    mm = summarize(src, kernel="^mm_k$", top=2).kernels[0]
    assert [(line.source, line.stall_samples) for line in mm.lines] == [
        ("/tmp/tk.py:12", 15309), ("/tmp/tk.py:11", 4092),
    ]  # fmt: skip
    assert mm.lines[0].text is not None and "tl.dot(" in mm.lines[0].text
    assert mm.lines[1].text == "for k in range(0, K, BK):"


def test_hotspots_and_lines_hold_ncu_fields_only_in_schema_order() -> None:
    """ATT and ncu share Hotspot, ContextInstruction and SourceLine; ncu's JSON has none of ATT's fields."""
    inst = SassInstruction(address=16, sass="EXIT", samples=3, reasons={"wait": 3}, source=SourceLocation("k.py", 7))
    kernel = NcuKernelSource(index=0, name="k", function_start=0, instructions=[inst], has_counters=True)
    k = summarize(NcuSource(path="k.ncu-rep", format="ncu-rep", kernels=[kernel])).kernels[0]
    hot, line = msgspec.to_builtins(k.hotspots[0]), msgspec.to_builtins(k.lines[0])
    assert list(hot) == ["address", "offset", "instruction", "stall_samples", "pct", "not_issued", "reasons",
                         "executed", "thread_executed", "source", "source_text", "context"]  # fmt: skip
    assert list(hot["context"][0]) == ["address", "offset", "instruction", "stall_samples"]
    assert list(line) == ["source", "file", "line", "text", "stall_samples", "pct", "reasons", "executed",
                          "instructions"]  # fmt: skip
    assert k.lines[0].location == SourceLocation("k.py", 7) and hot["source"] == line["source"] == "k.py:7"


def test_csv_input_says_what_it_lacks() -> None:
    result = summarize(exported())
    soft, mm = result.kernels
    assert result.notes and "no source lines" in result.notes[0]
    for k in (soft, mm):
        assert k.lines == [] and k.duration_ns is None and k.headline.sm_throughput_pct is None
        assert all(h.source is None for h in k.hotspots)
        assert any(n.startswith("no source lines") for n in k.notes)
    # mm_k's 89 warpgroup_arrive samples have no column in the export: shown as unattributed, not dropped
    rest = next(s for s in mm.stall_breakdown if s.reason == UNATTRIBUTED)
    assert (rest.samples, rest.not_issued) == (89, 50)
    assert not any(s.reason == UNATTRIBUTED for s in soft.stall_breakdown)


def test_report_has_the_reasons_the_export_leaves_out() -> None:
    _wheel()
    mm = summarize(rep(), kernel="mm").kernels[0]
    arrive = next(s for s in mm.stall_breakdown if s.reason == "warpgroup_arrive")
    assert (arrive.samples, arrive.not_issued, arrive.label) == (89, 50, "Warpgroup arrive")


# --- headline against the details page ------------------------------------------------------------------


def _details() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    with DETAILS.open(newline="") as f:
        for row in csv.DictReader(f):
            k = out.setdefault(row["Kernel Name"], {})
            if row["Metric Name"]:
                k[f"{row['Section Name']}/{row['Metric Name']}"] = (row["Metric Value"], row["Metric Unit"])
            elif row["Rule Name"] == "SOLBottleneck":
                k["bound"] = row["Rule Description"]
    return out


def _close(value: float | int | None, cell: tuple[str, str], scale: float = 1.0) -> bool:
    text, _ = cell
    decimals = len(text.partition(".")[2])
    return value is not None and abs(value - float(text.replace(",", "")) * scale) <= 0.5 * 10**-decimals * scale


def test_headline_equals_the_details_page() -> None:
    _wheel()
    details = _details()
    for k in summarize(rep()).kernels:
        d, h = details[k.name], k.headline
        duration = d["GPU Speed Of Light Throughput/Duration"]
        assert _close(k.duration_ns, duration, _NS[duration[1]])
        assert _close(h.sm_throughput_pct, d["GPU Speed Of Light Throughput/Compute (SM) Throughput"])
        assert _close(h.memory_throughput_pct, d["GPU Speed Of Light Throughput/Memory Throughput"])
        assert _close(h.dram_throughput_pct, d["GPU Speed Of Light Throughput/DRAM Throughput"])
        assert _close(h.achieved_occupancy_pct, d["Occupancy/Achieved Occupancy"])
        assert _close(h.theoretical_occupancy_pct, d["Occupancy/Theoretical Occupancy"])
        assert h.registers == int(d["Launch Statistics/Registers Per Thread"][0])
        # the rule's verdict: its message up to the first colon, as the details page prints it
        assert h.bound == d["bound"].split(":", 1)[0]
    assert [k.headline.bound for k in summarize(rep()).kernels] == [
        "Memory is more heavily utilized than Compute", "Compute and Memory are well-balanced",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("message", "clause"),
    [
        ("Compute and Memory are well-balanced: To reduce runtime, see @section:X:Compute Workload@.",
         "Compute and Memory are well-balanced"),
        ("This kernel exhibits low compute throughput. Achieved 12.5% of peak.",
         "This kernel exhibits low compute throughput"),
        ("See the @url:Profiling Guide:https://docs.nvidia.com/x@ for 1.5x.", "See the Profiling Guide for 1.5x"),
        ("Line @source:/a/b.cu:12:b.cu:12@ stalls", "Line b.cu:12 stalls"),
    ],
)  # fmt: skip
def test_verdict_keeps_the_leading_clause_and_link_text(message: str, clause: str) -> None:
    assert ncu_source.verdict(message) == clause


# --- absent data: notes; bad input: errors ---------------------------------------------------------------


class _Stripped:
    """A real report action with parts of its source page removed, as reports collected without them are."""

    def __init__(self, action: Any, hide: tuple[str, ...], lines: bool = True, text: bool = True) -> None:
        self._a, self._hide, self._lines, self._text = action, hide, lines, text

    def metric_names(self) -> tuple[str, ...]:
        return tuple(n for n in self._a.metric_names() if not n.startswith(self._hide))

    def metric_by_name(self, name: str) -> Any:
        return None if name.startswith(self._hide) else self._a.metric_by_name(name)

    def source_info(self, pc: int) -> Any:
        return self._a.source_info(pc) if self._lines else None

    def source_files(self) -> dict[str, str]:
        return {f: t if self._text else "" for f, t in self._a.source_files().items()}

    def name(self, *base: int) -> str:
        return str(self._a.name(*base))

    def sass_by_pc(self, pc: int) -> str:
        return str(self._a.sass_by_pc(pc))

    def rule_results(self) -> Any:
        return self._a.rule_results()


_REAL_ACTIONS = ncu_rep.kernel_actions


def _stripped(monkeypatch: pytest.MonkeyPatch, hide: tuple[str, ...], **kw: bool) -> NcuSource:
    def actions(path: Path, ctx: Any) -> tuple[list[Any], int]:
        found, skipped = _REAL_ACTIONS(path, ctx)
        return [_Stripped(a, hide, **kw) if a.name() == "mm_k" else a for a in found], skipped

    monkeypatch.setattr(ncu_rep, "kernel_actions", actions)
    return ncu_source.read(REP)


SOURCE_COUNTERS = ("smsp__pcsamp_", "inst_executed", "thread_inst_executed")


def test_a_kernel_without_source_counters_gets_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    _wheel()
    src = _stripped(monkeypatch, SOURCE_COUNTERS)
    soft, mm = summarize(src).kernels
    assert soft.stall_samples == 3958 and soft.hotspots
    assert mm.stall_samples is None and mm.hotspots == [] and mm.stall_breakdown == [] and mm.lines == []
    assert mm.instructions == 400  # the SASS listing is there without counters
    assert mm.duration_ns == 238_048 and mm.headline.registers == 110
    assert len(mm.notes) == 1 and "no source counters" in mm.notes[0]
    with pytest.raises(InputError, match="no source counters for any kernel"):
        summarize(src, kernel="mm_k")
    # a report's section keeps the headline and says why there is nothing more
    (head,) = summarize(src, kernel="mm_k", headline_only=True).kernels
    assert head.duration_ns == 238_048 and head.hotspots == []
    assert any(
        n.startswith("headline only: no source counters")
        for n in summarize(src, kernel="mm_k", headline_only=True).notes
    )


def test_a_report_without_line_table_or_source_text(monkeypatch: pytest.MonkeyPatch) -> None:
    _wheel()
    mm = summarize(_stripped(monkeypatch, ("no_such_metric",), lines=False), kernel="mm").kernels[0]
    assert mm.lines == [] and all(h.source is None for h in mm.hotspots) and mm.stall_samples == 19987
    assert any("no line table" in n and "-lineinfo" in n for n in mm.notes)
    mm = summarize(_stripped(monkeypatch, ("no_such_metric",), text=False), kernel="mm").kernels[0]
    assert mm.lines and all(line.text is None for line in mm.lines) and mm.hotspots[0].source_text is None
    assert any("--import-source yes" in n for n in mm.notes)


@pytest.mark.parametrize(
    ("options", "match"),
    [({"kernel": "nope"}, "matches none"), ({"kernel": "("}, "regular expression"), ({"top": 0}, "top >= 1")],
)
def test_bad_options(options: dict[str, Any], match: str) -> None:
    with pytest.raises(InputError, match=match):
        summarize(exported(), **options)


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_damaged_csv_exports(tmp_path: Path) -> None:
    text = gzip.decompress(SOURCE_CSV.read_bytes())
    with pytest.raises(FormatError, match="truncated"):  # cut mid-row
        ncu_source_csv.read(_write(tmp_path, "cut.csv", text[: len(text) // 2]))
    with pytest.raises(FormatError, match="line break"):  # cut after a field
        ncu_source_csv.read(_write(tmp_path, "cut2.csv", text[: text.rindex(b'"0"') + 3]))
    with pytest.raises(FormatError, match="damaged"):  # the gzip stream cut short
        ncu_source_csv.read(_write(tmp_path, "cut.csv.gz", SOURCE_CSV.read_bytes()[:8000]))
    second = text.index(b'"Kernel Name","mm_k"')
    with pytest.raises(FormatError, match="header and instruction rows"):  # a block with no rows
        ncu_source_csv.read(_write(tmp_path, "empty_block.csv", text[: text.index(b"\n", second) + 1]))
    with pytest.raises(FormatError, match="empty file"):
        ncu_source_csv.read(_write(tmp_path, "empty.csv", b""))


def test_other_ncu_pages_are_refused_with_the_export_command(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="--page source --csv --print-source sass"):
        ncu_source_csv.read(DETAILS)
    ptx = b'"Kernel Name","k",\n"# Address","Source"\n"0x0","mov.u32 %r1, %tid.x;"\n'
    with pytest.raises(FormatError, match="'Address'"):
        ncu_source_csv.read(_write(tmp_path, "ptx.csv", ptx))


def test_truncated_report(tmp_path: Path) -> None:
    _wheel()
    data = REP.read_bytes()
    for keep in (0.5, 0.99):
        with pytest.raises(FormatError, match="truncated"):
            ncu_source.read(_write(tmp_path, "cut.ncu-rep", data[: int(len(data) * keep)]))
    assert ncu_source.is_report(REP) and not ncu_source.is_report(SOURCE_CSV)


def test_a_kernel_filter_skips_reading_the_others() -> None:
    _wheel()
    src = ncu_source.read(REP, select=lambda name, mangled: name == "mm_k")
    soft, mm = src.kernels
    assert (soft.name, soft.instructions, soft.has_counters, soft.duration_ns) == ("softmax_k", [], False, None)
    assert len(mm.instructions) == 400 and mm.has_counters
    assert [k.name for k in summarize(src, kernel="mm_k").kernels] == ["mm_k"]
