"""Name surgery shared by identity and grouping: the short base name a developer would grep for."""

from __future__ import annotations

import re

_AMD_SUFFIX = re.compile(r"(\.kd|\s*\[clone \.kd\])$")
_RETURN_TYPE = re.compile(r"^(?:void|int|float|auto)\s+")


def _strip_brackets(s: str, open_: str, close: str) -> str:
    """Remove every bracketed span (nested) of one bracket kind; an unclosed span runs to the end."""
    out, depth = [], 0
    for ch in s:
        if ch == open_:
            depth += 1
        elif ch == close and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def base_name(name: str) -> str:
    """``void ns::kern<T, 4>(args) [clone .kd]`` -> ``ns::kern``; bare names come back unchanged.

    Template arguments and parameter lists are dropped (nested, and unclosed ones from truncated
    names); ``(anonymous namespace)`` qualifiers go too. Works on demangled names; a mangled name is
    returned as is (the classifier demangles first).
    """
    s = _AMD_SUFFIX.sub("", name.strip())
    s = s.replace("(anonymous namespace)::", "")
    s = _RETURN_TYPE.sub("", s)
    s = _strip_brackets(s, "<", ">")
    s = _strip_brackets(s, "(", ")")
    return s.strip() or name
