"""Real profiler outputs bundled for ``kscope demo`` and the tests. See ``demo/README.md``."""

from __future__ import annotations

from pathlib import Path

DEMO = Path(__file__).parent / "demo"


def demo_file(*parts: str) -> Path:
    """Path of a bundled file, e.g. ``demo_file("mi350x", "rmsnorm", "discover_kernel_trace.csv")``."""
    return DEMO.joinpath(*parts)
