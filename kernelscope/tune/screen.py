"""Screening before timing: compile each config of a Triton kernel offline for the target architecture (no
GPU needed), read the code object with kscope's own reader, and drop what cannot run or cannot win.

A candidate is dropped, with the reason in its ``Outcome.detail``, when its kernel

- does not compile (``compile_error``: the compiler's message, or "compile timed out"),
- needs more registers, shared memory/LDS or threads per block than the architecture has (``pruned``; Triton
  compiles such a config and fails only when it is loaded on the GPU),
- has zero occupancy (``pruned``), or
- spills while a spill-free config of the same shape compiled (``pruned``).

Each compile gets what Triton's JIT would give it for that candidate on a typical launch: the config's
constexprs and options, the shape's values for the kernel's arguments (a constexpr, or an int the JIT
specializes: 1 becomes a constant, a multiple of 16 is marked divisible), pointers as a fresh tensor's
(16-byte aligned), and the user's ``signature`` for the types and hints no shape gives (strides, mostly).
Candidates that would compile the same code share one compile. Each compile runs in its own process (its own
process group), killed at its timeout.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import msgspec

from kernelscope.analyses.occupancy import ArchLimits, arch_limits, nvidia_shared, occupancy
from kernelscope.codeobj.read import read_code_objects
from kernelscope.errors import InputError, KernelscopeError, ToolFailedError, one_line
from kernelscope.model.codeobj import KernelCode
from kernelscope.model.tune import Candidate, Outcome, Params, Space, Value, key, label
from kernelscope.timing import load_object
from kernelscope.tune.space import enumerate_candidates
from kernelscope.tune.triton_target import require_triton

Progress = Callable[[int, int], None]  # compiles done, compiles in all
_MESSAGE_CHARS = 400


class Compile(msgspec.Struct, frozen=True, kw_only=True):
    """One offline compile: everything ``triton.compile`` is given. ``attrs``: an argument's specialization
    in the JIT's letters (``D`` divisible by 16, ``S`` AMD's 32-bit pointer range)."""

    spec: str
    target: tuple[str, str | int, int]  # triton's GPUTarget(backend, arch, warp size)
    signature: dict[str, str]
    constexprs: dict[str, Any]
    attrs: dict[str, str]
    options: dict[str, Value]

    @property
    def ident(self) -> str:
        return msgspec.json.encode(self, order="sorted", enc_hook=repr).decode()


@dataclass(frozen=True)
class Failed:
    kind: Literal["compile", "tool"]  # the candidate's own failure, or the reader's (every candidate's)
    message: str


@dataclass(frozen=True)
class Screening:
    """``dropped``: by ``Candidate.id``, every candidate that need not be timed (``sweep.Options.pruned``).
    ``kernels``: by ``Candidate.id``, every candidate that compiled, as kscope read its code object (registers,
    spills, shared memory, occupancy): the kept ones' resources. ``compiles``: distinct compiles run."""

    dropped: dict[str, Outcome]
    kernels: dict[str, KernelCode]
    compiles: int


def gpu_target(lim: ArchLimits) -> tuple[str, str | int, int]:
    """Triton's ``GPUTarget`` arguments for an architecture kscope has data for."""
    if lim.vendor == "nvidia":
        return ("cuda", int(lim.arch.removeprefix("sm_")), int(lim.get("warp_size") or 32))
    return ("hip", lim.arch, int(lim.get("wave_size") or 32))  # RDNA's data has both wave sizes: Triton uses 32


Heuristic = Callable[[dict[str, Any]], Any]


def jit_function(spec: str) -> tuple[Any, list[dict[str, Heuristic]]]:
    """The JIT function a spec names, through ``@triton.autotune`` and ``@triton.heuristics``, and the
    heuristics' tables, outermost first (the order they run in)."""
    require_triton()
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    obj = load_object(spec)
    heuristics: list[dict[str, Heuristic]] = []
    while not isinstance(obj, JITFunction):
        if not isinstance(obj, (Autotuner, Heuristics)):
            raise InputError(f"{spec}: expected a @triton.jit or @triton.autotune kernel, found {type(obj).__name__}")
        if isinstance(obj, Heuristics):
            heuristics.append(obj.values)
        obj = obj.fn
    return obj, heuristics


