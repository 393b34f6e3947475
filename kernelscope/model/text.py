"""The one place that decodes text from a profiler's bytes: where the bytes are names (kernel names, file
names, SQLite text) invalid UTF-8 becomes U+FFFD; where they are structure (JSON syntax) the decoder fails
and the reader raises its ``FormatError``. ``json`` applies both: invalid bytes inside JSON strings are
replaced, and invalid bytes elsewhere leave invalid JSON behind."""

from __future__ import annotations

import mmap
from typing import Any, TypeVar, overload

import msgspec

T = TypeVar("T")
Bytes = bytes | bytearray | memoryview | mmap.mmap


def name(raw: bytes | bytearray | memoryview) -> str:
    """Bytes that name something, decoded; never raises."""
    return bytes(raw).decode("utf-8", "replace")


def utf8(data: Bytes) -> bytes:
    """``data`` with every invalid UTF-8 sequence replaced by U+FFFD (a copy only when one is present)."""
    b = bytes(data)
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return b.decode("utf-8", "replace").encode("utf-8")
    return b


@overload
def json(data: Bytes | str, *, type: type[T]) -> T: ...
@overload
def json(data: Bytes | str, *, decoder: msgspec.json.Decoder[T]) -> T: ...
@overload
def json(data: Bytes | str) -> Any: ...
def json(
    data: Bytes | str,
    *,
    type: Any = None,
    decoder: msgspec.json.Decoder[Any] | None = None,
) -> Any:
    """msgspec's JSON decode; on invalid UTF-8 it decodes again with the bad bytes replaced (names), so only
    ``msgspec.DecodeError`` (and ``ValidationError``) leave it. The valid path costs nothing extra."""

    def run(d: Any) -> Any:
        if decoder is not None:
            return decoder.decode(d)
        return msgspec.json.decode(d) if type is None else msgspec.json.decode(d, type=type)

    try:
        return run(data)
    except UnicodeDecodeError:
        if isinstance(data, str):
            raise
        return run(utf8(data))
