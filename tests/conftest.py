"""Shared fixtures: the bundled real profiler outputs and a deterministic CLI runner.

Ground truth in the tests is computed from the raw files with the standard library (``csv``,
``json``, ``gzip``), never from kscope's own earlier output.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kernelscope.data import demo_file

KINETO_TRACES = [
    "h100_transformer_eager.json.gz",
    "h100_transformer_compile.json.gz",
    "h100_train_steps.json.gz",
    "h100_prefill_decode.json.gz",
]
MI350X_CAPTURES = ["blockscale_preshuffle_gemm", "flash_attn_func", "pa_mqa_logits_fp4", "rmsnorm"]

TRAIN_STEPS = "h100_train_steps.json.gz"
PREFILL_DECODE = "h100_prefill_decode.json.gz"

# Kineto's categories of GPU activity (current spelling; the bundled traces are PyTorch 2.11).
KERNEL_CAT = "kernel"
MEMORY_CATS = ("gpu_memcpy", "gpu_memset")
API_CATS = ("cuda_runtime", "cuda_driver")


@cache
def chrome_trace(name: str) -> dict[str, Any]:
    """A bundled Kineto trace parsed with json+gzip (cached: the tests only read it)."""
    with gzip.open(demo_file(name), "rt", encoding="utf-8") as f:
        doc: dict[str, Any] = json.load(f)
    return doc


def events(name: str, *cats: str) -> list[dict[str, Any]]:
    """The trace's events whose ``cat`` is one of ``cats``."""
    return [e for e in chrome_trace(name)["traceEvents"] if e.get("cat") in cats]


def ns(us: float) -> int:
    """Kineto's microsecond floats (with ns fractions) as integer nanoseconds."""
    return round(us * 1000)


def api_calls(name: str) -> dict[int, dict[str, Any]]:
    """Correlation id -> the CUDA runtime/driver call that carries it."""
    return {e["args"]["correlation"]: e for e in events(name, *API_CATS) if "correlation" in e.get("args", {})}


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(params=KINETO_TRACES, ids=[n.split(".")[0] for n in KINETO_TRACES])
def kineto_name(request: pytest.FixtureRequest) -> str:
    """The file name of each bundled H100 Kineto trace (inside ``kernelscope/data/demo``)."""
    return str(request.param)


@pytest.fixture
def kineto_path(kineto_name: str) -> Path:
    return demo_file(kineto_name)


@pytest.fixture(params=MI350X_CAPTURES)
def mi350x_dir(request: pytest.FixtureRequest) -> Path:
    """One bundled MI350X rocprofv3 capture folder (kernel trace + rocprofv3's own stats)."""
    return demo_file("mi350x", str(request.param))


def _kscope_argv() -> list[str]:
    script = Path(sys.executable).with_name("kscope")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from kernelscope.cli import main; main()"]


def run_kscope(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the ``kscope`` CLI in a subprocess with a fixed environment (width, no colour, locale)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd) if cwd is not None else os.environ.get("HOME", "/tmp"),
        "COLUMNS": "200",
        "LINES": "50",
        "NO_COLOR": "1",
        "TERM": "dumb",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONHASHSEED": "0",
    }
    return subprocess.run(
        [*_kscope_argv(), *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


@pytest.fixture
def kscope(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``kscope(*args)`` runs the CLI in a subprocess, cwd and HOME in the test's tmp_path."""

    def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
        return run_kscope(*args, cwd=tmp_path)

    return run


def assert_one_error_line(proc: subprocess.CompletedProcess[str]) -> None:
    """The CLI's error contract: exit 2, one ``kscope: error:`` line on stderr, no stdout, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("kscope: error:"), proc.stderr


def stats_by_name(path: Path, fmt: str) -> dict[str, Any]:
    """The per-kernel statistics a printed or exported summary holds (sniffed as ``fmt``), by kernel name; such a
    profile has no timeline and no launches."""
    from kernelscope.readers import detect, read

    assert detect(path) == fmt
    prof = read(path)
    assert prof.timing == "none" and not prof.launches
    return {s.name: s for s in prof.stats}
