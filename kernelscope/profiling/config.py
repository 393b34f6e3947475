"""The ``kscope profile`` configuration: workload, environment, step window, tracer, source repos.

A YAML or TOML file (``--config``) holds what a benchmark run needs, like Magpie's benchmark config;
command-line options override it. Every field is validated; unknown keys are an error, not ignored.
"""

from __future__ import annotations

import shlex
import tomllib
from pathlib import Path
from typing import Annotated, Literal

import msgspec
import yaml

from kernelscope.errors import FormatError

Tracer = Literal["auto", "torch", "nsys", "rocprofv3", "ncu", "att"]


class StepWindow(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """Which profiler steps to trace (torch tracer): skip ``wait``, warm up ``warmup``, record ``active``.

    ``step_fn``: ``optimizer`` (every optimizer step is a step), ``none`` (trace the whole run), or a
    callable ``pkg.module:Class.method`` whose every call ends a step (e.g. a decode step in inference).
    """

    wait: int = 5
    warmup: int = 2
    active: int = 5
    step_fn: str = "optimizer"


class SourceRepo(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """A source repository to search when naming kernels later (kernel identity and source finder)."""

    path: str
    name: str | None = None


class KernelFilter(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """Which launches the per-kernel tracers (``ncu``, ``att``) capture: they replay or trace every
    launch they see, so an unfiltered run of a real workload takes hours and gigabytes.

    ``regex`` matches the kernel's function name; ``skip`` launches of it are passed over, then
    ``count`` are captured.
    """

    regex: str | None = None
    skip: int = 0
    count: int = 1


class NcuOptions(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """Nsight Compute: ``full`` carries the source counters (per-instruction stall samples) and the
    roofline metrics; ``import_source`` embeds the source files so lines resolve on another machine."""

    set: str = "full"
    import_source: bool = True


class AttOptions(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """rocprofv3 thread trace: the documented typical values (rocprofiler-sdk "Using thread trace")."""

    target_cu: int = 1
    shader_engine_mask: str = "0x1"
    simd_select: str = "0xF"
    buffer_size: str = "0x6000000"  # 96 MB, shared by all traced SEs


class ProfileConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    command: list[str] = msgspec.field(default_factory=list)
    env: dict[str, str] = msgspec.field(default_factory=dict)
    cwd: str | None = None
    tracer: Tracer = "auto"
    out_dir: str = "kscope-out"
    timeout_s: Annotated[float, msgspec.Meta(gt=0)] | None = None  # then the workload's process group is killed
    window: StepWindow = StepWindow()
    phase_by: str | None = None
    record_shapes: bool = True
    sources: list[SourceRepo] = msgspec.field(default_factory=list)
    kernels: KernelFilter = KernelFilter()
    ncu: NcuOptions = NcuOptions()
    att: AttOptions = AttOptions()


def load_config(path: str | Path) -> ProfileConfig:
    """Read a YAML (``.yaml``/``.yml``) or TOML (``.toml``) profile config; ``command`` may be a string."""
    p = Path(path)
    expected = "a kscope profile config (YAML or TOML: command, env, window, tracer, ...)"
    try:
        text = p.read_text()
        raw = tomllib.loads(text) if p.suffix == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise FormatError(p, expected, f"unparsable text ({exc})".replace("\n", " ")) from None
    if not isinstance(raw, dict):
        raise FormatError(p, expected, f"a {type(raw).__name__}")
    if isinstance(raw.get("command"), str):
        raw["command"] = shlex.split(raw["command"])
    try:
        return msgspec.convert(raw, ProfileConfig)
    except msgspec.ValidationError as exc:
        raise FormatError(p, expected, str(exc)) from None
