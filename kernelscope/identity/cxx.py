"""A tolerant reader of demangled C++ kernel signatures: the qualified entity and its template arguments.

Profilers print ``void ns::kern<T, 4>(args) [clone .kd]`` in GCC style, nvcc style
(``[lambda() (instance 3)]``, ``(int)4``, ``<unnamed>``) and truncated (unclosed brackets, ``...``).
This module never raises on such text: an unclosed bracket simply runs to the end of the string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_OPEN = {"<": ">", "(": ")", "[": "]", "{": "}"}
_CLOSE = set(_OPEN.values())
_AMD_SUFFIX = re.compile(r"(?:\.kd|\s*\[clone \.kd\])\s*$")
_TRUNCATION = re.compile(r"\s*(?:\.\.\.|…)\s*$")
# an anonymous namespace as demanglers print it; EDG-style ones (nvprof's) print nvcc's own name for it
_ANON = re.compile(r"\(anonymous namespace\)::|<unnamed>::|\{anonymous\}::|\b_GLOBAL__N__\w+::")
_RETURN = re.compile(r"^(?:void|int|float|auto|__global__ void)\s+(?=[\w:~(])")
# SFINAE return types: "std::enable_if<cond, void>::type vllm::kern<...>(...)"
_ENABLE_IF = re.compile(r"^(?:typename\s+)?(?:std::)?enable_if(?:_t)?<.*?>(?:::type)?\s+(?=[\w:~])")
# "operator ()" (nvcc) and "operator()" (gcc) name the call operator, not a parameter list.
_OPERATOR = re.compile(r"operator\s*\(\)")


def strip_suffixes(name: str) -> str:
    """Drop the AMD ``.kd`` / ``[clone .kd]`` symbol suffix and surrounding space."""
    return _AMD_SUFFIX.sub("", name.strip()).strip()


def is_truncated(name: str) -> bool:
    return bool(_TRUNCATION.search(name))


@dataclass(frozen=True)
class Component:
    """One ``::``-separated piece of a qualified name: ``name<targs>(params)``."""

    name: str
    targs: tuple[str, ...] = ()
    has_targs: bool = False
    params: str | None = None
    open_targs: bool = False  # the template argument list was cut off (truncated name)

    @property
    def is_local(self) -> bool:
        """A lambda or call operator: a piece of a function's body, not a named entity."""
        return self.name.startswith(("{lambda", "[lambda", "lambda", "operator")) or not self.name


def _scan(s: str, i: int, closer: str) -> int:
    """Index just past the bracket that closes at ``closer`` (or ``len(s)`` when the text is cut off)."""
    stack = [closer]
    n = len(s)
    while i < n and stack:
        ch = s[i]
        if ch in _OPEN and not (ch == "<" and _is_operator_lt(s, i)):
            stack.append(_OPEN[ch])
        elif ch == stack[-1]:
            stack.pop()
        elif ch in _CLOSE and ch != ">" and ch in stack:
            # a closer of an outer bracket (a '<' that was a comparison, or a cut name): close up to it
            while stack and stack[-1] != ch:
                stack.pop()
            stack.pop()
        i += 1
    return i


def _is_operator_lt(s: str, i: int) -> bool:
    return s[max(0, i - 8) : i].rstrip().endswith("operator") or (i > 0 and s[i - 1] == "-")


def split_top(s: str, sep: str) -> list[str]:
    """Split ``s`` at ``sep`` where no bracket is open."""
    parts, depth_start, i, n = [], 0, 0, len(s)
    while i < n:
        ch = s[i]
        if ch in _OPEN and not (ch == "<" and _is_operator_lt(s, i)):
            i = _scan(s, i + 1, _OPEN[ch])
            continue
        if s.startswith(sep, i):
            parts.append(s[depth_start:i])
            i += len(sep)
            depth_start = i
            continue
        i += 1
    parts.append(s[depth_start:])
    return [p.strip() for p in parts]


def _component(text: str) -> Component:
    text = _OPERATOR.sub("operator", text.strip())
    i, n = 0, len(text)
    while i < n and text[i] not in "<(" and not (text[i] in "{[" and i == 0):
        i += 1
    if i == 0 and n and text[0] in "{[":  # {lambda(...)#1} / [lambda() (instance 1)]
        return Component(text)
    name = text[:i].strip()
    targs: tuple[str, ...] = ()
    has_targs = open_targs = False
    params = None
    if i < n and text[i] == "<":
        end = _scan(text, i + 1, ">")
        closed = text[end - 1 : end] == ">"
        inner = text[i + 1 : end - 1] if closed else text[i + 1 : end]
        targs = tuple(a for a in split_top(inner, ",") if a)
        has_targs, open_targs = True, not closed
        i = end
    while i < n and text[i] == " ":
        i += 1
    if i < n and text[i] == "(":
        end = _scan(text, i + 1, ")")
        params = text[i + 1 : end - 1] if text[end - 1 : end] == ")" else text[i + 1 : end]
    return Component(name, targs, has_targs, params, open_targs)


def in_anonymous_namespace(name: str) -> bool:
    """A name inside an anonymous namespace is C++ whatever else it shows (``<unnamed>::k``: no parameters printed)."""
    return _ANON.search(name) is not None


def clean(demangled: str) -> str:
    """Suffixes, truncation marks, anonymous namespaces and the return type removed."""
    s = _TRUNCATION.sub("", strip_suffixes(demangled))
    s = _ANON.sub("", s)
    s = _ENABLE_IF.sub("", s)
    return _RETURN.sub("", s).strip()


def path(expr: str) -> list[Component]:
    """The qualified name of one expression (a whole signature or one template argument)."""
    expr = expr.strip()
    if expr.startswith("(") and not expr.startswith("(anonymous"):  # nvcc literal: (int)4, (cudnnKernelDataType_t)0
        return []
    comps = [_component(p) for p in split_top(expr, "::")]
    # trailing qualifiers after the parameter list ("... const") belong to the last real component
    return [c for c in comps if c.name or c.targs]


def is_cxx(name: str) -> bool:
    """Does the (demangled) name look like a C++ signature rather than a bare identifier?"""
    return any(ch in name for ch in "<(: ")


_LITERAL = re.compile(r"^(?:\(\w[\w ]*\))?-?\d[\w.]*$|^(?:true|false|nullptr|decltype\(nullptr\))$")


def is_literal(arg: str) -> bool:
    return bool(_LITERAL.match(arg.strip()))


def key_component(comps: list[Component]) -> int:
    """Index of the component that names the kernel's code: the function whose body holds the lambdas.

    ``f<..>(args)::{lambda()#1}::operator()() const::{lambda(float)#1}`` -> ``f``;
    ``S<..>::operator()(args)::{lambda}`` -> ``S``; a plain ``ns::kern<..>`` -> ``kern``.
    """
    for idx, c in enumerate(comps):
        if c.params is not None:
            j = idx
            while j > 0 and comps[j].is_local:
                j -= 1
            return j
    j = len(comps) - 1
    while j > 0 and comps[j].is_local:
        j -= 1
    return max(j, 0)
