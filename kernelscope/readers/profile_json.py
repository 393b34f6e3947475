"""kernelscope's own saved profile (``Profile.save``), schema ``kernelscope.profile.v1``."""

from __future__ import annotations

from pathlib import Path

from kernelscope.model import Profile

FORMAT = "profile-json"


def read(path: Path, *, rank: int | None = None) -> Profile:
    prof = Profile.load(path)
    if rank is not None:
        import msgspec

        prof.launches = [msgspec.structs.replace(k, rank=rank) for k in prof.launches]
    return prof
