"""``kscope gap`` end to end, in a subprocess with a fixed environment, and its parity with the library."""

from __future__ import annotations

import csv
import importlib
import inspect
import io
import json
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
import typer
from conftest import KERNEL_CAT, assert_one_error_line, events

from kernelscope import api
from kernelscope.data import demo_file

Kscope = Callable[..., CompletedProcess[str]]
EAGER = "h100_transformer_eager.json.gz"
COMPILE = "h100_transformer_compile.json.gz"
RMSNORM = ("mi350x", "rmsnorm", "discover_kernel_trace.csv")

TOTAL_KEYS = {"kernel_time_us", "busy_time_us", "wall_time_us", "idle_time_us", "launches", "kernels"}
ROW_KEYS = {"name", "calls", "total_us", "avg_us", "median_us", "min_us", "max_us", "std_us", "pct", "kind", "category"}


def _json(proc: CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


@pytest.mark.parametrize("parts", [(EAGER,), RMSNORM], ids=["kineto", "rocprof"])
def test_json_schema_and_keys(kscope: Kscope, parts: tuple[str, ...]) -> None:
    doc = _json(kscope("gap", demo_file(*parts), "--json"))
    assert doc["schema"] == "kernelscope.gap.v1"
    assert set(doc["totals"]) >= TOTAL_KEYS
    assert doc["kernels"]
    for row in doc["kernels"]:
        assert set(row) >= ROW_KEYS, set(row) ^ ROW_KEYS
    assert sum(r["pct"] for r in doc["kernels"]) == pytest.approx(100.0, abs=1e-6)
    assert doc["totals"]["kernels"] == len(doc["kernels"])
    assert doc["totals"]["launches"] == sum(r["calls"] for r in doc["kernels"])


def test_json_counts_match_the_raw_trace(kscope: Kscope) -> None:
    doc = _json(kscope("gap", demo_file(EAGER), "--json"))
    kernels = events(EAGER, KERNEL_CAT)
    assert doc["totals"]["launches"] == len(kernels)
    assert doc["totals"]["kernels"] == len({e["name"] for e in kernels})


def test_csv_header_and_rows(kscope: Kscope) -> None:
    proc = kscope("gap", demo_file(EAGER), "--csv")
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("Name,Calls,Self CUDA total (us),Avg time (us),% Total")
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    doc = _json(kscope("gap", demo_file(EAGER), "--json"))
    assert len(rows) == len(doc["kernels"])
    assert sum(int(r["Calls"]) for r in rows) == doc["totals"]["launches"]
    assert sum(float(r["Self CUDA total (us)"]) for r in rows) == pytest.approx(doc["totals"]["kernel_time_us"])


def test_markdown_has_a_table(kscope: Kscope) -> None:
    proc = kscope("gap", demo_file(EAGER), "--markdown")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| Name | Calls |"))
    assert lines[header + 1].startswith("|---")
    body = [line for line in lines[header + 2 :] if line.startswith("| ")]
    assert len(body) == len({e["name"] for e in events(EAGER, KERNEL_CAT)})


def test_parquet_round_trips(kscope: Kscope, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "x.parquet"
    proc = kscope("gap", demo_file(EAGER), "--parquet", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    table = pq.read_table(out)
    doc = _json(kscope("gap", demo_file(EAGER), "--json"))
    assert table.num_rows == len(doc["kernels"])
    assert table.column("Calls").to_pylist() == [r["calls"] for r in doc["kernels"]]


def test_output_extension_picks_the_format(kscope: Kscope, tmp_path: Path) -> None:
    out = tmp_path / "gap.json"
    proc = kscope("gap", demo_file(EAGER), "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["schema"] == "kernelscope.gap.v1"


def test_terminal_table(kscope: Kscope) -> None:
    proc = kscope("gap", demo_file(EAGER))
    assert proc.returncode == 0, proc.stderr
    assert "kernel time" in proc.stdout
    assert "\x1b[" not in proc.stdout  # NO_COLOR and a pipe: no escape codes
    assert max(len(line) for line in proc.stdout.splitlines()) <= 200


def test_several_files_are_ranks(kscope: Kscope) -> None:
    doc = _json(kscope("gap", demo_file(EAGER), demo_file(COMPILE), "--per-rank", "--json"))
    assert doc["totals"]["ranks"] == 2
    assert {r["rank"] for r in doc["kernels"]} == {0, 1}
    for rank, name in enumerate((EAGER, COMPILE)):
        rows = [r for r in doc["kernels"] if r["rank"] == rank]
        assert sum(r["calls"] for r in rows) == len(events(name, KERNEL_CAT))
    merged = _json(kscope("gap", demo_file(EAGER), demo_file(COMPILE), "--json"))
    assert all(r.get("rank") is None for r in merged["kernels"])
    assert merged["totals"]["launches"] == doc["totals"]["launches"]


def test_group_by_function(kscope: Kscope) -> None:
    by_name = _json(kscope("gap", demo_file(EAGER), "--json"))
    by_function = _json(kscope("gap", demo_file(EAGER), "--json", "--group-by", "function"))
    assert len(by_function["kernels"]) < len(by_name["kernels"])
    assert by_function["totals"]["kernel_time_us"] == pytest.approx(by_name["totals"]["kernel_time_us"])
    assert by_function["totals"]["launches"] == by_name["totals"]["launches"]


@pytest.mark.parametrize(
    "args",
    [
        ("gap", "{tmp}/missing.json"),
        ("gap", "{tmp}"),
        ("gap", "{eager}", "--format", "no-such-format"),
        ("gap", "{eager}", "--window", "abc"),
        ("gap", "{steps}", "--window", "0"),
        ("gap", "{eager}", "--window", "2"),
        ("gap", "{eager}", "--json", "--csv"),
        ("gap", "{eager}", "--phase-by", "(unclosed"),
        ("gap", "{eager}", "--parquet"),
        ("gap", "{eager}", "-o", "{tmp}/out.unknownext"),
    ],
    ids=[
        "missing",
        "directory",
        "format",
        "window-abc",
        "window-0",
        "window-no-steps",
        "two-outputs",
        "bad-regex",
        "binary-to-stdout",
        "unknown-ext",
    ],
)
def test_usage_errors_are_one_line(kscope: Kscope, tmp_path: Path, args: tuple[str, ...]) -> None:
    subs = {"tmp": str(tmp_path), "eager": str(demo_file(EAGER)), "steps": str(demo_file("h100_train_steps.json.gz"))}
    proc = kscope(*(a.format(**subs) for a in args))
    assert_one_error_line(proc)


# --- parity: the CLI is a thin adapter over kernelscope.api.gap_report ----------------------------


def _click_params() -> dict[str, Any]:
    """The options of ``kscope gap`` as click built them from the typer declarations."""
    from kernelscope.cli import app

    group = typer.main.get_command(app)
    command = group.commands["gap"]  # type: ignore[attr-defined]
    return {p.name: p for p in command.params}


def test_every_library_parameter_has_a_cli_option_with_the_same_default() -> None:
    lib = inspect.signature(api.gap_report)
    # the module, not the function that kernelscope.cli re-exports under the same name
    cli = inspect.signature(importlib.import_module("kernelscope.cli.gap").gap, eval_str=True)
    click_params = _click_params()
    flag_for = {"fmt": "--format"}
    checked = 0
    for name, param in lib.parameters.items():
        if name in ("paths", "progress"):
            continue
        assert name in cli.parameters, f"kscope gap has no option for gap_report({name}=...)"
        assert cli.parameters[name].default == param.default, name
        option = click_params[name]
        assert click_params[name].default == param.default, name
        flag = flag_for.get(name, "--" + name.replace("_", "-"))
        assert flag in option.opts, (name, option.opts)
        checked += 1
    assert checked >= 6
    assert "paths" not in cli.parameters and "traces" in click_params  # the files are the argument


@pytest.mark.parametrize("group", [(), ("tune",), ("memory",), ("task",), ("skills",)])
def test_help_lists_each_command_by_its_summary_on_one_line(kscope: Kscope, group: tuple[str, ...]) -> None:
    """Rich help lists a command by ``short_help``, else by its help's first paragraph with the docstring's line
    breaks kept (a wrapped sentence then printed broken mid-line): every command has a one-line summary."""
    from kernelscope.cli import app

    root = typer.main.get_group(app)
    command = root.get_command(None, group[0]) if group else root  # type: ignore[arg-type]
    text = kscope(*group, "--help").stdout
    for name, sub in command.commands.items():  # type: ignore[union-attr]
        summary = sub.short_help or (sub.help or "").split("\n\n", 1)[0]
        assert "\n" not in summary and summary == " ".join((sub.help or "").split("\n\n", 1)[0].split()), name
        assert summary.split()[0] in text
