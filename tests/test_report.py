"""``kscope report`` / ``kscope shapes``: the report folder's numbers against the raw trace, the shape
ledger against the trace's own op/kernel links, and the offline HTML rendered in headless Chromium."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_kscope

from kernelscope.data import demo_file

TRACE = demo_file("h100_transformer_eager.json.gz")
CODEOBJ = Path(__file__).parent / "data" / "codeobj"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _events() -> list[dict[str, object]]:
    with gzip.open(TRACE) as f:
        ev: list[dict[str, object]] = json.load(f)["traceEvents"]
    return ev


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    proc = run_kscope("report", str(TRACE), "--code", str(CODEOBJ / "mm_gfx942.hsaco"), "-o", str(out / "r"))
    assert proc.returncode == 0, proc.stderr
    return out / "r"


def test_report_numbers_equal_the_raw_trace(folder: Path) -> None:
    doc = json.loads((folder / "report.json").read_text())
    assert doc["schema"] == "kernelscope.report.v1"
    totals: dict[str, float] = defaultdict(float)
    for e in _events():
        if e.get("cat") == "kernel":
            totals[str(e["name"])] += float(e["dur"])  # type: ignore[arg-type]
    top = max(totals, key=lambda k: totals[k])
    share = 100 * totals[top] / sum(totals.values())
    assert doc["gap"]["kernels"][0]["name"] == top
    assert doc["gap"]["kernels"][0]["pct"] == pytest.approx(share, abs=0.01)
    time = next(f for f in doc["headline"] if f["topic"] == "time")
    assert top in time["text"] and f"{share:.1f}%" in time["text"]
    (obj,) = doc["code"]
    assert obj["kernels"][0]["occupancy"]["limiter"] == "vgpr"  # 512 unified VGPRs (tests/test_codeobj.py)
    assert (folder / "roofline.png").read_bytes()[:4] == b"\x89PNG"
    md = (folder / "REPORT.md").read_text()
    assert "## Headline" in md and top in md


def test_shape_ledger_time_equals_the_kernels_linked_to_ops(tmp_path: Path) -> None:
    ev = _events()
    ops = {e["args"]["External id"] for e in ev if e.get("cat") == "cpu_op"}  # type: ignore[index]
    truth = sum(
        float(e["dur"])  # type: ignore[arg-type]
        for e in ev
        if e.get("cat") == "kernel" and e["args"].get("External id") in ops  # type: ignore[union-attr]
    )
    ledger = tmp_path / "shapes.jsonl"
    assert (
        run_kscope("shapes", str(TRACE), "--model", "tfm", "--stage", "eager", "--append", str(ledger)).returncode == 0
    )
    runs = [json.loads(line) for line in ledger.read_text().splitlines()]
    doc = json.loads(run_kscope("shapes", str(TRACE), "--model", "tfm", "--stage", "eager", "--json").stdout)
    assert doc["schema"] == "kernelscope.shapes.v1" and doc["runs"] == runs
    assert sum(r["time_us"] for r in runs) == pytest.approx(truth, rel=1e-6)
    assert {(r["model"], r["stage"]) for r in runs} == {("tfm", "eager")}
    gemm = next(r for r in runs if r["op"] == "aten::addmm" and r["shape"]["in2"] == [1024, 4096])
    assert gemm["dtype"] == "bf16" and gemm["shape"]["in1"] == [8192, 1024]
    # a baseline column: speedup = baseline / time, filled in by the reader
    ledger.write_text(json.dumps({**gemm, "baseline_us": gemm["time_us"] * 1.5}) + "\n")
    out = tmp_path / "r"
    assert run_kscope("report", "--shapes", str(ledger), "-o", str(out)).returncode == 0
    (cell,) = json.loads((out / "report.json").read_text())["coverage"]["matrix"][gemm["kernel"]].values()
    assert cell["best_speedup"] == pytest.approx(1.5)


@pytest.mark.parametrize(
    "content",
    ["{not json}\n", '{"model": "x"}\n', '{"kernel": "k", "time_us": "fast"}\n'],
    ids=["json", "kernel", "type"],
)
def test_bad_ledger_is_one_error_line(content: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kernel": "ok"}\n' + content)
    proc = run_kscope("report", "--shapes", str(bad), "-o", str(tmp_path / "r"))
    assert_one_error_line(proc)
    assert "bad.jsonl:2" in proc.stderr


def test_nothing_to_report_is_one_error_line(tmp_path: Path) -> None:
    assert_one_error_line(run_kscope("report", "-o", str(tmp_path / "r")))


def test_a_gpu_the_database_lacks_leaves_the_report_whole_without_a_roofline(tmp_path: Path) -> None:
    """A real trace from a GPU the hardware database has no entry for (a GH200 in the field): report and
    suggest still give everything else, say why there is no roofline, and exit 0; the same name given
    as ``--gpu`` is the user's typo or wish and is one error line."""
    with gzip.open(TRACE) as f:
        doc = json.load(f)
    for p in doc["deviceProperties"]:
        p["name"] = "Imaginary GPU 9000"
    trace = tmp_path / "unknown_gpu.json"
    trace.write_text(json.dumps(doc))
    proc = run_kscope("report", trace, "-o", tmp_path / "r")
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["roofline"] is None and report["gap"]["kernels"]
    (note,) = [n for n in report["notes"] if "no roofline" in n]
    assert "Imaginary GPU 9000" in note
    assert note in (tmp_path / "r" / "REPORT.md").read_text() and "Imaginary GPU 9000" in proc.stderr
    assert not (tmp_path / "r" / "roofline.png").exists()
    suggest = run_kscope("suggest", trace, "--json")
    assert suggest.returncode == 0, suggest.stderr
    assert any("Imaginary GPU 9000" in n for n in json.loads(suggest.stdout)["notes"])
    assert_one_error_line(run_kscope("report", trace, "--gpu", "Imaginary GPU 9000", "-o", tmp_path / "r2"))


