"""The one error hierarchy. Every message says what was expected, what was found, and what to do.

The CLI turns any ``KernelscopeError`` into one line on stderr and exit code 2; library users catch
these instead of parsing messages.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# C0, DEL and C1 (0x9b is a one-byte CSI to some terminals): nothing a name holds can move the cursor,
# clear the screen, set a title or start a fake line
_CONTROL = {c: f"\\x{c:02x}" for c in [*range(32), 127, *range(0x80, 0xA0)]} | {10: "\\n", 13: "\\r", 9: "\\t"}


# JSON escapes C0 itself; C1 (0x80-0x9f) is valid text to it but a control sequence to some terminals, so
# JSON kscope prints gets them as \u escapes too (the same string to any JSON reader)
_C1 = {c: f"\\u{c:04x}" for c in range(0x80, 0xA0)}


def json_text(encoded: bytes) -> str:
    """Encoded JSON as text safe on a terminal: C1 characters as ``\\u`` escapes."""
    return encoded.decode().translate(_C1)


def one_line(text: str) -> str:
    """``text`` with control characters escaped (newlines as ``\\n``): an SQLite message that quotes the
    schema, or a CSV cell with a line break, stays on the one line the CLI prints."""
    return text.translate(_CONTROL)


class KernelscopeError(Exception):
    """Base of every error kernelscope raises on purpose; its message is always one line (``one_line``)."""

    def __str__(self) -> str:
        return one_line(super().__str__())


class InputError(KernelscopeError):
    """The user's input (a path, an option value) cannot be used."""


class FormatError(InputError):
    """A file exists but is not, or is no longer, the format it claims or was sniffed as: at ``path``,
    ``expected`` one thing, ``found`` another, and ``fix`` (may be empty) says what to do."""

    def __init__(self, path: object, expected: str, found: str, fix: str = "") -> None:
        self.path, self.expected, self.found, self.fix = path, expected, found, fix
        super().__init__(f"{path}: expected {expected}, found {found}" + (f"; {fix}" if fix else ""))

    def __reduce__(self) -> tuple[type[FormatError], tuple[object, str, str, str]]:
        return type(self), (self.path, self.expected, self.found, self.fix)  # survives worker processes


class MissingToolError(KernelscopeError):
    """An external program or optional package kernelscope needs is not installed."""

    def __init__(self, tool: str, fix: str) -> None:
        super().__init__(f"{tool} is not available; {fix}")


class ToolFailedError(KernelscopeError):
    """An external program ran and failed."""


class InputWarning(UserWarning):
    """Input read in part, with what was left out said; the CLI prints it as one ``kscope: warning:`` line."""


class DroppedRecordsWarning(InputWarning):
    """Records with impossible numbers (negative, non-finite or out-of-range times) were dropped and counted."""


class PartialInputWarning(InputWarning):
    """A file beside the input, which the input does not need, could not be read (what it would have added is
    missing: the GPUs of a rocprofv3 run)."""


_partial: ContextVar[list[str] | None] = ContextVar("kscope_partial_input", default=None)


def partial_input(message: str) -> None:
    """Part of an input could not be read: into the warnings of the result being built (``noting_partial``,
    so ``--json`` carries it), else out as a ``PartialInputWarning``."""
    box = _partial.get()
    if box is None:
        warnings.warn(PartialInputWarning(message), stacklevel=3)
    else:
        box.append(message)


@contextmanager
def noting_partial() -> Iterator[list[str]]:
    """Inside: ``partial_input`` messages are gathered in the yielded list instead of warned."""
    box: list[str] = []
    token = _partial.set(box)
    try:
        yield box
    finally:
        _partial.reset(token)


class Skip(Exception):
    """Raised by a ``kscope tune`` factory for a combination it cannot run (the candidate is ``skipped``
    with this message); not an error of kernelscope's."""
