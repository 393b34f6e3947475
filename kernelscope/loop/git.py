"""The git facts an eval needs: the repository root, the baseline commit, what the candidate changed.

Plain ``git`` subprocesses (porcelain-free plumbing where it matters); every failure is a
``KernelscopeError`` naming the command.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kernelscope.errors import InputError, MissingToolError, ToolFailedError


def git(repo: Path, *args: str) -> str:
    """Run ``git -C repo ARGS`` and return its stdout; a failure raises ``ToolFailedError``."""
    if shutil.which("git") is None:
        raise MissingToolError("git", "install git (apt-get install git)")
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    if proc.returncode != 0:
        detail = (proc.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        raise ToolFailedError(f"git {' '.join(args)} in {repo} failed: {detail}")
    return proc.stdout.decode(errors="surrogateescape")  # file contents in diffs need not be UTF-8


def toplevel(repo: Path) -> Path:
    """The repository's top level, which ``repo`` must be (paths and globs are relative to it)."""
    if not repo.is_dir():
        raise InputError(f"--repo {repo}: expected a git repository folder, found no such folder")
    try:
        top = Path(git(repo, "rev-parse", "--show-toplevel").strip())
    except ToolFailedError:
        raise InputError(f"--repo {repo}: expected a git repository, found none (git init, or point at one)") from None
    if top.resolve() != repo.resolve():
        raise InputError(f"--repo {repo}: expected the repository's top level, found a folder inside {top}")
    return top.resolve()


def resolve(repo: Path, ref: str) -> str:
    """The commit ``ref`` names in ``repo`` (full hash)."""
    if ref.startswith("-"):
        raise InputError(f"--baseline-ref {ref}: expected a branch, tag or commit, found an option")
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except ToolFailedError:
        raise InputError(f"--baseline-ref {ref}: names no commit in {repo} (git log shows the commits)") from None


@dataclass(frozen=True)
class Candidate:
    """The working tree as an eval sees it."""

    head: str | None  # None in a repository without commits
    changed: list[str]  # vs the baseline commit: modified, added, deleted and untracked (not ignored) files
    diff_hash: str  # sha256 of the diff to HEAD plus every untracked file's path and bytes
    dirty: bool


def _z(text: str) -> list[str]:
    return [p for p in text.split("\0") if p]


def candidate(repo: Path, baseline: str, exclude: str | None = None) -> Candidate:
    """What the working tree of ``repo`` changed against ``baseline``, less the folder ``exclude``
    (a workspace kept inside the repository is not the candidate's doing)."""
    paths = ["--", ".", f":(exclude,literal){exclude}"] if exclude else []
    head = _head(repo)
    untracked = sorted(_z(git(repo, "ls-files", "--others", "--exclude-standard", "-z", *paths)))
    tracked = _z(git(repo, "diff", "--name-only", "--no-renames", "-z", baseline, *paths))
    digest = hashlib.sha256()
    local = git(repo, "diff", "--binary", "--no-renames", "HEAD", *paths) if head else ""
    digest.update(local.encode(errors="surrogateescape"))
    for p in untracked:
        digest.update(b"\0" + p.encode(errors="surrogateescape") + b"\0")
        f = repo / p
        if f.is_symlink():
            digest.update(str(f.readlink()).encode(errors="surrogateescape"))
        elif f.is_file():
            with f.open("rb") as fh:
                digest.update(hashlib.file_digest(fh, "sha256").digest())
    return Candidate(
        head=head,
        changed=sorted({*tracked, *untracked}),
        diff_hash=digest.hexdigest(),
        dirty=bool(local or untracked),
    )


def _head(repo: Path) -> str | None:
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}").strip()
    except ToolFailedError:  # an unborn branch: no commit yet
        return None


def worktree_head(path: Path) -> str | None:
    """The commit checked out in the worktree at ``path``; None if it is not a usable worktree."""
    if not (path / ".git").exists():
        return None
    try:
        return git(path, "rev-parse", "HEAD").strip()
    except ToolFailedError:
        return None


def add_worktree(repo: Path, path: Path, commit: str) -> None:
    """Check ``commit`` out, detached, into a new worktree of ``repo`` at ``path``."""
    git(repo, "worktree", "prune")  # forget worktrees whose folders were deleted by hand
    git(repo, "worktree", "add", "--detach", "--force", "--quiet", str(path), commit)


def remove_worktree(repo: Path, path: Path) -> None:
    """Delete the worktree at ``path`` whatever its state; ``prune`` then drops git's record of it."""
    if path.exists():
        shutil.rmtree(path)
    git(repo, "worktree", "prune")
