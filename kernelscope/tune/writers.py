"""Winners written back where kernels read them: the fused-MoE Triton JSON that vLLM and SGLang load, a
generic JSON that ``kernelscope/tune/loader.py`` reads, and PyTorch TunableOp results CSVs.

vLLM (``fused_moe.get_config_file_name``) and SGLang name a file ``E={E},N={N},device_name={device}`` then
``,dtype={dtype}`` when the kernel has a dtype, ``,block_shape=[n,k]`` when both block sizes are non-zero,
``.json``; ``device`` is ``torch.cuda.get_device_name()`` with spaces as underscores. They differ in small
ways, kept as data in ``_FLAVORS``: vLLM maps any ``H200`` part of the name to ``NVIDIA_H200`` and writes
the block shape without spaces (``[128,128]``); SGLang keeps the full name, writes Python's list text
(``[128, 128]``), adds ``,per_channel_quant=True`` and reads from ``configs/triton_X_Y_Z/``. Both read the
file as ``{"<batch size>": config}`` and use the stored batch size closest to the actual one.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kernelscope.errors import FormatError, InputError
from kernelscope.loop.workspace import write_atomic
from kernelscope.model.tunableop import Gemm, Results, Solution
from kernelscope.model.tune import Best, Params, TuneResult, Value, label

GENERIC_SCHEMA = "kernelscope.tune-configs.v1"
TRITON_KEYS = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps", "num_stages")
Flavor = Literal["vllm", "sglang"]


@dataclass(frozen=True)
class _Flavor:
    h200_alias: bool  # every H200 variant shares one file name
    block_sep: str  # between the two block sizes
    per_channel: bool  # the name carries ,per_channel_quant=True


_FLAVORS: dict[Flavor, _Flavor] = {
    "vllm": _Flavor(h200_alias=True, block_sep=",", per_channel=False),
    "sglang": _Flavor(h200_alias=False, block_sep=", ", per_channel=True),
}


def device_file_name(device: str, flavor: Flavor = "vllm") -> str:
    """The ``device_name`` part of a file name for the GPU ``torch.cuda.get_device_name()`` calls ``device``."""
    name = device.replace(" ", "_")
    if _FLAVORS[flavor].h200_alias and "H200" in name.split("_"):
        return "NVIDIA_H200"
    return name


def _block_shape(value: Value) -> list[int] | None:
    """``[128, 128]``, ``128,128`` or ``128x128`` as two ints; None when absent or either is 0 (no blocks)."""
    sizes = [int(n) for n in re.findall(r"\d+", str(value))]
    if len(sizes) != 2:
        raise InputError(f"block_shape={value!r}: expected two block sizes, e.g. [128,128]")
    return sizes if all(sizes) else None


def triton_file_name(family: Params, device: str, flavor: Flavor = "vllm") -> str:
    """The file vLLM/SGLang look for, from a family's ``E``, ``N`` and optional ``dtype``/``block_shape``."""
    f = _FLAVORS[flavor]
    missing = [n for n in ("E", "N") if n not in family]
    if missing:
        raise InputError(f"shape {label(family)}: the fused-MoE file name needs {' and '.join(missing)}")
    name = f"E={family['E']},N={family['N']},device_name={device_file_name(device, flavor)}"
    if family.get("dtype"):
        name += f",dtype={family['dtype']}"
    blocks = _block_shape(family["block_shape"]) if "block_shape" in family else None
    if blocks:
        name += f",block_shape=[{blocks[0]}{f.block_sep}{blocks[1]}]"
    if f.per_channel and family.get("per_channel_quant") is True:
        name += ",per_channel_quant=True"
    return name + ".json"


def _device(result: TuneResult) -> str:
    device = result.environment.get("device", "")
    if not device:
        raise InputError("the tune result records no device name; the files are named after the GPU that ran it")
    return device


def _batch(best: Best, batch: str) -> int:
    value = best.shape.get(batch)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(f"shape {label(best.shape)}: expected an integer batch size {batch}=..., found {value!r}")
    return value


def write_triton_json(
    result: TuneResult,
    out_dir: Path,
    *,
    batch: str = "M",
    family: list[str] | None = None,
    flavor: Flavor = "vllm",
) -> list[Path]:
    """Write each shape family's winners as ``{"<batch>": {BLOCK_SIZE_M: .., ...}}`` in ``out_dir``.

    ``family`` (default: every shape name but ``batch``) groups the winners into files; a name that is
    neither in the family nor the batch must be constant within a file. Two families that land on the
    same file name (a family name the file name cannot carry, like ``K``) are refused rather than merged.
    Existing files of the same name are replaced. Returns the paths written, in file-name order.
    """
    device = _device(result)
    files: dict[str, dict[int, Params]] = {}
    owner: dict[str, str] = {}
    for best in result.best:
        names = family if family is not None else [n for n in best.shape if n != batch]
        absent = [n for n in names if n not in best.shape]
        if absent:
            raise InputError(f"shape {label(best.shape)}: no family name {', '.join(absent)}")
        fam = {n: best.shape[n] for n in names}
        name = triton_file_name(fam, device, flavor)
        if owner.setdefault(name, label(fam)) != label(fam):
            raise InputError(
                f"{name}: both families {owner[name]} and {label(fam)} would be written to it; the file name "
                "carries only E, N, dtype and block_shape, so tune the others separately or pass family=[...]"
            )
        missing = [k for k in TRITON_KEYS if k not in best.config]
        if missing:
            raise InputError(f"config {label(best.config)}: the fused-MoE kernel needs {', '.join(missing)}")
        m = _batch(best, batch)
        if m in files.setdefault(name, {}):
            raise InputError(f"{name}: two winners for {batch}={m}; the shapes differ in a name outside the family")
        files[name][m] = best.config
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in sorted(files):
        doc = {str(m): files[name][m] for m in sorted(files[name])}
        written.append(_write(out_dir / name, json.dumps(doc, indent=4) + "\n"))
    return written


