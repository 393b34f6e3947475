"""Path confinement and the ``allowed`` globs: what a candidate may touch, and that nothing escapes.

Globs follow git's pathspec habits, matched against repository-relative POSIX paths: ``*`` and ``?``
stay within one component, ``**`` spans components (``a/**/b`` also matches ``a/b``), ``[...]`` is a
character class, and a glob ending in ``/`` covers everything below that folder.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path, PurePosixPath

from kernelscope.errors import InputError
from kernelscope.model.task import glob_problem

_MAGIC = re.compile(r"[*?\[]")


def inside(path: Path, root: Path) -> bool:
    """Whether ``path`` is ``root`` or below it once both are resolved (symlinks followed)."""
    return path.resolve().is_relative_to(root.resolve())


@cache
def _regex(glob: str) -> re.Pattern[str]:
    if glob.endswith("/"):
        glob += "**"
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body[0] in "!^" else body).replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out))


def matches(path: str, globs: list[str]) -> bool:
    return any(_regex(g).fullmatch(path) for g in globs)


def normalize_glob(glob: str, repo: Path) -> str:
    """``glob`` as a repository-relative pattern, refused if it could reach outside ``repo``.

    An absolute glob inside the repository is made relative; ``..``, absolute paths elsewhere and a
    fixed leading folder that is a symlink out of the repository are refused.
    """
    p = PurePosixPath(glob)
    if p.is_absolute():
        root = next((r for r in (repo, repo.resolve()) if Path(glob).is_relative_to(r)), None)
        if root is None:
            raise InputError(f"--allowed {glob}: an absolute path outside the repository {repo}; give a relative glob")
        p = PurePosixPath(Path(glob).relative_to(root).as_posix())
    if (problem := glob_problem(p.as_posix())) is not None:
        raise InputError(f"--allowed {glob}: {problem}")
    fixed = _leading_literal(p.parts)
    if fixed and not inside(repo.joinpath(*fixed), repo):
        raise InputError(f"--allowed {glob}: {'/'.join(fixed)} is a symlink out of the repository")
    return p.as_posix() + ("/" if glob.endswith("/") else "")


def _leading_literal(parts: tuple[str, ...]) -> list[str]:
    """The components before the first one with a wildcard (all of them for a plain path)."""
    out = []
    for part in parts:
        if _MAGIC.search(part):
            break
        out.append(part)
    return out
