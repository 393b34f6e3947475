"""Replay records: one operator call as a Kineto trace recorded it, enough to run it again alone.

A ``Replay`` is the ``REPLAY = {...}`` header of the script ``kscope replay`` writes: the script builds
its inputs from it at run time, and ``kscope task new --from-replay`` reads it back without running
the script (``from_script``: a Python literal, parsed with ``ast.literal_eval``).
"""

from __future__ import annotations

import ast
import pprint
from pathlib import Path
from typing import Any

import msgspec

from kernelscope.errors import FormatError

# A recorded number; "inf", "-inf" and "nan" stay text (neither JSON nor a Python literal has them).
Number = bool | int | float | str


class TensorArg(msgspec.Struct, frozen=True, kw_only=True, tag="tensor", tag_field="kind"):
    """A tensor: its storage holds unit-normal floats, zeros (valid as indices) or False."""

    shape: list[int]
    strides: list[int] | None  # None: not recorded (older PyTorch): made contiguous
    dtype: str  # a torch dtype name: bfloat16, float32, int64, ...
    # Not recorded by the profiler: the GPU, except 0-dim int64/float64 tensors, which are Python
    # numbers PyTorch wrapped (CPU). Edit it for an op that really took a host tensor.
    device: str = "cuda"


class TensorListArg(msgspec.Struct, frozen=True, kw_only=True, tag="tensors", tag_field="kind"):
    """A list of tensors; the profiler records their shapes and strides but not their dtype."""

    tensors: list[TensorArg]


class ScalarArg(msgspec.Struct, frozen=True, kw_only=True, tag="scalar", tag_field="kind"):
    value: Number | None  # None: not recorded; the script passes the schema's default


class ListArg(msgspec.Struct, frozen=True, kw_only=True, tag="list", tag_field="kind"):
    values: list[Number] | None  # None: not recorded


class OtherArg(msgspec.Struct, frozen=True, kw_only=True, tag="other", tag_field="kind"):
    """None, or a value the profiler does not keep (a string, a device, a generator): the script passes
    None where the schema allows it, else the schema's default."""


Arg = TensorArg | TensorListArg | ScalarArg | ListArg | OtherArg


class Replay(msgspec.Struct, frozen=True, kw_only=True):
    """``kscope replay --json`` (schema ``kernelscope.replay.v1``): the op signature chosen, its kernels
    and times in the trace, and where the script was written.

    Times are the trace's kernel durations (CUPTI/roctracer), median over the signature's calls.
    """

    op: str  # "aten::addmm"
    overload: str | None = None  # None: the script picks the overload whose schema fits ``args``
    args: list[Arg]  # every schema argument, keyword-only ones included, as recorded
    kernels: list[str]  # what one call launched, in order (the sequence most calls launched)
    kernel_ns: int  # per call: the summed durations of its kernels
    kernel_each_ns: list[int]  # per kernel of ``kernels``
    calls: int
    total_ns: int  # all calls of this signature
    rank: int  # 1: the matching signature with the most GPU time
    matches: int  # signatures that matched the selection
    selection: str  # "--kernel REGEX" or "--op NAME"
    trace: str
    device: str | None  # the trace's GPU
    notes: list[str] = []  # what the trace did not record and the script assumed instead
    script: str | None = None  # where kscope replay wrote it (not in the script's own header)
    schema: str = "kernelscope.replay.v1"

    def to_literal(self) -> str:
        """The header as a Python assignment (``REPLAY = {...}``), without ``script``."""
        data = msgspec.to_builtins(self)
        del data["script"]
        return "REPLAY = " + pprint.pformat(data, width=110, sort_dicts=False) + "\n"

    @classmethod
    def from_script(cls, path: Path) -> Replay:
        """The ``REPLAY`` header of a script ``kscope replay`` wrote, read without running it."""
        expected = "a script written by kscope replay (a REPLAY = {...} header)"
        try:
            tree = ast.parse(path.read_text(), filename=str(path))
        except (SyntaxError, UnicodeDecodeError, ValueError) as exc:
            raise FormatError(path, expected, f"no Python ({exc})") from None
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "REPLAY" for t in node.targets):
                try:
                    data: Any = ast.literal_eval(node.value)
                    return msgspec.convert(data, cls)
                except (ValueError, TypeError, SyntaxError, msgspec.ValidationError) as exc:
                    raise FormatError(path, expected, f"a REPLAY that is not one ({exc})") from None
        raise FormatError(path, expected, "no REPLAY assignment")


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """One op signature that matched: its GPU time, calls and kernels, and whether it can be replayed."""

    rank: int
    op: str
    args: str  # compact: bfloat16[8192,1024], 1, ...
    calls: int
    total_ns: int  # the matching kernels' time (--kernel) or all its kernels' (--op), all calls
    kernel_ns: int  # per call, median, all its kernels
    kernels: list[str]
    replayable: bool
    why_not: str | None = None


class ReplayList(msgspec.Struct, frozen=True, kw_only=True):
    """``kscope replay --list --json`` (schema ``kernelscope.replay-list.v1``), hottest first."""

    trace: str
    device: str | None
    selection: str
    candidates: list[Candidate]
    schema: str = "kernelscope.replay-list.v1"
