"""kernelscope: one data model and one tool for GPU kernel performance work, AMD and NVIDIA alike.

The names below load on first use (PEP 562): ``import kernelscope.readers.att`` or ``kscope att`` need not
import every analysis first.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from kernelscope._lazy import exports

if TYPE_CHECKING:
    from kernelscope.analyses.gap import gap as gap
    from kernelscope.api import gap_report as gap_report
    from kernelscope.api import index_sources as index_sources
    from kernelscope.api import locate_sources as locate_sources
    from kernelscope.api import tune as tune
    from kernelscope.errors import Skip as Skip
    from kernelscope.identity import classify as classify
    from kernelscope.inputs import open as open
    from kernelscope.inputs import open_all as open_all
    from kernelscope.model import KernelLaunch as KernelLaunch
    from kernelscope.model import Profile as Profile
    from kernelscope.model.frames import to_arrow as to_arrow
    from kernelscope.model.frames import to_pandas as to_pandas
    from kernelscope.model.gap import GapOptions as GapOptions
    from kernelscope.model.gap import GapResult as GapResult
    from kernelscope.readers import detect as detect
    from kernelscope.readers import load as load
    from kernelscope.readers import read as read
    from kernelscope.timing import bench as bench

__version__ = "0.1.0"
__getattr__, __dir__ = exports(__name__)  # the TYPE_CHECKING imports are the table


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext kernelscope``: results show their plots (roofline, ATT, ncu stalls) below their tables."""
    from kernelscope.presenters.notebook import register

    register(shell)


_ipython = sys.modules.get("IPython")  # imported inside a notebook: register there and then (nothing loads)
if _ipython is not None and (_shell := _ipython.get_ipython()) is not None:
    load_ipython_extension(_shell)
