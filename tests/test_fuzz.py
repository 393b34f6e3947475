"""The issue-16 fuzz harness (``bench/fuzz.py``): the harness itself, and a CI-sized run over every target.

The CI run checks that no input ends in an exception outside ``KernelscopeError`` or hangs; the
benchmark-sized run (``python bench/fuzz.py --per-target 10000``) is the measurement recorded in
``bench/RESULTS.md``. ``KSCOPE_FUZZ_N`` sets the CI run's inputs per target.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from random import Random
from types import ModuleType
from typing import Any

import pytest
from conftest import assert_one_error_line, run_kscope

from kernelscope.errors import FormatError

BENCH = Path(__file__).resolve().parents[1] / "bench"
CI_PER_TARGET = int(os.environ.get("KSCOPE_FUZZ_N", "200"))


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kscope_bench_fuzz", BENCH / "fuzz.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


fuzz = _load()


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    result: dict[str, list[Path]] = fuzz.build_seeds(tmp_path_factory.mktemp("fuzz") / "seeds")
    return result


def _content(path: Path) -> dict[str, bytes | str]:
    """Every file under ``path`` (or ``path`` itself) by relative name: bytes, or what a special is."""
    items = sorted(path.rglob("*")) if path.is_dir() and not path.is_symlink() else [path]
    out: dict[str, bytes | str] = {}
    for p in items:
        name = str(p.relative_to(path)) if p != path else p.name
        if p.is_symlink():
            out[name] = f"-> {os.readlink(p)}"
        elif p.is_dir():
            out[name] = "dir"
        else:
            out[name] = p.read_bytes()
    return out


@pytest.mark.parametrize("target", [t.name for t in fuzz.TARGETS])
def test_same_seed_gives_the_same_inputs(target: str, seeds: dict[str, list[Path]], tmp_path: Path) -> None:
    t = fuzz.BY_NAME[target]
    made = []
    for run in ("a", "b", "c"):
        (tmp_path / run).mkdir()
        seed = 7 if run != "c" else 8
        made.append([fuzz.make_input(t, seeds, seed, i, tmp_path / run / str(i)) for i in range(6)])
    for (pa, da), (pb, db) in zip(made[0], made[1], strict=True):
        assert da == db
        assert _content(pa) == _content(pb)
    assert [_content(p) for p, _ in made[0]] != [_content(p) for p, _ in made[2]]  # another seed, other inputs


@pytest.mark.parametrize(("name", "mutate"), sorted(set(fuzz.MUTATORS + fuzz.SQL_MUTATORS)))
def test_every_mutator_changes_its_input(name: str, mutate: Any, seeds: dict[str, list[Path]]) -> None:
    kinds = ["kineto", "rocprof-trace", "codeobj-amd"] + (["rocpd", "nsys"] if name == "sql_value" else [])
    for kind in kinds:
        data = seeds[kind][0].read_bytes()
        for i in range(8):
            out = mutate(data, Random(f"test/{name}/{kind}/{i}"))
            assert isinstance(out, bytes)
            assert out != data, f"{name} left {kind} seed unchanged (rng {i})"
    assert mutate(data, Random(1)) == mutate(data, Random(1))


def test_numbers_and_types_are_the_hostile_ones() -> None:
    data = b'{"ts": 12, "dur": 3.5, "name": "k"}'
    numbers = {fuzz.hostile_number(data, Random(i)) for i in range(60)}
    assert b'{"ts": 1e400, "dur": 3.5, "name": "k"}' in numbers
    assert b'{"ts": 12, "dur": NaN, "name": "k"}' in numbers
    swaps = {fuzz.type_swap(data, Random(i)) for i in range(60)}
    assert b'{"ts": 12, "dur":null, "name": "k"}' in swaps
    assert any(b"\xff" in fuzz.invalid_utf8(data, Random(i)) for i in range(20))


def _crash(path: Path) -> None:
    int("not a number")  # the toy's known crash: a ValueError on this line


CRASH_LINE = inspect.getsourcelines(_crash)[1] + 1


def _sleep(path: Path) -> None:
    time.sleep(60)


def _refuse(path: Path) -> None:
    raise FormatError(path, "a toy", "something else")


def _negative(path: Path) -> Any:
    return {"kernels": [{"name": "k", "dur_us": 3.0, "count": -1}, {"name": "j", "dur_us": -2.0}]}


def _infinite(path: Path) -> Any:
    import numpy as np

    return {"total_ns": np.array([1.0, np.inf])}


def _fine(path: Path) -> Any:
    return {"kernels": [{"name": "k", "dur_us": 3.0, "start_ns": 0, "delta": -5}]}


def test_classes_of_toy_targets(seeds: dict[str, list[Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = fuzz.BY_NAME["kineto"]
    toys = {
        "toy-crash": _crash,
        "toy-sleep": _sleep,
        "toy-refuse": _refuse,
        "toy-negative": _negative,
        "toy-infinite": _infinite,
        "toy-fine": _fine,
    }
    for name, call in toys.items():
        monkeypatch.setitem(fuzz.BY_NAME, name, fuzz.Target(name, base.seeds, call, ()))
    (tmp_path / "scratch").mkdir()
    pool = fuzz.Pool(2, seeds, tmp_path / "scratch", timeout=1.5)
    try:
        results = pool.run([(name, 3, 0) for name in toys] + [("toy-fine", 3, 1)], lambda r: None)
    finally:
        pool.close()
    by = {r["target"]: r for r in results}
    assert len(results) == len(toys) + 1
    assert by["toy-crash"]["cls"] == "other"
    assert by["toy-crash"]["type"] == "ValueError"
    assert by["toy-crash"]["place"] == f"test_fuzz.py:{CRASH_LINE}"
    assert by["toy-sleep"]["cls"] == "hang"
    assert by["toy-refuse"]["cls"] == "clean"
    assert by["toy-negative"]["cls"] == "suspicious"
    assert "dur_us=-2.0" in by["toy-negative"]["where"]
    assert by["toy-infinite"]["cls"] == "suspicious"
    assert by["toy-fine"]["cls"] == "ok"
    assert [r["cls"] for r in results if r["target"] == "toy-fine"] == ["ok", "ok"]  # the pool went on after the hang


@pytest.fixture(scope="module")
def ci_run() -> dict[str, Any]:
    """The CI-sized run, in a fresh interpreter as `python bench/fuzz.py` runs: its workers are forked, and a
    pytest process that already loaded the ncu-report library (other tests read .ncu-rep files) hands its
    native state to the children, where one damaged report then never finished. 60 s per input: a hang is an
    input that never ends, not a slow one on a loaded 2-core machine."""
    argv = [sys.executable, str(Path(fuzz.__file__)), "--per-target", str(CI_PER_TARGET), "--seed", "16",
            "--workers", "2", "--timeout", "60", "--json"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=True)
    summary: dict[str, Any] = json.loads(done.stdout)["summary"]
    return summary


def test_suspicious_means_a_time_kscope_holds_not_the_inputs_own_header() -> None:
    """A negative time anywhere in a result is suspicious, except in a profile's ``metadata``: the input's
    header fields (Kineto's ``baseTimeNanoseconds``) are passed through as they were and never computed with."""
    from kernelscope.model import KernelLaunch, Profile

    launch = KernelLaunch(name="k", start_ns=5, duration_ns=1)
    assert fuzz.suspicious(Profile(launches=[launch], metadata={"baseTimeNanoseconds": -1})) is None
    bad = Profile(launches=[KernelLaunch(name="k", start_ns=-5, duration_ns=1)])
    assert fuzz.suspicious(bad) == ".launches[0].start_ns=-5"


def test_ci_run_covers_every_target(ci_run: dict[str, Any]) -> None:
    for name, row in ci_run["table"].items():
        assert row["inputs"] == CI_PER_TARGET, name
        assert row["clean"] + row["ok"] + row["other"] + row["hang"] == row["inputs"], name
        assert row["clean"] > 0 or fuzz.BY_NAME[name].lenient, f"{name}: no mutated input was refused: is it exercised?"


def test_ci_run_has_no_escapes_and_no_hangs(ci_run: dict[str, Any]) -> None:
    places = [f"{p['type']} at {p['place']} ({p['count']}): {p['example']}" for p in ci_run["others"]]
    assert not places, "\n".join(places)
    assert not ci_run["hangs"], ci_run["hangs"]


def test_a_report_that_aborts_the_ncu_library_is_one_error_line(tmp_path: Path) -> None:
    """Input 569 of the ncu-rep target at seed 0: the ncu-report wheel's protobuf reader aborts the process
    on it (absl "Check failed: count >= 0", SIGABRT). kscope walks each report in a child process first."""
    pytest.importorskip("ncu_report")
    target = next(t for t in fuzz.TARGETS if t.name == "ncu-rep")
    path, how = fuzz.make_input(target, fuzz.build_seeds(tmp_path / "seeds"), 0, 569, tmp_path)
    for cmd in ("ncu", "gap"):
        done = run_kscope(cmd, path)
        assert done.returncode == 2, (how, done.returncode, done.stderr[-300:])
        assert_one_error_line(done)
        assert "abort (SIGABRT" in done.stderr
