"""Typed records: the one data model every reader produces and every analysis consumes."""

from kernelscope.model.profile import Profile, TimingKind
from kernelscope.model.records import (
    Annotation,
    DeviceInfo,
    Dim3,
    KernelLaunch,
    KernelStats,
    MemoryOp,
    Vendor,
)

__all__ = [
    "Annotation",
    "DeviceInfo",
    "Dim3",
    "KernelLaunch",
    "KernelStats",
    "MemoryOp",
    "Profile",
    "TimingKind",
    "Vendor",
]