class Planner:
    """What each candidate of the kernel a spec names is compiled with: its config and shape as Triton's JIT
    would pass them (``job``)."""

    def __init__(self, spec: str, signature: Mapping[str, str], target: tuple[str, str | int, int]) -> None:
        from triton import knobs

        self.spec, self.signature, self.target = spec, dict(signature), target
        obj, self.heuristics = jit_function(spec)
        self.params = obj.params
        names = [p.name for p in self.params]
        unknown = sorted(set(signature) - set(names))
        if unknown:
            raise InputError(
                f"{spec}: signature names {', '.join(unknown)}, not arguments of {obj.__name__}{tuple(names)}"
            )
        # a fresh tensor is 16-byte aligned; on AMD with buffer ops on (AMDGCN_USE_BUFFER_OPS) the JIT also marks
        # one under 2 GB ("S"): the pointer attributes a launch with typical tensors gets
        self.pointer = "DS" if target[0] == "hip" and getattr(knobs.amd, "use_buffer_ops", False) else "D"

    def job(self, config: Params, shape: Params) -> Compile:
        values: dict[str, Any] = {**shape, **config}
        for table in self.heuristics:
            for name, heuristic in table.items():
                try:
                    values[name] = heuristic(dict(values))
                except Exception as exc:
                    raise InputError(
                        f"{self.spec}: heuristic {name!r} failed on {label(values)} ({type(exc).__name__}: {exc}); "
                        "name the arguments it reads in the shape"
                    ) from None
        signature: dict[str, str] = {}
        constexprs: dict[str, Any] = {}
        attrs: dict[str, str] = {}
        untyped: list[str] = []
        for p in self.params:
            if p.is_constexpr:
                if p.name not in values and not p.has_default:
                    raise InputError(f"{self.spec}: constexpr {p.name} is set by neither the config nor the shape")
                signature[p.name], constexprs[p.name] = "constexpr", values.get(p.name, p.default)
                continue
            kind, _, hint = self.signature.get(p.name, "").partition(":")
            if hint not in ("", "1", "16"):
                raise InputError(f"{self.spec}: signature {p.name}: {self.signature[p.name]!r}, hints are :16 or :1")
            value = values.get(p.name, int(hint) if hint else None)  # a hint stands for a value: 1 or a multiple of 16
            if kind.startswith("*"):
                if not p.do_not_specialize_on_alignment:
                    attrs[p.name] = self.pointer
            elif isinstance(value, bool):
                kind = kind or "u1"  # the JIT never specializes bools or floats
            elif isinstance(value, float):
                kind = kind or "fp32"
            elif isinstance(value, int):
                kind = kind or _int_type(value)
                if value == 1 and not p.do_not_specialize:  # the JIT passes a 1 as a constant
                    signature[p.name], constexprs[p.name] = "constexpr", 1
                    continue
                if value % 16 == 0 and not (p.do_not_specialize or p.do_not_specialize_on_alignment):
                    attrs[p.name] = "D"
            if not kind:
                untyped.append(p.name)
            signature[p.name] = kind
        if untyped:
            example = ", ".join(f"{n}: {'*fp16' if 'ptr' in n else 'i32'}" for n in untyped[:3])
            raise InputError(
                f"{self.spec}: no Triton type for {', '.join(untyped)}: add them to the space's signature "
                f"(signature: {{{example}}}) or give their values in the shape"
            )
        names = {p.name for p in self.params}
        options = {k: v for k, v in config.items() if k not in names}
        return Compile(
            spec=self.spec, target=self.target, signature=signature, constexprs=constexprs, attrs=attrs, options=options
        )


def _int_type(value: int) -> str:
    """The JIT's type for an int argument."""
    if -(2**31) <= value < 2**31:
        return "i32"
    return "u64" if value >= 2**63 else "i64"


