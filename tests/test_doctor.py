"""``kscope doctor``: tools found where they are, hidden ones reported missing with what they disable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope import doctor as doctor_mod
from kernelscope.codeobj import tools as codeobj_tools
from kernelscope.model.doctor import DOCTOR_SCHEMA, DoctorResult

NVIDIA_SMI_CSV = """name, driver_version, uuid, compute_cap
NVIDIA H100 80GB HBM3, 580.159.04, GPU-b136fcdf-e978-7cb9-ba87-c43b7fed556d, 9.0
NVIDIA H100 80GB HBM3, 580.159.04, GPU-0c2d6f1e-1111-2222-3333-444455556666, 9.0
"""
ROCM_SMI_CSV = """

============================ ROCm System Management Interface ============================
device,Card Series,Card Model,Card Vendor,Card SKU,Subsystem ID,Device Rev,Node ID,GUID,GFX Version
card0,AMD Instinct MI350X,0x75a0,Advanced Micro Devices Inc. [AMD/ATI],M3500100,0x75a0,0x00,2,123,gfx950

================================== End of ROCm SMI Log ===================================
"""


def _fake(bin_dir: Path, name: str, body: str) -> None:
    f = bin_dir / name
    f.write_text(f"#!/bin/sh\n{body}\n")
    f.chmod(0o755)


def _check(result: DoctorResult, name: str) -> doctor_mod.Check:
    return next(c for c in result.checks if c.name == name)


def test_present_tools_have_paths_and_versions() -> None:
    result = doctor_mod.probe()
    cxx = _check(result, "c++filt")
    if shutil.which("c++filt") is None:
        pytest.skip("c++filt not installed")
    assert cxx.status == "ok" and cxx.path == shutil.which("c++filt")
    banner = subprocess.run(["c++filt", "--version"], capture_output=True, text=True, check=True).stdout
    assert cxx.version == banner.splitlines()[0].strip()
    llvm = _check(result, "llvm-objdump")
    if llvm.status == "ok":  # the processors LLVM 19 knows: gfx942 yes (the compiler's own -mcpu list), gfx950 no
        assert llvm.detail is not None and "gfx942" in llvm.detail.split(";")[0]
        if len(codeobj_tools.llvm_objdumps()) == 1 and "19" in (llvm.version or ""):
            assert "not gfx950" in llvm.detail
    deps = {c.name for c in result.checks if c.kind == "package" and c.status == "ok"}
    assert {"msgspec", "numpy", "typer", "rich", "pyelftools"} <= deps
    assert all(c.fix is None for c in result.checks if c.status == "ok")


def test_hidden_tools_are_missing_and_say_what_they_disable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH: c++filt, git, ncu, nsys, rocprofv3 all hidden
    monkeypatch.setattr(codeobj_tools, "_LLVM_VERSIONS", ())
    codeobj_tools.llvm_tools.cache_clear()
    try:
        result = doctor_mod.probe()
    finally:
        codeobj_tools.llvm_tools.cache_clear()
    for name, needed_for, fix in [
        ("c++filt", "demangled kernel names", "binutils"),
        ("llvm-objdump", "AMD code objects", "llvm-19"),
        ("llvm-cxxfilt", "C++20 typed template parameters", "llvm-19"),
        ("ncu", "kscope profile --ncu", "Nsight Compute"),
        ("git", "kscope task/eval", "git"),
        ("nvidia-smi", "GPU work", "driver"),
    ]:
        c = _check(result, name)
        assert c.status == "missing" and c.path is None, name
        assert any(needed_for in e for e in c.enables), name
        assert c.fix is not None and fix in c.fix, name
    assert result.gpus == []
    assert any("demangled kernel names" in d for d in result.disabled)


def test_fake_vendor_tools_are_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(tmp_path, "nvidia-smi", f"/bin/cat <<'EOF'\n{NVIDIA_SMI_CSV}EOF")
    _fake(tmp_path, "rocm-smi", f"/bin/cat <<'EOF'\n{ROCM_SMI_CSV}EOF")
    _fake(tmp_path, "nsys", "echo 'NVIDIA Nsight Systems version 2025.5.1.121-255136380782v0'")
    _fake(tmp_path, "ncu", "exec /bin/sleep 30")  # a tool that hangs is reported, not waited for
    _fake(tmp_path, "rocprofv3", "echo 'rocprofv3: segfault' >&2; exit 139")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(doctor_mod, "PROBE_TIMEOUT_S", 1.0)
    result = doctor_mod.probe()
    assert [(g.name, g.arch, g.uuid) for g in result.gpus] == [
        ("NVIDIA H100 80GB HBM3", "sm_90", "GPU-b136fcdf-e978-7cb9-ba87-c43b7fed556d"),
        ("NVIDIA H100 80GB HBM3", "sm_90", "GPU-0c2d6f1e-1111-2222-3333-444455556666"),
        ("AMD Instinct MI350X", "gfx950", None),
    ]
    assert result.gpus[0].driver == "580.159.04"
    nsys = _check(result, "nsys")
    assert nsys.status == "ok" and nsys.version == "NVIDIA Nsight Systems version 2025.5.1.121-255136380782v0"
    ncu = _check(result, "ncu")
    assert ncu.status == "failed" and ncu.detail is not None and "ran past its 1 s timeout" in ncu.detail
    rocprof = _check(result, "rocprofv3")
    assert rocprof.status == "failed" and rocprof.detail == "rocprofv3: segfault"
    assert rocprof.fix is not None


def test_cli_json_and_table(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    p = subprocess.run([sys.executable, "-m", "kernelscope", "doctor", "--json"], capture_output=True, text=True,
                       env=env, check=False, timeout=120)  # fmt: skip
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["schema"] == DOCTOR_SCHEMA
    assert {"python", "platform", "kernelscope", "gpus", "checks"} <= set(doc)
    assert {c["name"] for c in doc["checks"]} >= {"llvm-objdump", "c++filt", "cuobjdump", "ncu", "ncu-report"}
    table = subprocess.run([sys.executable, "-m", "kernelscope", "doctor"], capture_output=True, text=True, env=env,
                           check=False, timeout=120)  # fmt: skip
    assert table.returncode == 0 and "Tools and packages" in table.stdout


def test_dependencies_from_a_source_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a checkout on PYTHONPATH (no installed metadata): the dependencies come from pyproject.toml."""
    import importlib.metadata as md
    import tomllib

    def not_installed(name: str) -> list[str]:
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(doctor_mod.md, "requires", not_installed)
    declared = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {c.name for c in doctor_mod._dependencies()}
    assert len(names) == len(declared) and {"msgspec", "numpy", "pyelftools"} <= names
