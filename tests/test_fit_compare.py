"""kscope fit --compare on real Triton AOT builds of one kernel for several targets: every column equals
kscope fit on that file alone, and the compiler's own numbers (amdhsa note, CUDA driver, Triton metadata)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_kscope
from test_codeobj import CODEOBJ, DATA, _has_cuobjdump, _note_metadata

from kernelscope import api
from kernelscope.model.codeobj import FitColumn

TRITON = json.loads((CODEOBJ / "triton_metadata.json").read_text())
DRIVER = {
    k["cubin"]: k["attributes"]
    for k in json.loads((DATA / "occupancy" / "h100_cuda_occupancy.json").read_text())["kernels"]
}
NV = pytest.mark.skipif(not _has_cuobjdump(), reason="needs cuobjdump (nvidia-cuda-cuobjdump wheel)")
ADD = ["add_gfx942.hsaco", "add_gfx950.hsaco", "add_gfx1201.hsaco", "add_sm90.cubin"]
MM = ["mm_gfx942.hsaco", "mm_sm90.cubin"]


def _columns(names: list[str]) -> list[FitColumn]:
    report = api.fit_compare([CODEOBJ / n for n in names])
    (k,) = report.kernels
    assert [Path(i.path).name for i in report.inputs] == names
    assert all(c is not None for c in k.columns)
    return [c for c in k.columns if c is not None]


def _check_against_compiler(name: str, c: FitColumn) -> None:
    triton = TRITON[name]
    assert c.resources["dynamic_shared"] == triton["shared_bytes"]  # Triton launches its shared memory as dynamic
    assert c.occupancy is not None
    wave = 64 if c.fit.arch in ("gfx942", "gfx950") else 32
    assert c.occupancy.block_size == triton["num_warps"] * wave
    regs = {g.label: g.used for g in c.fit.gauges}
    if c.fit.vendor == "amd":
        (truth,) = _note_metadata(CODEOBJ / name)["amdhsa.kernels"]  # type: ignore[misc]
        assert regs["VGPR (unified)" if "VGPR (unified)" in regs else "VGPR"] == truth[".vgpr_count"]
        assert regs["SGPR"] == truth[".sgpr_count"]
        assert (c.resources["vgpr_spill"], c.resources["sgpr_spill"]) == (
            truth[".vgpr_spill_count"],
            truth[".sgpr_spill_count"],
        )
        assert (c.resources["static_shared"], c.resources["scratch_bytes"]) == (
            truth[".group_segment_fixed_size"],
            truth[".private_segment_fixed_size"],
        )
    else:
        attrs = DRIVER[name]
        assert regs["registers/thread"] == attrs["registers"] and c.resources["static_shared"] == attrs["static_shared"]
        assert c.resources.get("local_bytes", 0) + c.resources.get("stack_bytes", 0) == attrs["local"]


@pytest.mark.parametrize(
    "names", [pytest.param(ADD, marks=NV), pytest.param(MM, marks=NV), ADD[:3]], ids=["add", "mm", "add-amd"]
)
def test_columns_equal_fit_alone_and_the_compiler(names: list[str]) -> None:
    for name, c in zip(names, _columns(names), strict=True):
        (alone,) = api.fit([CODEOBJ / name]).kernels
        assert c.fit == alone  # the same analysis, not a second computation
        arch = str(TRITON[name]["arch"])
        assert c.fit.arch == arch or c.fit.arch.startswith(f"sm_{arch}")  # Triton builds sm_90a for "90"
        _check_against_compiler(name, c)


@pytest.mark.parametrize("name", [*sorted(p.name for p in CODEOBJ.glob("*.hsaco"))])
def test_sgpr_gauge_holds_what_the_compiler_counted(name: str) -> None:
    """``.sgpr_count`` counts VCC (and on GFX9 flat scratch and XNACK) besides the addressable SGPRs: the gauge's
    ceiling is the count's own (LLVM's getMaxNumSGPRs, not addressable), so no real code object reads as over it."""
    for fit in api.fit([CODEOBJ / name]).kernels:
        (truth,) = [k for k in _note_metadata(CODEOBJ / name)["amdhsa.kernels"] if k[".name"] == fit.name]  # type: ignore[union-attr]
        (sgpr,) = [g for g in fit.gauges if g.label == "SGPR"]
        assert sgpr.used == truth[".sgpr_count"] and sgpr.limit is not None
        assert sgpr.used <= sgpr.limit == (108 if fit.arch.startswith("gfx1") else 112)


def test_a_kernel_in_only_some_inputs() -> None:
    report = api.fit_compare([CODEOBJ / "add_gfx942.hsaco", CODEOBJ / "mm_gfx942.hsaco"])
    by = {k.name: [c is not None for c in k.columns] for k in report.kernels}
    assert by == {"add": [True, False], "mm": [False, True]}
    proc = run_kscope("fit", "--compare", CODEOBJ / "add_gfx942.hsaco", CODEOBJ / "mm_gfx942.hsaco")
    assert proc.returncode == 0, proc.stderr
    assert "note: add: not in mm_gfx942.hsaco" in proc.stdout and "note: mm: not in add_gfx942.hsaco" in proc.stdout


def test_one_fat_binary_compares_its_architectures() -> None:
    report = api.fit_compare([CODEOBJ / "hip" / "k.bundle"])
    assert [i.arch for i in report.inputs] == ["gfx90a", "gfx942"]
    assert all(
        c is not None and c.fit.arch == i.arch
        for k in report.kernels
        for c, i in zip(k.columns, report.inputs, strict=True)
    )


def test_terminal_table_says_which_column_lacks_a_mix() -> None:
    proc = run_kscope("fit", "--compare", *(CODEOBJ / n for n in ADD[:3]))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for name in ADD[:3]:
        assert name in out
    for row in ("registers", "spills", "LDS / shared", "scratch / local", "occupancy", "limiter", "matrix share"):
        assert row in out
    assert "left on the table" in out and "mix: " in out
    (gfx950,) = api.isa([CODEOBJ / "add_gfx950.hsaco"])
    if gfx950.disassembler is None:  # LLVM < 20: the column says so, the others keep their mix
        flat = " ".join(out.split())  # the note wraps at the terminal width
        assert "no mix" in out and any(f"add_gfx950.hsaco: {' '.join(n.split())}" in flat for n in gfx950.notes)


def test_mix_rows_share_one_class_order() -> None:
    from kernelscope.presenters.fit import mix_classes

    report = api.fit_compare([CODEOBJ / n for n in ("add_gfx942.hsaco", "add_gfx1201.hsaco")])
    (k,) = report.kernels
    order = mix_classes(k)
    assert order and len(order) == len(set(order))
    best = [max(c.fit.mix.get(cls, 0.0) for c in k.columns if c) for cls in order]
    assert best == sorted(best, reverse=True)


def test_json_schema() -> None:
    proc = run_kscope("fit", "--compare", "--json", CODEOBJ / "add_gfx942.hsaco", CODEOBJ / "mm_gfx942.hsaco")
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "kernelscope.fit-compare.v1"
    assert [(i["arch"], i["vendor"]) for i in doc["inputs"]] == [("gfx942", "amd"), ("gfx942", "amd")]
    add = next(k for k in doc["kernels"] if k["name"] == "add")
    assert add["columns"][1] is None
    col = add["columns"][0]
    assert set(col) == {"fit", "occupancy", "resources"}
    assert set(col["fit"]) == {"name", "arch", "vendor", "gauges", "mix", "matrix_share", "limiter", "readout"}


@pytest.mark.parametrize(
    "args",
    [("{add}",), ("{add}", "{add}", "--arch", "gfx1201"), ("{add}", "{tmp}/none.hsaco"), ("{add}", "{junk}")],
    ids=["one-object", "arch-filters-out", "missing", "not-a-code-object"],
)
def test_bad_input_is_one_line(tmp_path: Path, args: tuple[str, ...]) -> None:
    junk = tmp_path / "junk.hsaco"
    junk.write_bytes(b"\x7fELF" + b"\0" * 60)
    subs = {"tmp": tmp_path, "junk": junk, "add": CODEOBJ / "add_gfx942.hsaco"}
    assert_one_error_line(run_kscope("fit", "--compare", *(a.format(**subs) for a in args)))
