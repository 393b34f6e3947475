"""Nsight Systems reports (``.nsys-rep``): exported with ``nsys export``, then read as the SQLite export.

Fixtures (tests/data/nsys/README.md): ``h200_transformer.nsys-rep``, a real report of a small PyTorch
transformer on a lent H200 (``bash bench/gpu/nsys_rep.sh``, nsys 2025.3.1), with what Nsight itself made of it
there: ``h200_transformer_export.sqlite.gz`` (``nsys export --type sqlite``) and
``h200_transformer_cuda_gpu_kern_sum.csv`` (``nsys stats --report cuda_gpu_kern_sum``), the ground truth.
CI has no nsys: a stand-in ``nsys`` on ``$NSYS`` does what ``nsys export`` did there (writes that export where
``--output`` says), so these tests check kscope's side of the exchange; the real run is in bench/RESULTS.md.
"""

from __future__ import annotations

import gzip
import shutil
import stat
from pathlib import Path

import pytest
from conftest import csv_rows

from kernelscope import api, readers
from kernelscope.errors import FormatError, MissingToolError

_DIR = Path(__file__).parent / "data" / "nsys"
REPORT = _DIR / "h200_transformer.nsys-rep"


def _fake_nsys(tmp_path: Path, body: str) -> Path:
    tool = tmp_path / "nsys"
    tool.write_text("#!/bin/sh\n" + body)
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return tool


def _exporting(tmp_path: Path) -> Path:
    """A stand-in nsys that answers ``export --type sqlite ... --output OUT REPORT`` with the real export."""
    export = tmp_path / "real_export.sqlite"
    export.write_bytes(gzip.decompress((_DIR / "h200_transformer_export.sqlite.gz").read_bytes()))
    return _fake_nsys(
        tmp_path,
        '[ "$1" = export ] || exit 3\nwhile [ $# -gt 1 ]; do [ "$1" = --output ] && out=$2; shift; done\n'
        f'[ -f "$1" ] || exit 4\ncp "{export}" "$out"\n',
    )


def _report(tmp_path: Path) -> Path:
    """A copy of the report under its own path (kscope exports a report once per process, by path)."""
    return Path(shutil.copy(REPORT, tmp_path / "report.nsys-rep"))


def test_sniffed_by_content(tmp_path: Path) -> None:
    renamed = Path(shutil.copy(REPORT, tmp_path / "profile.bin"))
    assert readers.detect(REPORT) == readers.detect(renamed) == "nsys-rep"


def test_a_report_reads_as_nsight_counts_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NSYS", str(_exporting(tmp_path)))
    report = _report(tmp_path)
    result = api.gap_report([report])
    want = {
        r["Name"]: (int(r["Instances"]), float(r["Total Time (ns)"]) / 1000)
        for r in csv_rows(_DIR / "h200_transformer_cuda_gpu_kern_sum.csv")
    }
    got = {k.name: (k.calls, k.total_us) for k in result.kernels}
    assert set(got) == set(want)
    for name, (calls, total_us) in want.items():
        assert got[name][0] == calls and got[name][1] == pytest.approx(total_us, abs=1e-3), name
    assert result.sources == [str(report)]
    assert {k.source for k in readers.read(report).launches} == {str(report)}


def test_without_nsys_one_line_says_how_to_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NSYS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no nsys on it
    monkeypatch.setattr("kernelscope.readers.nsys_rep._INSTALLS", ())
    with pytest.raises(MissingToolError, match=r"nsys export --type sqlite --output report\.sqlite .*report\.nsys-rep"):
        readers.read(_report(tmp_path))


def test_a_report_nsys_cannot_export_is_one_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A report from a newer Nsight Systems: its nsys exits 1 ("Exportation error") after writing part of a
    database (seen with 2025.3.1 on public 2025.6.1 reports); the part is never read."""
    tool = _fake_nsys(tmp_path, 'while [ $# -gt 1 ]; do [ "$1" = --output ] && out=$2; shift; done\n'
                      'echo partial > "$out"\necho "Exportation error: " >&2\nexit 1\n')  # fmt: skip
    monkeypatch.setenv("NSYS", str(tool))
    with pytest.raises(FormatError, match=r"nsys export refused \(Exportation error:\)"):
        readers.read(_report(tmp_path))
