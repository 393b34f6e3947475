"""``kscope skills list|install``: the agent skills bundled with kernelscope."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from kernelscope import skills as skills_mod
from kernelscope.cli._common import err, guarded, show
from kernelscope.presenters.base import render_json

skills_app = typer.Typer(help="Agent skills (SKILL.md) that drive kscope's loop.", no_args_is_help=True)
Json = Annotated[bool, typer.Option("--json", help=f"JSON, schema {skills_mod.SKILLS_SCHEMA}.")]


def _table(result: skills_mod.SkillsResult) -> Table:
    table = Table(title="kscope agent skills", title_justify="left")
    table.add_column("skill", no_wrap=True)
    table.add_column("description")
    for s in result.skills:
        table.add_row(s.name, s.description)
    return table


@skills_app.command("list")
@guarded
def list_skills(json: Json = False) -> None:
    """The bundled skills: name and when an agent should use each."""
    show(skills_mod.SkillsResult(skills=skills_mod.bundled()), json, _table)


@skills_app.command("install")
@guarded
def install(
    dest: Annotated[
        Path, typer.Option(help="Folder that holds skill folders (Claude Code: .claude/skills or ~/.claude/skills).")
    ] = skills_mod.DEFAULT_DEST,
    force: Annotated[bool, typer.Option("--force", help="Replace installed copies that differ.")] = False,
    json: Json = False,
) -> None:
    """Copy the skills to DEST/<name>/SKILL.md (default .claude/skills in this folder)."""
    result = skills_mod.install(dest, force=force)
    if json:
        sys.stdout.write(render_json(result))
        return
    for name in result.installed:
        err.print(f"installed {Path(result.dest or '') / name}", highlight=False)
    for name in result.unchanged:
        err.print(f"up to date {Path(result.dest or '') / name}", highlight=False)