def _message(exc: BaseException) -> str:
    """The compiler's error as one line: its position (``at 15:38``) and its last line that says what went
    wrong (a Triton CompilationError ends with it, a ptxas error puts a repro command after it). Triton
    before 3.5 ends a CompilationError with the caret under the source: what went wrong is its cause."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip() and not ln.startswith("Repro command")]
    where = lines[0].rstrip(":") + ": " if lines and re.fullmatch(r"at \d+:\d+:", lines[0]) else ""
    what = lines[-1] if lines else ""
    if not what.strip("^~ ") and exc.__cause__ is not None:
        what = one_line(str(exc.__cause__)).strip() or what
    text = f"{type(exc).__name__} {where}{what}".strip()
    return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 3] + "..."


def hip_linker() -> None:
    """Triton before 3.5 links AMD code objects with an external ld.lld (TRITON_HIP_LLD_PATH, ROCm's, or
    /usr/bin/ld.lld): without ROCm, the system's LLVM lld (Debian: ``apt install lld-19``). Later Tritons
    link in-process and read no such variable."""
    if os.environ.get("TRITON_HIP_LLD_PATH") or any(Path(p).exists() for p in _TRITON_LLDS):
        return
    found = shutil.which("ld.lld") or next(iter(sorted(glob.glob("/usr/lib/llvm-*/bin/ld.lld"), reverse=True)), None)
    if found:
        os.environ["TRITON_HIP_LLD_PATH"] = found


_TRITON_LLDS = ("/opt/rocm/llvm/bin/ld.lld", "/usr/bin/ld.lld")


def _compile(job: Compile) -> KernelCode | Failed:
    """In the compile process: the kernel compiled and its code object read back by kscope."""
    if job.target[0] == "hip":
        hip_linker()
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend

    fn, _ = jit_function(job.spec)
    target = GPUTarget(*job.target)
    backend = make_backend(target)
    attrs = {(fn.arg_names.index(n),): backend.parse_attr(desc) for n, desc in job.attrs.items()}
    try:
        src = ASTSource(fn, signature=job.signature, constexprs=job.constexprs, attrs=attrs)
        compiled = triton.compile(src, target=target, options=dict(job.options))
    except Exception as exc:  # the compiler rejecting this config is this candidate's verdict
        return Failed("compile", _message(exc))
    binary = "hsaco" if "hsaco" in compiled.asm else "cubin"
    meta = compiled.metadata
    with tempfile.TemporaryDirectory(prefix="kscope-screen-") as tmp:
        path = Path(tmp, f"{meta.name}.{binary}")
        path.write_bytes(compiled.asm[binary])
        # beside the binary as in Triton's cache, where kscope's reader takes num_warps and shared from
        path.with_suffix(".json").write_text(
            json.dumps({"name": meta.name, "num_warps": meta.num_warps, "shared": meta.shared})
        )
        try:
            objs = read_code_objects([path])
        except KernelscopeError as exc:
            return Failed("tool", str(exc))
    return next(k for o in objs for k in o.kernels if k.name == meta.name)


def main() -> None:
    """The compile process: one pickled ``Compile`` on stdin, one pickled ``KernelCode | Failed`` on stdout."""
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the compiler's and the user's prints go to stderr, never into the channel
    pickle.dump(_compile(pickle.load(sys.stdin.buffer)), channel)
    channel.close()


def _isolated(job: Compile, timeout_s: float) -> KernelCode | Failed:
    """``job`` compiled in a fresh process (Triton starts clean; nothing of the caller's ``__main__`` is
    re-imported) in its own process group, so a timeout kills the compiler's children (ptxas, ld.lld) too."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "from kernelscope.tune.screen import main; main()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(pickle.dumps(job), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return Failed("compile", f"compile timed out after {timeout_s:g} s")
    if proc.returncode != 0 or not out:
        last = (err.decode("utf-8", errors="replace").strip().splitlines() or ["no message"])[-1]
        return Failed("compile", one_line(f"the compile process failed (exit status {proc.returncode}): {last}"))
    return pickle.loads(out)  # type: ignore[no-any-return]  # our own child's answer


# what a kernel may not exceed, per vendor: (resource, the arch data's limit, unit), in the order _over checks
_LIMITS = {
    "amd": (
        ("VGPRs", "max_vgprs_per_wave", ""),
        ("LDS per workgroup", "max_lds_per_workgroup_bytes", " B"),
        ("threads per block", "max_workgroup_size", ""),
    ),
    "nvidia": (
        ("registers per thread", "max_registers_per_thread", ""),
        ("shared memory per block", "max_shared_per_block_bytes", " B"),
        ("threads per block", "max_threads_per_block", ""),
    ),
}


def _usage(k: KernelCode, lim: ArchLimits) -> tuple[int | None, int]:
    """Registers per thread (AMD: VGPRs, AGPRs included) and shared bytes per block: static plus Triton's."""
    dynamic = k.metadata.get("shared")
    shared = dynamic if isinstance(dynamic, int) else 0
    if k.vendor == "amd":
        return k.vgpr, (k.lds_bytes or 0) + shared
    return k.registers, nvidia_shared(k, lim)[0] + shared


def _over(k: KernelCode, lim: ArchLimits) -> str | None:
    """The first resource this kernel needs beyond its architecture's limit, said with both numbers."""
    registers, shared = _usage(k, lim)
    warps = k.metadata.get("num_warps")
    block = warps * (k.wave_size or int(lim.get("warp_size") or 32)) if isinstance(warps, int) else None
    for (what, field, unit), used in zip(_LIMITS[k.vendor], (registers, shared, block), strict=True):
        limit = lim.get(field)
        if used is not None and limit and used > limit:
            return f"{what} {used:,}{unit} > {lim.arch}'s limit {limit:,}{unit}"
    occ = k.occupancy
    if occ is not None and occ.blocks_per_cu == 0:
        return f"zero occupancy on {lim.arch} (limited by {occ.limiter})"
    return None


