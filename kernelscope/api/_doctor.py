"""``kscope doctor``."""

from __future__ import annotations

from kernelscope.doctor import probe
from kernelscope.model.doctor import DoctorResult


def doctor() -> DoctorResult:
    """``kscope doctor``: Python, packages, GPUs and every external tool kernelscope drives, each with its
    version and path, or what its absence disables and how to install it."""
    return probe()
