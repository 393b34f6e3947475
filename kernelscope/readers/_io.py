"""Opening profiler outputs: gzip is detected from the content, not the name."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import IO, cast

GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(2) == GZIP_MAGIC


def open_binary(path: Path) -> IO[bytes]:
    """The file's bytes, decompressed on the fly when it is gzip; the caller closes it."""
    return cast(IO[bytes], gzip.open(path, "rb") if is_gzip(path) else path.open("rb"))
