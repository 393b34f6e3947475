"""Names a package exports but loads on first use (PEP 562): ``kernelscope`` and ``kernelscope.api``.

The package's ``if TYPE_CHECKING:`` block of ``from MODULE import NAME as NAME`` is its one export table:
type checkers read it as written, and at run time it is parsed on the first lookup (not at import, which
stays as short as the block is long), giving the lazy ``__getattr__``, ``__dir__`` and ``__all__``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from functools import cache
from typing import Any


def exports(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's ``__getattr__`` (``__all__`` included) and ``__dir__``."""
    namespace = sys.modules[package].__dict__

    @cache
    def where() -> dict[str, str]:
        """Each exported name -> the module that defines it, from the ``TYPE_CHECKING`` block."""
        import ast

        tree = ast.parse(namespace["__spec__"].loader.get_source(package))
        block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
        return {a.name: n.module or "" for n in block.body if isinstance(n, ast.ImportFrom) for a in n.names}

    def get(name: str) -> Any:
        if name == "__all__":
            value: Any = sorted(where())
        elif name in where():
            value = getattr(importlib.import_module(where()[name]), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value  # later lookups skip this function
        return value

    def names() -> list[str]:
        return sorted({*namespace, *where()})

    return get, names
