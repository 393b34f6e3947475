"""A workspace: the folder that holds an optimization loop's tasks, eval results and ledger.

::

    DIR/kscope.toml     schema kernelscope.workspace.v1
    DIR/tasks/NAME/     task.json + TASK.md
    DIR/runs/NAME/ID/   result.json of each eval
    DIR/memory/         the iteration memory: v<N>.json, one record per iteration (loop/memory.py)
    DIR/ledger.jsonl    one line per eval (ledger.lock serializes writers)
    DIR/cache/          baseline worktrees, rebuilt on demand
"""

from __future__ import annotations

import fcntl
import os
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from kernelscope.errors import FormatError, InputError
from kernelscope.loop.paths import inside
from kernelscope.model.task import WORKSPACE_SCHEMA, WorkspaceConfig

CONFIG = "kscope.toml"
FOLDERS = ("tasks", "runs", "memory", "cache")


@dataclass(frozen=True)
class Workspace:
    root: Path
    config: WorkspaceConfig

    @property
    def tasks(self) -> Path:
        return self.root / "tasks"

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    @property
    def ledger(self) -> Path:
        return self.root / "ledger.jsonl"

    @property
    def ledger_lock(self) -> Path:
        return self.root / "ledger.lock"

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()


def _config_text(version: str) -> str:
    created = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (
        "# kernelscope workspace (kscope init); tasks/, runs/, memory/ and ledger.jsonl live beside it\n"
        f'schema = "{WORKSPACE_SCHEMA}"\ncreated = "{created}"\nkscope_version = "{version}"\n'
    )


def _read_config(root: Path) -> WorkspaceConfig:
    path = root / CONFIG
    try:
        return msgspec.convert(tomllib.loads(path.read_text()), WorkspaceConfig)
    except (tomllib.TOMLDecodeError, msgspec.ValidationError) as exc:
        raise FormatError(path, f"a {WORKSPACE_SCHEMA} config", f"{exc}", "fix it or remove it") from None


def _finish(root: Path) -> None:
    """Create what a workspace holds but lacks, refusing parts that are symlinks out of it."""
    for name in FOLDERS:
        (root / name).mkdir(exist_ok=True)
    for name in ("ledger.jsonl", "ledger.lock"):
        if not (root / name).exists():  # checked first: a read-only workspace can still be read
            os.close(os.open(root / name, os.O_WRONLY | os.O_CREAT, 0o644))  # no O_EXCL: racing evals agree
    for name in (*FOLDERS, "ledger.jsonl", "ledger.lock"):
        if not inside(root / name, root):
            raise InputError(f"{root / name}: a symlink out of the workspace; make it a plain folder or file")


def init(path: Path, version: str) -> tuple[Workspace, bool]:
    """Make ``path`` a workspace (creating it if needed); True if it was not one already.

    Idempotent: an existing workspace is completed and left as it is. A non-empty folder that is not a
    workspace is refused, so a typo cannot scatter ledgers into a source tree.
    """
    if path.exists() and not path.is_dir():
        raise InputError(f"{path}: expected a folder for the workspace, found a file")
    root = path.resolve()
    fresh = not (root / CONFIG).exists()
    if fresh and root.exists() and any(root.iterdir()):
        raise InputError(f"{path}: not empty and not a kscope workspace (no {CONFIG}); choose an empty or new folder")
    root.mkdir(parents=True, exist_ok=True)
    if fresh:
        (root / CONFIG).write_text(_config_text(version))
    ws = Workspace(root, _read_config(root))
    _finish(root)
    return ws, fresh


def open_workspace(path: Path) -> Workspace:
    """The workspace at ``path``; an actionable error if ``kscope init`` never made it one."""
    root = path.resolve()
    if not (root / CONFIG).is_file():
        raise InputError(f"{path}: not a kscope workspace (no {CONFIG}); run kscope init {path}")
    ws = Workspace(root, _read_config(root))
    _finish(root)
    return ws


@contextmanager
def locked(lock: Path, exclusive: bool = True) -> Iterator[int]:
    """Hold ``flock`` on ``lock`` (created if missing) until the block ends; yields the fd, so a holder
    can convert the lock (``fcntl.flock(fd, LOCK_SH)``)."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield fd
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a fsynced temporary file and a rename: never half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
