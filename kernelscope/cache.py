"""Where kernelscope keeps what outlives a run (the source index, measured ceilings, the tuning store):
``$<OVERRIDE>`` when set, else the user's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``)/kernelscope."""

from __future__ import annotations

import os
from pathlib import Path


def cache_path(name: str, override: str) -> Path:
    env = os.environ.get(override)
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kernelscope" / name
