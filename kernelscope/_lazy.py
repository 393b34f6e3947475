"""Names a package exports but loads on first use (PEP 562): ``kernelscope`` and ``kernelscope.api``."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, where: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's ``__getattr__`` and ``__dir__``: ``where`` maps each name to the module that defines it."""
    namespace = sys.modules[package].__dict__

    def get(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name]), name)
        namespace[name] = value  # later lookups skip this function
        return value

    def names() -> list[str]:
        return sorted([*namespace, *where])

    return get, names
