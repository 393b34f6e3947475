"""Opening profiler outputs, the one place: gzip is detected from the content, not the name; a path that is
a directory, a symlink loop or unreadable becomes an ``InputError``; SQLite opens by an escaped URI (a gzip-compressed
database from a private decompressed copy)."""

from __future__ import annotations

import functools
import gzip
import itertools
import os
import shutil
import sqlite3
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, cast

from kernelscope.model import numbers, text
from kernelscope.model.files import open_raw, read_bytes, unreadable

__all__ = [
    "connect_sqlite",
    "is_gzip",
    "open_binary",
    "open_raw",
    "read_bytes",
    "sql_rows",
    "sqlite_names",
    "sqlite_uri",
    "unreadable",
]

GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: Path) -> bool:
    with open_raw(path) as f:
        try:
            return f.read(2) == GZIP_MAGIC
        except OSError as exc:
            raise unreadable(path, exc) from None


def open_binary(path: Path) -> IO[bytes]:
    """The file's bytes, decompressed on the fly when it is gzip; the caller closes it."""
    return cast(IO[bytes], gzip.open(path, "rb") if is_gzip(path) else open_raw(path))


def sqlite_uri(path: Path) -> str:
    """A read-only ``file:`` URI for ``path`` with ``#``, ``?`` and ``%`` escaped (``Path.as_uri``), so that
    no part of the name becomes a query or a fragment (which would drop ``mode=ro`` and create files)."""
    return Path(os.path.abspath(path)).as_uri() + "?mode=ro"


def connect_sqlite(path: Path) -> sqlite3.Connection:
    """A read-only connection to an existing regular file; ``InputError`` when ``path`` is not one."""
    try:
        if not path.is_file():
            path.stat()  # raises the reason: missing, a loop, no permission
            raise IsADirectoryError(21, "Is a directory", str(path))
    except OSError as exc:
        raise unreadable(path, exc) from None
    con = sqlite3.connect(sqlite_uri(_gunzipped(path) if is_gzip(path) else path), uri=True)
    con.text_factory = _SQL_TEXT  # TEXT is names: invalid UTF-8 becomes U+FFFD, never UnicodeDecodeError
    return con


_COPIES = itertools.count()


@functools.cache
def _scratch() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="kscope-sqlite-")  # removed when the process ends


def converted(path: Path, convert: Callable[[str, Path], None]) -> Path:
    """The SQLite database ``convert(source, out)`` makes of ``path``, written into this process's private temporary
    folder (removed when the process ends) once per process for the file as it is now: a file rewritten in place is
    converted again. Used for what SQLite cannot open itself (gzip-compressed databases, Nsight reports)."""
    st = path.stat()
    return _convert_once(str(path.resolve()), st.st_size, st.st_mtime_ns, convert)


@functools.cache
def _convert_once(path: str, size: int, mtime_ns: int, convert: Callable[[str, Path], None]) -> Path:
    del size, mtime_ns  # part of the key
    out = Path(_scratch().name) / f"{next(_COPIES)}.sqlite"
    convert(path, out)
    return out


def _gunzip(source: str, out: Path) -> None:
    with gzip.open(source, "rb") as src, out.open("wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)


def _gunzipped(path: Path) -> Path:
    """A gzip-compressed database (``mytrace.rpd.gz``, ``report.sqlite.gz``) decompressed once per process into a
    private temporary folder: SQLite reads files, not streams."""
    try:
        return converted(path, _gunzip)
    except (OSError, EOFError, zlib.error) as exc:
        raise unreadable(path, exc if isinstance(exc, OSError) else OSError(0, f"damaged gzip: {exc}")) from None


_SQL_TEXT = functools.partial(str, encoding="utf-8", errors="replace")
# what a damaged SQLite file raises: its own errors, and UnicodeDecodeError when sqlite3 decodes an error message
# or a column name holding the file's invalid bytes (the text_factory covers values only)
SQL_ERRORS = (sqlite3.DatabaseError, UnicodeDecodeError)


def sqlite_names(con: sqlite3.Connection) -> set[str]:
    """The database's table and view names, as text: a damaged file may store a name as a BLOB or a number."""
    rows = con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
    return {text.name(n) if isinstance(n, bytes) else str(n) for (n,) in rows}


def sql_rows(cur: sqlite3.Cursor, ints: frozenset[str]) -> Iterator[dict[str, Any]]:
    """The rows of ``cur`` as dicts; the columns named in ``ints`` through ``numbers.to_int`` (SQLite keeps any
    type in any column: text, blobs, reals, infinities become an int64 or None), BLOBs elsewhere as text."""
    names = [d[0] for d in cur.description]
    conv = [numbers.to_int if n in ints else _blob_text for n in names]
    for values in cur:
        yield {n: f(v) for n, f, v in zip(names, conv, values, strict=True)}


def _blob_text(v: object) -> object:
    return text.name(v) if isinstance(v, bytes) else v
