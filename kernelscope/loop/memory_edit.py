"""``kscope memory set``: the changes one call makes to a record's JSON data, before it is validated.

Three kinds, applied in this order: a JSON merge patch (RFC 7386: objects merge, ``null`` removes a key,
anything else replaces), evidence triples appended, then ``FIELD=VALUE`` / ``FIELD+=VALUE`` assignments
left to right. A field is a dotted path with list indexes, ``performance.speedup`` or ``evidence[-1].source``;
a value is JSON when it parses as JSON and text otherwise (``title='"42"'`` keeps a number as text).
``+=`` appends to a list, creating it if absent. Bookkeeping fields are kscope's alone.

The edits are JSON's own (RFC 7386 patches, JSON paths, values parsed as JSON), so they work on the record's
JSON data, and the result is validated as a whole by decoding it back into a ``MemoryRecord``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from kernelscope.errors import FormatError, InputError
from kernelscope.model.memory import MemoryRecord

KEPT = ("schema", "version", "created", "masked", "history")  # masked and history: kscope memory mask|unmask
_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[-?[0-9]+\])*")
_STEP = re.compile(r"([A-Za-z_]\w*)|\[(-?[0-9]+)\]")
_ASSIGNMENT = re.compile(r"(?P<path>[^=+]*)(?P<op>\+?=)(?P<value>.*)", re.DOTALL)


def _kept(key: str, how: str) -> None:
    if key in KEPT:
        use = "kscope memory mask|unmask change it" if key in ("masked", "history") else "kscope sets it"
        raise InputError(f"{how}: {key} is not for kscope memory set ({use})")


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch of ``target`` by ``patch`` (a new value; neither is changed)."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def read_patch(path: Path) -> Any:
    """The JSON of ``--from-json FILE``."""
    try:
        return json.loads(path.read_bytes())
    except ValueError as exc:
        raise FormatError(path, "a JSON object (a merge patch of the record)", f"invalid JSON ({exc})") from None


def parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _steps(path: str) -> list[str | int]:
    if not _PATH.fullmatch(path):
        raise InputError(f"{path!r}: expected a field path like performance.speedup or evidence[0].action")
    return [key if key else int(index) for key, index in _STEP.findall(path)]


def _index(node: list[Any], index: int, path: str) -> int:
    if not -len(node) <= index < len(node):
        raise InputError(f"{path}: index {index} is out of range (the list holds {len(node)})")
    return index % len(node)


def assign(doc: dict[str, Any], text: str) -> None:
    """Apply one ``FIELD=VALUE`` or ``FIELD+=VALUE`` to ``doc``; objects on the way are made if null."""
    m = _ASSIGNMENT.fullmatch(text)
    if m is None:
        raise InputError(f"{text!r}: expected FIELD=VALUE or FIELD+=VALUE, e.g. performance.speedup=1.2")
    path, append, value = m["path"], m["op"] == "+=", parse_value(m["value"])
    *parents, last = steps = _steps(path)
    _kept(str(steps[0]), path)
    node: Any = doc
    for step in parents:
        if isinstance(step, int):
            if not isinstance(node, list):
                raise InputError(f"{path}: [{step}] indexes a list, found {type(node).__name__}")
            node = node[_index(node, step, path)]
        elif isinstance(node, dict):
            if node.get(step) is None:
                node[step] = {}
            node = node[step]
        else:
            raise InputError(f"{path}: .{step} names a field of an object, found {type(node).__name__}")
    if isinstance(last, int):
        if not isinstance(node, list):
            raise InputError(f"{path}: [{last}] indexes a list, found {type(node).__name__}")
        last = _index(node, last, path)
    elif not isinstance(node, dict):
        raise InputError(f"{path}: .{last} names a field of an object, found {type(node).__name__}")
    if not append:
        node[last] = value
        return
    if isinstance(node, dict) and node.get(last) is None:
        node[last] = []
    if not isinstance(node[last], list):
        raise InputError(f"{path}+=: {path} is not a list (set it with =)")
    node[last].append(value)


def apply(
    record: MemoryRecord,
    assignments: Sequence[str] = (),
    *,
    patch: Any = None,
    evidence: Sequence[tuple[str, str, str]] = (),
) -> dict[str, Any]:
    """The record's JSON data changed by the merge ``patch``, then the ``evidence`` triples, then ``assignments``."""
    doc: dict[str, Any] = msgspec.to_builtins(record)
    if patch is not None:
        if not isinstance(patch, dict):
            raise InputError(f"--from-json: expected a JSON object (a merge patch), found {type(patch).__name__}")
        for key in patch:
            _kept(key, "--from-json")
        doc = merge(doc, patch)
    for seen, inferred, done in evidence:
        doc.setdefault("evidence", []).append({"evidence": seen, "inference": inferred, "action": done})
    for text in assignments:
        assign(doc, text)
    return doc
