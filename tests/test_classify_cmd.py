"""``kscope classify`` and the identity columns of ``kscope gap``, end to end."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from conftest import KERNEL_CAT, assert_one_error_line, events

from kernelscope.data import demo_file

Kscope = Callable[..., CompletedProcess[str]]
EAGER = "h100_transformer_eager.json.gz"
KEYS = {"kind", "category", "dtype", "tile", "mma", "layout", "function", "vendor", "demangled", "name"}
CORPUS = Path(__file__).parent / "data" / "names" / "corpus.jsonl"


def test_json_is_a_list_of_objects_with_the_identity_keys(kscope: Kscope) -> None:
    proc = kscope("classify", "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN", "triton_poi_fused_silu_29", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert isinstance(doc, list) and len(doc) == 2
    assert all(set(d) >= KEYS and d["schema"] == "kernelscope.classify.v1" for d in doc)
    assert [(d["kind"], d["category"]) for d in doc] == [("cublas", "gemm"), ("inductor", "elementwise")]


def test_file_of_json_lines_and_csv(kscope: Kscope) -> None:
    proc = kscope("classify", "--file", CORPUS, "--csv")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    labeled = [json.loads(line) for line in CORPUS.read_text().splitlines()]
    assert [r["Name"] for r in rows] == [x["name"] for x in labeled]
    assert sum(r["Kind"] == x["kind"] for r, x in zip(rows, labeled, strict=True)) / len(rows) >= 0.95


def test_a_profile_given_as_the_file_classifies_its_kernels(kscope: Kscope) -> None:
    """``--file TRACE`` (any format gap reads) names the trace's kernels, each once; it read the trace's
    JSON lines as kernel names before."""
    proc = kscope("classify", "--file", demo_file(EAGER), "--json")
    assert proc.returncode == 0, proc.stderr
    names = [d["name"] for d in json.loads(proc.stdout)]
    assert sorted(names) == sorted({str(e["name"]) for e in events(EAGER, KERNEL_CAT)})


def test_table_keeps_bracketed_names(kscope: Kscope) -> None:
    proc = kscope("classify", "void vllm::rms_norm_kernel<c10::BFloat16>(int) [clone .kd]")
    assert proc.returncode == 0 and "[clone .kd]" in proc.stdout and "rms_norm_kernel" in proc.stdout


@pytest.mark.parametrize(
    "args",
    [("classify",), ("classify", "--file", "{tmp}/none.txt"), ("classify", "--file", "{bad}")],
    ids=["no-names", "missing-file", "bad-json-line"],
)
def test_errors_are_one_line(kscope: Kscope, tmp_path: Path, args: tuple[str, ...]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"name": "x"}\n{"name": \n')
    proc = kscope(*(a.format(tmp=tmp_path, bad=bad) for a in args))
    assert_one_error_line(proc)


def test_gap_rows_carry_identity(kscope: Kscope) -> None:
    proc = kscope("gap", demo_file(EAGER), "--json")
    doc = json.loads(proc.stdout)
    rows = {r["name"]: r for r in doc["kernels"]}
    nvjet = next(r for n, r in rows.items() if n.startswith("nvjet_"))
    assert (nvjet["kind"], nvjet["category"], nvjet["function"]) == ("cublas", "gemm", nvjet["name"].split("_2")[0])
    assert all(r["kind"] and r["category"] for r in doc["kernels"])
    magpie = list(csv.reader(io.StringIO(kscope("gap", demo_file(EAGER), "--csv").stdout)))
    assert magpie[0][:5] == ["Name", "Calls", "Self CUDA total (us)", "Avg time (us)", "% Total"]
    assert {"Kind", "Category", "Function"} <= set(magpie[0])


@pytest.mark.parametrize("by", ["category", "kind", "function"])
def test_gap_group_by_identity_keeps_totals(kscope: Kscope, by: str) -> None:
    doc = json.loads(kscope("gap", demo_file(EAGER), "--json", "--group-by", by).stdout)
    kernels = events(EAGER, KERNEL_CAT)
    assert doc["totals"]["launches"] == len(kernels) == sum(r["calls"] for r in doc["kernels"])
    labels = [r["name"] for r in doc["kernels"]]
    assert len(labels) == len(set(labels))
    if by != "function":
        assert all(r[by] == r["name"] for r in doc["kernels"])
    if by == "category":
        gemm = next(r for r in doc["kernels"] if r["name"] == "gemm")
        truth = sum(e["dur"] for e in kernels if e["name"].startswith("nvjet_"))
        assert gemm["total_us"] == pytest.approx(truth, abs=1e-3)
