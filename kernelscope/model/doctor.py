"""``kscope doctor``: what this machine can do — Python, packages, GPUs and each external tool kernelscope drives."""

from __future__ import annotations

from typing import Literal

import msgspec

DOCTOR_SCHEMA = "kernelscope.doctor.v1"

Status = Literal["ok", "missing", "failed"]


class Gpu(msgspec.Struct, kw_only=True):
    """One GPU as a vendor tool or torch reports it."""

    name: str
    vendor: Literal["nvidia", "amd"]
    source: str  # which tool said so: nvidia-smi, rocm-smi, torch
    driver: str | None = None
    uuid: str | None = None
    arch: str | None = None


class Check(msgspec.Struct, kw_only=True):
    """One dependency: found or not, and what its absence disables."""

    name: str
    kind: Literal["tool", "package", "gpu"]
    status: Status
    version: str | None = None
    path: str | None = None
    detail: str | None = None  # e.g. the AMD targets an llvm-objdump disassembles, or why a probe failed
    enables: list[str] = msgspec.field(default_factory=list)  # commands and features that need it
    fix: str | None = None  # how to install it (only when not ok)


class DoctorResult(msgspec.Struct, kw_only=True):
    python: str
    platform: str
    kernelscope: str
    gpus: list[Gpu]
    checks: list[Check]
    schema: str = DOCTOR_SCHEMA

    @property
    def disabled(self) -> list[str]:
        """Every command or feature that a missing or failing dependency disables, in check order."""
        return list(dict.fromkeys(e for c in self.checks if c.status != "ok" for e in c.enables))
