"""Read one fact straight off an Itanium-mangled symbol: how many template arguments its function takes.

For symbols no demangler prints (binutils and LLVM both refuse some Composable Kernel names whole): the
finder still needs the count to tell one template from another. Only the grammar that template arguments
use is walked (types, literals, packs, nested names, substitutions); anything else gives ``None``, never a
guess. A symbol cut after the function's argument list still counts; one cut inside it does not.
"""

from __future__ import annotations

import re

_BUILTIN = frozenset("vwbcahstijlmxynofdegz")
_QUALIFIER = frozenset("PROKVr")
_SOURCE = re.compile(r"\d+")
_SUBST = re.compile(r"S[0-9A-Z]*_")
_PARAM = re.compile(r"T[0-9A-Z]*_")
_D_TYPE = re.compile(r"DF\d+[_bx]|D[BU]\d+_|D[dfehisuacn]")
_CTOR = re.compile(r"[CD][0-9]")
_UNNAMED = re.compile(r"Ut[0-9]*_")
_LITERAL_VALUE = re.compile(r"n?[0-9a-f]*E")


class _Unreadable(Exception):
    """A construct outside the walked grammar."""


def _match(pattern: re.Pattern[str], s: str, i: int) -> int:
    m = pattern.match(s, i)
    if m is None:
        raise _Unreadable
    return m.end()


def _source(s: str, i: int) -> int:
    end = _match(_SOURCE, s, i)
    n = int(s[i:end])
    if end + n > len(s):
        raise _Unreadable
    return end + n


def _args(s: str, i: int) -> tuple[int, int]:
    """At ``I``: the index past the matching ``E`` and how many arguments lie between."""
    i, n = i + 1, 0
    while s[i] != "E":
        i, n = _arg(s, i), n + 1
    return i + 1, n


def _with_args(s: str, i: int) -> int:
    return _args(s, i)[0] if i < len(s) and s[i] == "I" else i


def _arg(s: str, i: int) -> int:
    c = s[i]
    if c == "L":  # a literal: L type value E (L_Z… external names are not walked)
        if s.startswith("L_Z", i):
            raise _Unreadable
        return _match(_LITERAL_VALUE, s, _type(s, i + 1))
    if c == "J":  # a pack: one argument
        i += 1
        while s[i] != "E":
            i = _arg(s, i)
        return i + 1
    return _type(s, i)


def _nested(s: str, i: int) -> tuple[int, int | None]:
    """At ``N``: the index past its ``E`` and the template argument count of its last component."""
    i += 1
    while s[i] in "rVKRO":
        i += 1
    last: int | None = None
    while s[i] != "E":
        if s[i] == "I":
            i, last = _args(s, i)
            continue
        last = 0
        i = _component(s, i)
    return i + 1, last


def _component(s: str, i: int) -> int:
    c = s[i]
    if c.isdigit():
        return _source(s, i)
    if c == "S":
        return i + 2 if s[i + 1] in "tabsiod" else _match(_SUBST, s, i)
    if c == "T":
        return _match(_PARAM, s, i)
    if c == "U":
        return _match(_UNNAMED, s, i)
    if _CTOR.match(s, i):
        return i + 2
    raise _Unreadable


def _d_type(s: str, i: int) -> int:
    return _type(s, i + 2) if s.startswith("Dp", i) else _match(_D_TYPE, s, i)  # Dp: a pack expansion


def _vendor_type(s: str, i: int) -> int:
    return _with_args(s, _source(s, i + 1))


def _function_type(s: str, i: int) -> int:  # F return params E
    i += 1
    while s[i] != "E":
        i = _type(s, i)
    return i + 1


def _array(s: str, i: int) -> int:  # A [n] _ type
    return _type(s, _match(_ARRAY, s, i))


def _member_pointer(s: str, i: int) -> int:  # M class-type member-type
    return _type(s, _type(s, i + 1))


_ARRAY = re.compile(r"A\d*_")
_TYPES = {
    "D": _d_type,
    "N": lambda s, i: _nested(s, i)[0],
    "u": _vendor_type,
    "F": _function_type,
    "A": _array,
    "M": _member_pointer,
}


def _type(s: str, i: int) -> int:
    c = s[i]
    if c in _QUALIFIER:
        return _type(s, i + 1)
    if c in _BUILTIN:
        return i + 1
    walk = _TYPES.get(c)
    return walk(s, i) if walk is not None else _with_args(s, _component(s, i))


def template_arity(symbol: str) -> int | None:
    """How many template arguments the function a mangled symbol names takes (0: not a template);
    ``None`` when the symbol is not walked this far (cut inside the list, or grammar left out)."""
    if not symbol.startswith("_Z"):
        return None
    i = 3 if symbol.startswith("_ZL") else 2
    try:
        if symbol[i] == "N":
            return _nested(symbol, i)[1]
        end = _component(symbol, i)
        return _args(symbol, end)[1] if end < len(symbol) and symbol[end] == "I" else 0
    except (_Unreadable, IndexError):
        return None
