"""Reading a file's bytes, the one place: a path that is a directory, a symlink loop or unreadable becomes
one ``InputError`` line (the readers' ``_io`` builds gzip and SQLite on these)."""

from __future__ import annotations

from pathlib import Path
from typing import IO

from kernelscope.errors import InputError


def unreadable(path: Path, exc: OSError | RuntimeError) -> InputError:
    """The one error for a path that cannot be read as a file (a directory, a symlink loop, no permission)."""
    if isinstance(exc, IsADirectoryError) or path.is_dir():
        return InputError(f"{path}: is a directory; pass the profiler's output file(s) inside it")
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{path}: no such file or directory")
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return InputError(f"{path}: cannot be read as a file ({reason})")


def open_raw(path: Path) -> IO[bytes]:
    """The file's raw bytes (no gunzip); the caller closes it."""
    try:
        return path.open("rb")
    except OSError as exc:
        raise unreadable(path, exc) from None


def read_bytes(path: Path) -> bytes:
    with open_raw(path) as f:
        try:
            return f.read()
        except OSError as exc:  # EISDIR arrives at read() on some systems
            raise unreadable(path, exc) from None
