"""Where measured ceiling profiles live: one JSON per device under the kernelscope cache directory."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from kernelscope.cache import cache_path
from kernelscope.ceilings.measure import CeilingProfile
from kernelscope.errors import FormatError


def ceilings_dir() -> Path:
    return cache_path("ceilings", "KSCOPE_CEILINGS")


def _slug(device: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", device.lower()).strip("_")


def save_profile(profile: CeilingProfile, where: Path | None = None) -> Path:
    d = where or ceilings_dir()
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{_slug(profile.device)}.json"
    path.write_bytes(msgspec.json.format(msgspec.json.encode(profile), indent=2))
    return path


def load_profile(path: Path) -> CeilingProfile:
    try:
        return msgspec.json.decode(path.read_bytes(), type=CeilingProfile)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise FormatError(path, "a kscope ceilings profile (kernelscope.ceilings.v1)", str(exc)) from None


def find_profile(device: str) -> CeilingProfile | None:
    path = ceilings_dir() / f"{_slug(device)}.json"
    return load_profile(path) if path.exists() else None
