"""The GPU spec database: ``kernelscope/data/hw/*.yaml``, every value cited or ``UNKNOWN``."""

from __future__ import annotations

import re
import shutil
import subprocess
from functools import cache
from importlib import resources

import msgspec
import yaml

from kernelscope.errors import InputError
from kernelscope.model.records import DeviceInfo


class SpecValue(msgspec.Struct, kw_only=True, omit_defaults=True):
    value: float | int | str | None  # a number, None (not applicable) or "UNKNOWN"
    unit: str = ""
    source: str = ""
    section: str = ""
    note: str = ""
    derived: str = ""

    @property
    def known(self) -> bool:
        return isinstance(self.value, (int, float)) and not isinstance(self.value, bool)


class GpuSpec(msgspec.Struct, kw_only=True):
    key: str  # file stem: h100_sxm
    name: str
    vendor: str
    arch: str
    aliases: list[str] = msgspec.field(default_factory=list)
    specs: dict[str, SpecValue] = msgspec.field(default_factory=dict)

    def number(self, field: str) -> float | None:
        v = self.specs.get(field)
        return float(v.value) if v is not None and v.known else None  # type: ignore[arg-type]


class GpuSpecs(msgspec.Struct, kw_only=True):
    """``kscope hw --json``: the GPUs asked for, and the one detected here (None: none found)."""

    schema: str = "kernelscope.hw.v1"
    detected: str | None
    gpus: list[GpuSpec]


def _spec(v: dict[str, object]) -> SpecValue:
    value = v.get("value")
    return SpecValue(
        value=value if isinstance(value, (int, float, str)) else None,
        **{f: str(v.get(f) or "") for f in ("unit", "source", "section", "note", "derived")},
    )


@cache
def database() -> dict[str, GpuSpec]:
    out: dict[str, GpuSpec] = {}
    folder = resources.files("kernelscope.data").joinpath("hw")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yaml"):
            continue
        doc = yaml.safe_load(entry.read_text()) or {}
        specs = {k: _spec(v) for k, v in (doc.get("specs") or {}).items() if isinstance(v, dict)}
        key = entry.name.removesuffix(".yaml")
        out[key] = GpuSpec(
            key=key,
            name=str(doc.get("name", key)),
            vendor=str(doc.get("vendor", "")),
            arch=str(doc.get("arch", "")),
            aliases=[str(a) for a in doc.get("aliases") or []],
            specs=specs,
        )
    return out


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", s.lower()).strip()


def lookup(name: str) -> GpuSpec:
    """An entry by key, name or alias (case and punctuation ignored); a device name as torch prints it."""
    db = database()
    want = _norm(name)
    for spec in db.values():
        if want in (_norm(spec.key), _norm(spec.name), *(_norm(a) for a in spec.aliases)):
            return spec
    hits = [s for s in db.values() if any(want in _norm(x) or _norm(x) in want for x in (s.name, *s.aliases))]
    if len(hits) == 1:
        return hits[0]
    known = ", ".join(sorted(s.name for s in db.values()))
    raise InputError(f"{name}: not in the hardware database ({'ambiguous' if hits else 'unknown'}; known: {known})")


# how far a device's reported memory and clock may sit from the datasheet's and still be that product: drivers
# report usable memory (less than the stacks hold, a VF less again) and vendors mix GB and GiB
_MEMORY_SLACK, _CLOCK_SLACK = 0.10, 0.03


def identify(device: DeviceInfo) -> GpuSpec | None:
    """The one database entry a device's reported properties fit, for traces that name no product (ROCm
    PyTorch on some drivers writes ``"name": ""``; JAX's XPlane never names one): the architecture (or the
    compute capability: HIP reports gfx942 as 9.4), then the compute units, memory size and clock each rule
    out the entries whose cited value disagrees. An entry whose value is UNKNOWN is never ruled out, so two
    products the facts cannot tell apart (MI350X and MI355X without a clock) give None, never a guess."""
    family = device.arch or _family(device)
    if family is None:
        return None
    fits = [
        s
        for s in database().values()
        if s.vendor == device.vendor
        and (s.arch == family if device.arch else s.arch.startswith(family))
        and _agrees(s.number("compute_units"), device.compute_units, 0.0)
        and _agrees_memory(s.number("memory_gb"), device.memory_bytes)
        and _agrees(s.number("boost_clock_mhz"), device.clock_mhz, _CLOCK_SLACK)
    ]
    return fits[0] if len(fits) == 1 else None


def with_product(device: DeviceInfo) -> DeviceInfo:
    """``device`` with ``product`` (and, where unknown, ``arch``) from ``identify`` when it names no product."""
    spec = None if device.name else identify(device)
    if spec is None:
        return device
    return msgspec.structs.replace(device, product=spec.name, arch=device.arch or spec.arch or None)


def _family(device: DeviceInfo) -> str | None:
    """Architecture prefix from a compute capability: NVIDIA 9.0 is sm_90; AMD 9.4 is gfx94x (gfx940-942)."""
    m = re.fullmatch(r"(\d+)\.(\d+)", device.compute_capability or "")
    if m is None:
        return None
    major, minor = m.groups()
    return {"nvidia": f"sm_{major}{minor}", "amd": f"gfx{major}{minor}"}.get(device.vendor)


def _agrees(cited: float | None, reported: int | None, slack: float) -> bool:
    return cited is None or reported is None or abs(reported - cited) <= slack * cited


def _agrees_memory(cited_gb: float | None, reported_bytes: int | None) -> bool:
    if cited_gb is None or reported_bytes is None:
        return True
    return any(abs(reported_bytes - cited_gb * unit) <= _MEMORY_SLACK * cited_gb * unit for unit in (1e9, 2**30))


def detect() -> str | None:
    """The present GPU's product name, from nvidia-smi or rocm-smi (no GPU: None)."""
    for cmd in (["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], ["rocm-smi", "--showproductname"]):
        if shutil.which(cmd[0]) is None:
            continue
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=20)
        if proc.returncode != 0:
            continue
        if cmd[0] == "nvidia-smi":
            first = proc.stdout.strip().splitlines()
            return first[0].strip() if first else None
        m = re.search(r"Card (?:series|SKU|model)\s*:\s*(.+)", proc.stdout)
        if m:
            return m.group(1).strip()
    return None
