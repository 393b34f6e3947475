"""Decoding one huge JSON array of objects block by block (Chrome trace ``traceEvents``).

The array is cut into blocks at ``}, {`` and each block is decoded by msgspec into typed objects.
A cut is verified by the decode itself: a cut inside a string leaves invalid JSON (strings cannot hold
a bare quote) and a cut inside a nested object leaves it unbalanced, so a block that decodes is a whole
number of array items. A cut that fails is retried with more data.

A range of the array can also be decoded on its own (``stop``): it starts at an item's ``{`` and ends
where the next range starts, so workers can decode a file in parallel.
"""

from __future__ import annotations

import gc
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

import msgspec

from kernelscope.errors import FormatError
from kernelscope.model import text
from kernelscope.readers._io import open_raw

T = TypeVar("T")
R = TypeVar("R")

SEP = re.compile(rb"\}\s*,\s*\{")
_TAIL = re.compile(rb"\s*(?:(,)|\}\s*$|$)")  # what may follow the array's "]": more keys, or the end
_SEARCH = 1 << 16  # items are far shorter than this


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cycle collector while a block is decoded and converted (never across a ``yield``).

    A block makes ~100k acyclic objects at once; with the collector on, CPython runs a full collection
    every few thousand of them and each one re-scans the whole block: 40% of the read time at 1.5M events.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_block(f: IO[bytes], path: Path, size: int) -> bytes:
    try:
        return f.read(size)
    except (OSError, EOFError, zlib.error) as exc:
        raise FormatError(path, "a readable (gzip) JSON trace", f"a damaged file ({exc})") from None


def decode_object(data: bytes | memoryview, path: Path, what: str) -> dict[str, Any]:
    try:
        obj = text.json(data)
    except msgspec.DecodeError as exc:
        raise FormatError(path, f"valid JSON in the trace {what}", str(exc)) from None
    return obj if isinstance(obj, dict) else {}


def decode_items(decoder: msgspec.json.Decoder[list[T]], data: bytes, path: Path) -> list[T]:
    """Decode ``data`` (items separated by commas) as a list; ``DecodeError`` means a bad cut."""
    try:
        return text.json(b"[" + data + b"]", decoder=decoder)
    except msgspec.ValidationError as exc:
        raise FormatError(path, "trace events", f"an event of unexpected shape ({exc})") from None


def split_header(f: IO[bytes], path: Path, key: bytes, size: int) -> tuple[dict[str, Any], bytes]:
    """Read up to the opening ``[`` of the array under ``key``; return the keys before it and the rest read."""
    buf = b""
    while True:
        blk = read_block(f, path, size)
        buf += blk
        stripped = buf.lstrip()
        if stripped.startswith(b"["):  # the bare-array form of the Chrome trace format
            return {}, stripped[1:]
        at = buf.find(key)
        if at >= 0:
            bracket = buf.find(b"[", at)
            if bracket >= 0:
                head = buf[:at].rstrip().rstrip(b",") + b"}"
                return decode_object(head, path, "header"), buf[bracket + 1 :]
        if not blk:
            raise FormatError(path, f"a trace with a {key.decode()} array", "none")


def _last_separator(buf: bytes) -> re.Match[bytes] | None:
    last = None
    for last in SEP.finditer(buf, max(0, len(buf) - _SEARCH)):  # noqa: B007 - we want the final match
        pass
    return last


def _finish(decoder: msgspec.json.Decoder[list[T]], buf: bytes, path: Path) -> tuple[list[T], dict[str, Any]]:
    """Decode the last items and the keys after the array; the array's ``]`` is found by trial.

    Each trial costs only the few bytes after a candidate ``]`` (no copies of the buffer), and the
    items are decoded only once the tail is a JSON object: a truncated or damaged file with many
    ``]`` inside its items fails in linear time instead of decoding the buffer once per ``]``.
    """
    work = bytearray(buf)
    end = len(buf)
    while (end := buf.rfind(b"]", 0, end)) >= 0:
        m = _TAIL.match(buf, end + 1)
        if m is None:
            continue
        comma = m.start(1)
        try:
            meta: Any = {}
            if comma >= 0:  # the keys after the array, read as an object: "," becomes "{" for the trial
                work[comma] = ord("{")
                try:
                    meta = text.json(memoryview(work)[comma:])
                finally:
                    work[comma] = ord(",")
            items = decode_items(decoder, buf[:end], path)  # whole JSON of another shape: its error, not a cut
        except msgspec.DecodeError:
            continue
        return items, meta if isinstance(meta, dict) else {}
    raise FormatError(path, "a complete JSON trace", "a file that ends inside traceEvents (truncated?)")


def blocks(
    f: IO[bytes],
    buf: bytes,
    path: Path,
    decoder: msgspec.json.Decoder[list[T]],
    convert: Callable[[list[T]], R],
    *,
    size: int,
    stop: int | None = None,
) -> Iterator[tuple[R, dict[str, Any]]]:
    """``convert`` of each decoded block, with the keys after the array (``{}`` but for the last block).

    ``f`` is positioned after ``buf``. With ``stop`` (a file offset where the next range's first item
    starts) reading ends there and the range's last items are decoded without looking for ``]``.
    """
    while True:
        want = size if stop is None else min(size, stop - f.tell())
        blk = read_block(f, path, want) if want > 0 else b""
        if not blk:
            break
        buf += blk
        last = _last_separator(buf)
        if last is None:
            continue
        with no_gc():
            try:
                items = decode_items(decoder, buf[: last.start() + 1], path)
            except msgspec.DecodeError:
                continue  # the cut fell inside a string: take more data and cut again
            out = convert(items)
            del items
        buf = buf[last.end() - 1 :]
        yield out, {}
    with no_gc():
        if stop is None:
            items, trailer = _finish(decoder, buf, path)
        else:
            rest = buf.rstrip().rstrip(b",")
            try:
                items, trailer = (decode_items(decoder, rest, path) if rest else []), {}
            except msgspec.DecodeError as exc:
                raise FormatError(path, "a JSON trace range that ends between events", str(exc)) from None
        out = convert(items)
        del items
    yield out, trailer


def boundary(path: Path, offset: int) -> int | None:
    """The file offset of the first item's ``{`` after ``offset`` (a candidate cut for a parallel range)."""
    with open_raw(path) as f:
        f.seek(offset)
        window = f.read(_SEARCH)
    m = SEP.search(window)
    return None if m is None else offset + m.end() - 1
