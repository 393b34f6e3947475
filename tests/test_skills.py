"""Agent skills: every command a SKILL.md names exists with the options it uses and ``--json``, and
``kscope skills install`` copies them faithfully."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
import typer
from conftest import assert_one_error_line

from kernelscope import skills
from kernelscope.cli import app

Kscope = Callable[..., CompletedProcess[str]]
ROOT = Path(__file__).resolve().parent.parent
SKILL_FILES = sorted(skills.bundled_root().glob("*/SKILL.md"))
FENCE = re.compile(r"^```(?:bash|sh)\n(.*?)^```", re.M | re.S)


def _invocations(text: str) -> Iterator[list[str]]:
    """The argv of every ``kscope ...`` line in the file's shell blocks (continuations joined)."""
    for block in FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            argv = shlex.split(line, comments=True)
            if argv[:1] == ["kscope"]:
                yield argv[1:]


def _resolve(argv: list[str]) -> tuple[Any, list[str], list[str]]:
    """Walk the CLI's command tree along argv: (command, path taken, the remaining arguments)."""
    cmd: Any = typer.main.get_command(app)
    path: list[str] = []
    rest = list(argv)
    while hasattr(cmd, "commands"):
        assert rest, f"kscope {' '.join(path)} needs a subcommand"
        name = rest.pop(0)
        if name not in cmd.commands and "run" in cmd.commands and getattr(cmd, "runs_by_default", False):
            rest.insert(0, name)  # kscope tune TARGET ... is kscope tune run TARGET ...
            name = "run"
        assert name in cmd.commands, f"kscope {' '.join([*path, name])}: no such command"
        cmd, path = cmd.commands[name], [*path, name]
    return cmd, path, rest


def test_bundled_skills_cover_the_loop() -> None:
    names = {s.name for s in skills.bundled()}
    assert len(names) >= 4
    assert all(s.description.strip() for s in skills.bundled())


def test_repository_skills_folder_is_the_bundled_one() -> None:
    top = ROOT / "skills"
    if not top.exists():
        pytest.skip("not a source checkout")
    assert top.resolve() == skills.bundled_root().resolve()


@pytest.mark.parametrize("path", SKILL_FILES, ids=[p.parent.name for p in SKILL_FILES])
def test_skill_names_only_real_commands_with_json(path: Path) -> None:
    text = path.read_text()
    calls = list(_invocations(text))
    assert calls, f"{path}: no kscope command in a shell block"
    for argv in calls:
        cmd, where, rest = _resolve(argv)
        if "--" in rest:  # kscope profile ... -- CMD: the workload's own arguments follow
            rest = rest[: rest.index("--")]
        opts = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        label = f"kscope {' '.join(where)}"
        assert "--json" in opts, f"{label} has no --json"
        assert "--json" in rest, f"{path.name}: '{label} {' '.join(rest)}' is shown without --json"
        for tok in rest:
            if tok.startswith("-") and tok != "-":
                assert tok.split("=")[0] in opts, f"{label}: no option {tok} (has {sorted(opts)})"
    # prose mentions (`kscope X ...`) name real commands too
    commands = typer.main.get_command(app).commands
    for name in re.findall(r"`kscope ([a-z-]+)", text):
        assert name in commands, f"{path.name} mentions kscope {name}: no such command"


def test_install_copies_then_refuses_to_clobber_edits(kscope: Kscope, tmp_path: Path) -> None:
    dest = tmp_path / "agent" / "skills"
    first = json.loads(kscope("skills", "install", "--dest", dest, "--json").stdout)
    assert first["schema"] == "kernelscope.skills.v1"
    assert sorted(first["installed"]) == sorted(p.parent.name for p in SKILL_FILES)
    for p in SKILL_FILES:
        assert (dest / p.parent.name / "SKILL.md").read_bytes() == p.read_bytes()
    again = json.loads(kscope("skills", "install", "--dest", dest, "--json").stdout)
    assert again["installed"] == [] and len(again["unchanged"]) == len(SKILL_FILES)

    edited = dest / SKILL_FILES[0].parent.name / "SKILL.md"
    edited.write_text(edited.read_text() + "\nmy own note\n")
    proc = kscope("skills", "install", "--dest", dest)
    assert_one_error_line(proc)
    assert "--force" in proc.stderr and "my own note" in edited.read_text()
    forced = json.loads(kscope("skills", "install", "--dest", dest, "--force", "--json").stdout)
    assert forced["installed"] == [SKILL_FILES[0].parent.name]
    assert edited.read_bytes() == SKILL_FILES[0].read_bytes()


def test_install_into_a_file_is_one_error_line(kscope: Kscope, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    assert_one_error_line(kscope("skills", "install", "--dest", tmp_path / "f"))


def test_list_json(kscope: Kscope) -> None:
    doc = json.loads(kscope("skills", "list", "--json").stdout)
    assert {s["name"] for s in doc["skills"]} == {p.parent.name for p in SKILL_FILES}
