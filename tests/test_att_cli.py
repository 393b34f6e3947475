"""``kscope att`` end to end in a subprocess: JSON schema and values, Markdown, terminal view, errors,
and the options' parity with ``kernelscope.api.att``. Truth: code.json's columns read with ``json``."""

from __future__ import annotations

import importlib
import inspect
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
import typer
from conftest import assert_one_error_line

from kernelscope import api

Kscope = Callable[..., CompletedProcess[str]]
ATT = Path(__file__).parent / "data" / "att"
SMALL = ATT / "pa_mqa_logits_fp4" / "small" / "ui_output_agent_32435_dispatch_197"
ROPE = ATT / "fused_rope_cache" / "big" / "ui_output_agent_4253_dispatch_8781"
KEYS = {
    "schema", "instructions", "waves", "latency_cycles", "stall_cycles", "idle_cycles", "hits", "stall_pct",
    "stall_breakdown", "state_pct", "hotspots", "measured_waves_per_simd", "vgpr_alloc", "crosscheck",
}  # fmt: skip


def _doc(proc: CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_json_schema_and_totals(kscope: Kscope) -> None:
    doc = _doc(kscope("att", SMALL, "--json", "--top", "4"))
    assert set(doc) >= KEYS and doc["schema"] == "kernelscope.att.v1"
    rows = [r for r in json.loads((SMALL / "code.json").read_text())["code"] if not r[0].startswith(";")]
    assert doc["instructions"] == len(rows)
    assert [doc[k] for k in ("hits", "latency_cycles", "stall_cycles", "idle_cycles")] == [
        sum(r[i] for r in rows) for i in range(6, 10)
    ]
    assert set(doc["state_pct"]) >= {"idle", "exec", "wait", "stall"}
    hot = doc["hotspots"]
    assert len(hot) == 4 and [h["stall_cycles"] for h in hot] == sorted((r[8] for r in rows), reverse=True)[:4]
    by_addr = {r[5]: r for r in rows}
    for h in hot:
        assert set(h) >= {"address", "instruction", "stall_cycles", "latency_cycles", "hits", "source"}
        assert by_addr[h["address"]][0] == h["instruction"] and by_addr[h["address"]][8] == h["stall_cycles"]


def test_several_folders_are_a_list_of_captures(kscope: Kscope) -> None:
    doc = _doc(kscope("att", SMALL, ROPE, "--json", "--top", "1"))
    assert doc["schema"] == "kernelscope.att.v1"
    assert [Path(c["path"]).name for c in doc["captures"]] == [SMALL.name, ROPE.name]
    assert all(c["crosscheck"]["ok"] for c in doc["captures"])


def test_code_only_in_every_view(kscope: Kscope) -> None:
    doc = _doc(kscope("att", SMALL, "--code-only", "--json", "--top", "4"))
    rows = [r for r in json.loads((SMALL / "code.json").read_text())["code"] if not r[0].startswith(";")]
    assert set(doc) >= KEYS and doc["stall_cycles"] == sum(r[8] for r in rows)
    assert [doc[k] for k in ("waves", "state_pct", "crosscheck", "measured_waves_per_simd")] == [None] * 4
    md = kscope("att", SMALL, "--code-only", "--markdown")
    term = kscope("att", SMALL, "--code-only")
    for proc in (md, term):
        assert proc.returncode == 0, proc.stderr
        assert "not read (--code-only)" in proc.stdout and f"{sum(r[8] for r in rows):,}" in proc.stdout


def test_markdown_and_terminal_views(kscope: Kscope, tmp_path: Path) -> None:
    proc = kscope("att", ROPE, "--markdown", "--top", "2")
    assert proc.returncode == 0, proc.stderr
    md = proc.stdout
    rows = json.loads((ROPE / "code.json").read_text())["code"]
    top = max(rows, key=lambda r: r[8])
    assert "| Class | Stall cycles |" in md and f"0x{top[5]:x}" in md and "```" in md
    proc = kscope("att", ROPE, "-o", tmp_path / "r.md")
    assert proc.returncode == 0 and (tmp_path / "r.md").read_text().startswith("# ATT capture")
    proc = kscope("att", ROPE)
    assert proc.returncode == 0, proc.stderr
    for text in ("lds_smem_wait", "EXEC", top[0], "result: identical", "measured, all kernels: 1"):
        assert text in proc.stdout


def _truncated_wave(d: Path) -> Path:
    shutil.copytree(ROPE, d / "c")
    wave = sorted((d / "c").glob("se*.json"))[0]
    wave.write_bytes(wave.read_bytes()[:500])
    return d / "c"


def _layout(d: Path) -> Path:
    (d / "code.json").write_text('{"code": {"not": "rows"}}')
    return d


def _truncated_code(d: Path) -> Path:
    (d / "code.json").write_text((ROPE / "code.json").read_text()[:2000])
    return d


@pytest.mark.parametrize(
    "make",
    [lambda d: d / "nope", lambda d: d, _layout, _truncated_code, _truncated_wave],
    ids=["missing-dir", "no-code-json", "wrong-layout", "truncated-code-json", "truncated-wave-file"],
)
def test_bad_input_is_one_error_line(kscope: Kscope, tmp_path: Path, make: Callable[[Path], Path]) -> None:
    assert_one_error_line(kscope("att", make(tmp_path), "--json"))


def test_every_library_parameter_has_a_cli_option_with_the_same_default() -> None:
    from kernelscope.cli import app

    lib = inspect.signature(api.att)
    cli = inspect.signature(importlib.import_module("kernelscope.cli.att").att, eval_str=True)
    params = {p.name: p for p in typer.main.get_command(app).commands["att"].params}  # type: ignore[attr-defined]
    checked = [n for n in lib.parameters if n not in ("paths", "progress")]
    for name in checked:
        assert cli.parameters[name].default == lib.parameters[name].default, name
        assert params[name].default == lib.parameters[name].default, name
        assert "--" + name.replace("_", "-") in params[name].opts
    assert len(checked) == 6 and "dirs" in params
