"""Shared CSV plumbing for the CSV readers: gzip-transparent text, normalized headers, clean errors."""

from __future__ import annotations

import csv
import io
import re
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

from kernelscope.errors import FormatError
from kernelscope.model import numbers
from kernelscope.readers._io import open_binary

csv.field_size_limit(sys.maxsize)  # demangled C++ kernel names run to tens of kilobytes

_NON_ALNUM = re.compile(r"[^a-z0-9]")


def norm(header: str) -> str:
    """``Kernel_Name``, ``KernelName``, ``kernel-name`` and ``Kernel Name`` all become ``kernelname``."""
    return _NON_ALNUM.sub("", header.lower())


def open_text(path: Path) -> io.TextIOWrapper:
    return io.TextIOWrapper(open_binary(path), encoding="utf-8", errors="strict", newline="")


def rows(path: Path, expected: str, delimiter: str = ",") -> Iterator[list[str]]:
    """CSV rows (the header first), raising ``FormatError`` naming ``expected`` on damaged input."""
    try:
        with open_text(path) as f:
            yield from csv.reader(f, delimiter=delimiter)
    except (csv.Error, UnicodeDecodeError, OSError, EOFError, zlib.error) as exc:
        raise FormatError(path, expected, f"unreadable CSV ({exc})") from None


def to_int(v: str) -> int | None:
    """A cell as an int64 (``1,234`` and ``12.0`` too); None for empty, text, non-finite or out of range."""
    return numbers.to_int(v)


def to_float(v: str) -> float | None:
    """A cell as a finite float; None for empty, text, NaN and infinities."""
    return numbers.to_float(v)
