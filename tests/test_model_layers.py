"""``model/`` is the bottom layer: its modules import no analysis, reader, presenter, API or CLI code."""

from __future__ import annotations

import re
from pathlib import Path

import kernelscope.model

UPPER = {"analyses", "readers", "presenters", "api", "cli", "loop", "profiling"}
IMPORT = re.compile(r"^\s*(?:from|import)\s+kernelscope\.(\w+)", re.M)  # lazy imports in functions too


def test_model_imports_nothing_above_it() -> None:
    model = Path(kernelscope.model.__file__).parent
    upward = [(p.name, m) for p in sorted(model.glob("*.py")) for m in IMPORT.findall(p.read_text()) if m in UPPER]
    assert not upward
