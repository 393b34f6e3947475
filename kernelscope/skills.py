"""Agent skills: the ``SKILL.md`` files that teach a coding agent kscope's loop, and their installation.

The skills ship inside the package (``kernelscope/data/skills/<name>/SKILL.md``; the repository's
top-level ``skills/`` links there) so that ``kscope skills install`` works from a wheel. Each file has
the YAML front matter agent harnesses read (``name``, ``description``) and names only commands that
exist, each with ``--json`` (checked by tests/test_skills.py against the CLI itself).
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

import msgspec
import yaml

from kernelscope.errors import FormatError, InputError

SKILLS_SCHEMA = "kernelscope.skills.v1"
DEFAULT_DEST = Path(".claude") / "skills"  # a project's skills folder (Claude Code; other agents: --dest)


class Skill(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str
    path: str  # the bundled SKILL.md


class SkillsResult(msgspec.Struct, frozen=True, kw_only=True):
    """``kscope skills list|install --json``: the bundled skills and, for install, where they went."""

    skills: list[Skill]
    dest: str | None = None
    installed: list[str] = []
    unchanged: list[str] = []
    schema: str = SKILLS_SCHEMA


def bundled_root() -> Path:
    return Path(str(resources.files("kernelscope") / "data" / "skills"))


def front_matter(path: Path) -> dict[str, str]:
    """The ``---``-fenced YAML header of a SKILL.md (name and description are required)."""
    text = path.read_text(encoding="utf-8")
    parts = text.split("---", 2)
    if not text.startswith("---") or len(parts) < 3:
        raise FormatError(path, "a SKILL.md opening with '---' YAML front matter", text[:40])
    meta = yaml.safe_load(parts[1])
    if not isinstance(meta, dict) or not all(isinstance(meta.get(k), str) for k in ("name", "description")):
        raise FormatError(path, "front matter with string 'name' and 'description'", str(meta)[:80])
    return {str(k): str(v) for k, v in meta.items()}


def bundled() -> list[Skill]:
    out = []
    for path in sorted(bundled_root().glob("*/SKILL.md")):
        meta = front_matter(path)
        if meta["name"] != path.parent.name:  # harnesses find a skill by its folder
            raise FormatError(path, f"name: {path.parent.name} (the folder's name)", f"name: {meta['name']}")
        out.append(Skill(name=meta["name"], description=meta["description"], path=str(path)))
    return out


def install(dest: Path = DEFAULT_DEST, *, force: bool = False) -> SkillsResult:
    """Copy every bundled skill folder to ``dest/<name>/``. A folder there that differs from the bundled
    one is left alone unless ``force`` (it may hold the user's own edits)."""
    if dest.exists() and not dest.is_dir():
        raise InputError(f"{dest}: not a directory; --dest names the folder that holds skill folders")
    skills = bundled()
    copy: list[Skill] = []
    unchanged, conflicts = [], []
    for skill in skills:
        target = dest / skill.name
        if target.exists():
            if _same(Path(skill.path).parent, target):
                unchanged.append(skill.name)
                continue
            if not force:
                conflicts.append(str(target))
                continue
        copy.append(skill)
    if conflicts:  # before anything is written: all or nothing
        raise InputError(f"{', '.join(conflicts)}: already there and different from kscope's; --force replaces them")
    for skill in copy:
        shutil.rmtree(dest / skill.name, ignore_errors=True)
        shutil.copytree(Path(skill.path).parent, dest / skill.name)  # folder name = skill name (bundled() checks)
    installed = [s.name for s in copy]
    return SkillsResult(skills=skills, dest=str(dest.resolve()), installed=installed, unchanged=unchanged)


def _same(a: Path, b: Path) -> bool:
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    return files_a == files_b and all((a / f).read_bytes() == (b / f).read_bytes() for f in files_a)
