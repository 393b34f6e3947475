"""kernelscope: one data model and one tool for GPU kernel performance work, AMD and NVIDIA alike."""

from kernelscope.analyses.gap import GapOptions, GapResult, gap
from kernelscope.api import gap_report, index_sources, locate_sources
from kernelscope.identity import classify
from kernelscope.model import KernelLaunch, Profile
from kernelscope.readers import detect, load, read
from kernelscope.timing import bench

__version__ = "0.1.0"
__all__ = [
    "GapOptions",
    "GapResult",
    "KernelLaunch",
    "Profile",
    "bench",
    "classify",
    "detect",
    "gap",
    "gap_report",
    "index_sources",
    "load",
    "locate_sources",
    "read",
]