def _spills(k: KernelCode) -> str | None:
    if k.vendor == "amd":
        n = (k.vgpr_spill or 0) + (k.sgpr_spill or 0)
        return f"spills {n} registers ({k.scratch_bytes or 0} B scratch per lane)" if n else None
    local = (k.local_bytes or 0) + (k.stack_bytes or 0)  # Triton kernels have no local arrays: this is spilling
    return f"spills to local memory ({local:,} B per thread)" if local else None


def screen(
    spec: str,
    space: Space,
    shapes: Sequence[Params],
    *,
    signature: Mapping[str, str],
    arch: str,
    workers: int = 2,
    timeout_s: float = 120.0,
    progress: Progress | None = None,
) -> Screening:
    """Compile every candidate of ``space`` x ``shapes`` that its constraints allow for ``arch`` (``gfx942``,
    ``sm_90``...) and judge it from its code object.

    Args:
        spec: ``FILE.py:KERNEL`` or ``MODULE:KERNEL``, a ``@triton.jit`` or ``@triton.autotune`` kernel.
        signature: the Triton type of each runtime argument no shape gives a value for (``Space.signature``).
        workers: compiles at once, each in its own process (compiling is CPU-bound and single-threaded).
        timeout_s: per compile; a compile still running then is killed and is that candidate's
            ``compile_error``.
        progress: called with (compiles done, compiles in all) after each compile.
    """
    lim = arch_limits(arch)
    if lim is None:
        folder = resources.files("kernelscope.data").joinpath("arch")
        known = sorted(f.name.removesuffix(".yaml") for f in folder.iterdir() if f.name.endswith(".yaml"))
        raise InputError(f"--arch {arch}: kscope has no limits for this architecture (it has {', '.join(known)})")
    if workers < 1:
        raise InputError(f"workers {workers}: expected at least 1")
    planner = Planner(spec, signature, gpu_target(lim))
    jobs: dict[str, Compile] = {}
    candidates: list[tuple[Candidate, str]] = []
    for cand, broken in enumerate_candidates(space, shapes):
        if broken is None:  # the sweep skips it already
            job = planner.job(cand.config, cand.shape)
            jobs.setdefault(job.ident, job)
            candidates.append((cand, job.ident))
    results = _run(jobs, workers, timeout_s, progress)
    tool = next((r for r in results.values() if isinstance(r, Failed) and r.kind == "tool"), None)
    if tool is not None:
        raise ToolFailedError(f"screen: reading a compiled {lim.arch} kernel: {tool.message}")
    return _verdicts(candidates, results, lim, len(jobs))


def _run(
    jobs: dict[str, Compile], workers: int, timeout_s: float, progress: Progress | None
) -> dict[str, KernelCode | Failed]:
    out: dict[str, KernelCode | Failed] = {}
    with ThreadPoolExecutor(workers) as pool:  # threads only wait: each compile is its own process
        futures = {pool.submit(_isolated, job, timeout_s): ident for ident, job in jobs.items()}
        for future in as_completed(futures):
            out[futures[future]] = future.result()
            if progress is not None:
                progress(len(out), len(jobs))
    return out


def _verdicts(
    candidates: list[tuple[Candidate, str]], results: dict[str, KernelCode | Failed], lim: ArchLimits, compiles: int
) -> Screening:
    dropped: dict[str, Outcome] = {}
    kernels: dict[str, KernelCode] = {}
    compiled = {ident: r for ident, r in results.items() if isinstance(r, KernelCode)}
    for k in compiled.values():
        k.occupancy = occupancy(k)  # from Triton's num_warps and shared, which the reader took from the metadata
    reasons = {ident: _over(k, lim) for ident, k in compiled.items()}
    spill_free = {
        key(c.shape)
        for c, ident in candidates
        if ident in compiled and reasons[ident] is None and not _spills(compiled[ident])
    }
    for cand, ident in candidates:
        r = results[ident]
        if isinstance(r, Failed):
            dropped[cand.id] = Outcome(shape=cand.shape, config=cand.config, status="compile_error", detail=r.message)
            continue
        kernels[cand.id] = r
        spills = _spills(r)
        why = reasons[ident] or (
            f"{spills} while a spill-free config of this shape compiled"
            if spills and key(cand.shape) in spill_free
            else None
        )
        if why:
            registers, shared = _usage(r, lim)
            dropped[cand.id] = Outcome(
                shape=cand.shape,
                config=cand.config,
                status="pruned",
                detail=why,
                registers=registers,
                shared_bytes=shared,
            )
    return Screening(dropped=dropped, kernels=kernels, compiles=compiles)
