"""``model/`` is the bottom layer: its modules import no analysis, reader, presenter, API or CLI code."""

from __future__ import annotations

import ast
from pathlib import Path

import kernelscope.model

UPPER = ("analyses", "readers", "presenters", "api", "cli", "loop", "profiling")


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def test_model_imports_nothing_above_it() -> None:
    upward = {
        f"{path.name}: {name}"
        for path in sorted(Path(kernelscope.model.__file__).parent.glob("*.py"))
        for name in _imports(path)
        if name.split(".")[:2] in (["kernelscope", layer] for layer in UPPER)
    }
    assert not upward