def test_a_trace_profiled_without_shapes_says_so_instead_of_an_empty_roofline(tmp_path: Path) -> None:
    """The same trace with its ops' recorded inputs removed (torch.profiler without record_shapes, as vLLM's
    traces usually are): roofline and shapes refuse in one line naming the fix, the report and suggest say
    so in a note instead of showing an empty roofline table."""
    with gzip.open(TRACE) as f:
        doc = json.load(f)
    for e in doc["traceEvents"]:
        for key in ("Input Dims", "Input type", "Input Strides", "Concrete Inputs"):
            e.get("args", {}).pop(key, None)
    trace = tmp_path / "no_shapes.json"
    trace.write_text(json.dumps(doc))
    for cmd in (["roofline", trace, "--gpu", "H100 SXM"], ["shapes", trace]):
        proc = run_kscope(*cmd)
        assert_one_error_line(proc)
        assert "record_shapes=True" in proc.stderr
    proc = run_kscope("report", trace, "-o", tmp_path / "r")
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["roofline"] is None and report["coverage"] is None and report["gap"]["kernels"]
    assert any("record_shapes=True" in n for n in report["notes"])


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (installed by .ci/run)")
def test_dashboard_renders_offline_in_chromium(folder: Path, tmp_path: Path) -> None:
    """The page is loaded from disk with the network off; the screenshot must show the plots' ink."""
    from matplotlib.image import imread

    shot = tmp_path / "shot.png"
    args = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    args += ["--proxy-server=127.0.0.1:9", "--window-size=1000,1400"]  # any fetch would fail
    subprocess.run([*args, f"--screenshot={shot}", (folder / "index.html").as_uri()], check=True, capture_output=True)
    dom = subprocess.run(
        [*args, "--dump-dom", (folder / "index.html").as_uri()], check=True, capture_output=True
    ).stdout
    assert dom.count(b'class="plot"') >= 2 and b'data-plot="gap"' in dom and b'data-plot="roofline"' in dom
    rgb = (imread(shot)[:, :, :3] * 255).round()

    def ink(hex_colour: str) -> int:
        want = tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
        return int(((abs(rgb - want).sum(axis=2)) < 12).sum())

    assert ink("#1f77b4") > 2000  # the first gap bar (and roofline points): a solid block of blue
    assert ink("#ff7f0e") > 300  # the second bar
    assert ink("#555555") > 300  # the datasheet roofs


ATT = Path(__file__).parent / "data" / "att" / "rmsnorm" / "big" / "ui_output_agent_19276_dispatch_18"


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (installed by .ci/run)")
def test_att_and_ncu_sections_render(tmp_path: Path) -> None:
    """ATT stall bars and the wave-state timeline, ncu stall reasons: drawn, and their numbers the analyses'."""
    out = tmp_path / "r"
    ncu = Path(__file__).parent / "data" / "ncu" / "h100_softmax_slow.ncu-rep"
    proc = run_kscope("report", "--att", str(ATT), "--ncu", str(ncu), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "report.json").read_text())
    (capture,) = doc["att"]
    code = json.loads((ATT / "code.json").read_text())["code"]
    assert capture["stall_cycles"] == sum(row[-2] for row in code)  # code.json's own stall column
    topics = {f["topic"] for f in doc["headline"]}
    assert {"stalls", "hotspot", "occupancy"} <= topics
    args = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--proxy-server=127.0.0.1:9"]
    dom = subprocess.run([*args, "--dump-dom", (out / "index.html").as_uri()], check=True, capture_output=True).stdout
    assert dom.count(b'data-plot="stalls"') == 2 and b'data-plot="wave-states"' in dom