def write_generic(result: TuneResult, path: Path) -> Path:
    """Every winner with its shape and median: the file ``loader.configs_for``/``prune_configs`` read."""
    doc = {
        "schema": GENERIC_SCHEMA,
        "device": _device(result),
        "kernel": result.target,
        "configs": [
            {"shape": b.shape, "config": b.config, "median_us": b.median_us, "tie": bool(b.tie)} for b in result.best
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    return _write(path, json.dumps(doc, indent=2) + "\n")


def _write(path: Path, text: str) -> Path:
    try:
        write_atomic(path, text.encode())
    except OSError as exc:
        raise InputError(f"{path}: cannot write ({exc.strerror or exc})") from None
    return path


# TunableOp CSV. PyTorch splits lines on every comma and ignores fields past the fourth, so the
# BLAS_PARAMS field (which holds commas) is cut off whole before splitting.
VALIDATOR = "Validator"
_BLAS = ",BLAS_PARAMS:"
_ROW = "OpSignature,ParamSignature,SolutionName[,TimeMs]"


def _fields(line: str) -> tuple[list[str], str]:
    head, sep, blas = line.partition(_BLAS)
    return head.split(","), blas.strip() if sep else ""


def _lines(path: Path) -> list[tuple[int, str]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def read_tunableop(path: Path) -> Results:
    """A TunableOp results CSV, checked: Validator lines (``PT_VERSION`` at least) and well-formed rows.

    Raises ``FormatError`` naming the first malformed line, or the file when it has no validators
    (PyTorch would reject such a file at load time).
    """
    validators: dict[str, str] = {}
    solutions: list[Solution] = []
    for n, line in _lines(path):
        fields, blas = _fields(line)
        if fields[0] == VALIDATOR:
            if len(fields) < 3 or not fields[1]:
                raise FormatError(f"{path}:{n}", "Validator,KEY,VALUE", repr(line[:120]))
            validators[fields[1]] = fields[2]
            continue
        time = _time(fields[3]) if len(fields) >= 4 else None
        if len(fields) < 3 or not all(fields[:3]) or (time is not None and math.isnan(time)):
            raise FormatError(f"{path}:{n}", _ROW, repr(line[:120]))
        gemm = Gemm(op=fields[0], params=fields[1], blas=blas)
        solutions.append(Solution(gemm=gemm, solution=fields[2], time_ms=time))
    if "PT_VERSION" not in validators:
        raise FormatError(
            path,
            "TunableOp results with Validator lines (PT_VERSION at least)",
            "none",
            "use the file TunableOp wrote; PyTorch rejects results without the validators of its build",
        )
    return Results(validators=validators, solutions=solutions)


def _time(text: str) -> float:
    """A TimeMs field; NaN when it is not a finite number (the caller reports the line)."""
    try:
        value = float(text) if text else 0.0
    except ValueError:
        return math.nan
    return value if math.isfinite(value) else math.nan


def read_untuned(path: Path) -> list[Gemm]:
    """The GEMMs a record-untuned run wrote (``OpSignature,ParamSignature[,BLAS_PARAMS: ...]``), in order,
    duplicates dropped."""
    seen: dict[tuple[str, str], Gemm] = {}
    for n, line in _lines(path):
        fields, blas = _fields(line)
        if fields[0] == VALIDATOR:
            continue
        if len(fields) < 2 or not fields[0] or not fields[1]:
            raise FormatError(f"{path}:{n}", "OpSignature,ParamSignature", repr(line[:120]))
        gemm = Gemm(op=fields[0], params=fields[1], blas=blas)
        seen.setdefault(gemm.key, gemm)
    return list(seen.values())


def write_untuned(gemms: Sequence[Gemm], path: Path) -> Path:
    """GEMMs in the untuned-file format ``tune_gemm_in_file`` reads."""
    text = "".join(",".join([g.op, g.params, *([f"BLAS_PARAMS: {g.blas}"] if g.blas else [])]) + "\n" for g in gemms)
    return _write(path, text)


def write_tunableop(results: Results, path: Path) -> Path:
    """A results CSV PyTorch loads: the validators first, then one row per GEMM.

    The validators must be those of the run that tuned the rows (``read_tunableop`` of its own output):
    PyTorch rejects the whole file when any differs from the running build, so none is ever made up here.
    """
    if "PT_VERSION" not in results.validators:
        raise InputError(
            f"{path}: no PT_VERSION validator to write; take the validators from the results file the tuning run wrote"
        )
    lines = [f"{VALIDATOR},{k},{v}" for k, v in results.validators.items()]
    for s in results.solutions:
        fields = [s.gemm.op, s.gemm.params, s.solution]
        if s.time_ms is not None or s.gemm.blas:
            fields.append(str(s.time_ms or 0.0))
        if s.gemm.blas:
            fields.append(f"BLAS_PARAMS: {s.gemm.blas}")
        lines.append(",".join(fields))
    path.parent.mkdir(parents=True, exist_ok=True)
    return _write(path, "\n".join(lines) + "\n")
