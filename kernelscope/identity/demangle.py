"""Batched demangling with binutils ``c++filt`` — the one place the demangler's quirks live.

Why binutils: the Python demanglers fail on the extended floating types (``DF16b``, ``DF16_``) that
every bf16/fp16 ROCm kernel carries, and so does LLVM 19's. Four gaps of binutils 2.40 are bridged here:

* ``_BitInt(N)`` (``DB8_`` — Composable Kernel's ``f8_t``) is rewritten to a vendor type
  (``u9_BitInt_8``) that ``c++filt`` prints as ``_BitInt_8``; we print it back as ``_BitInt(8)``.
* Its recursion limit, which leaves deeply nested CUTLASS 3 / CuTe symbols mangled: lifted (see ``_run``).
* C++20 template parameters declared with a type (``Tn``: ``act_and_mul_kernel<T, &silu_kernel<T>>`` built
  by a newer compiler), which binutils 2.40 cannot read: a symbol it leaves mangled is given to LLVM's
  ``llvm-cxxfilt`` (installed with the ``llvm-19`` package ``llvm-objdump`` comes from), when present.
* Truncated names (profilers cut long symbols, often mid-token): we try closing the open nesting
  levels (``E`` ... plus a ``v`` return type / parameter list) on the name cut back a few characters,
  all candidates in the same single ``c++filt`` call, and keep the longest prefix that demangles.
  The fake parameter list is dropped from the result, which ends in ``…``.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass

from kernelscope.codeobj.tools import llvm_tools
from kernelscope.errors import MissingToolError, ToolFailedError
from kernelscope.identity.mangled import template_arity
from kernelscope.process import run_tool

_BITINT = re.compile(r"D([BU])(\d+)_")
_BITINT_OUT = re.compile(r"_(Bit|UBit)Int_(\d+)")
_MANGLED = re.compile(r"^_Z[A-Za-z0-9_$.]*")
_NV_STATIC = re.compile(r"^__nv_static_\w*?_(_Z[NL0-9]\w*)$")
_MAX_CUT = 24
_MAX_CLOSE = 7
_CLOSERS = tuple("E" * k + tail for k in range(_MAX_CLOSE + 1) for tail in ("", "v", "vv", "Ev"))


@dataclass(frozen=True)
class Demangled:
    text: str  # demangled (or the input unchanged when it is not a mangled name)
    mangled: bool  # the input was an Itanium-mangled symbol
    repaired: bool = False  # demangled from a truncated prefix; text ends in "…"
    # a name no completion demangles whole: its function's template argument count, read off the symbol
    arity: int | None = None


def _vendorize(sym: str) -> str:
    def sub(m: re.Match[str]) -> str:
        ident = f"_{'Bit' if m.group(1) == 'B' else 'UBit'}Int_{m.group(2)}"
        return f"u{len(ident)}{ident}"

    return _BITINT.sub(sub, sym)


def _restore(text: str) -> str:
    return _BITINT_OUT.sub(lambda m: f"{'unsigned ' if m.group(1) == 'UBit' else ''}_BitInt({m.group(2)})", text)


def cxxfilt_path() -> str:
    path = shutil.which("c++filt")
    if path is None:
        raise MissingToolError("c++filt", "install binutils (apt install binutils)")
    return path


def _run(lines: list[str]) -> list[str]:
    if not lines:
        return []
    text = "\n".join(lines) + "\n"
    # binutils stops at 2048 nested demangler calls and leaves the symbol mangled: CUTLASS 3 / CuTe kernels
    # (a GEMM's collective mainloop and epilogue types, FlashKDA's TMA copies) nest deeper. Without the limit
    # they demangle; should a hostile symbol then crash c++filt, the batch is run again with the limit.
    proc = run_tool([cxxfilt_path(), "--no-recurse-limit"], input=text)
    if proc.returncode != 0:
        proc = run_tool([cxxfilt_path()], input=text)
    if proc.returncode != 0:
        raise ToolFailedError(f"c++filt exited with {proc.returncode}: {(proc.stderr.strip() or 'no output')[:200]}")
    out = proc.stdout.split("\n")
    return out[: len(lines)]


def _run_llvm(symbols: list[str]) -> list[str]:
    """``llvm-cxxfilt`` over symbols binutils left mangled; each line back unchanged where it fails too (or is
    not installed: the symbols then go on to the truncation repair)."""
    tools = llvm_tools("llvm-cxxfilt")
    if not symbols or not tools:
        return symbols
    proc = run_tool([tools[0]], input="\n".join(symbols) + "\n")
    out = proc.stdout.split("\n") if proc.returncode == 0 else []
    return out[: len(symbols)] if len(out) >= len(symbols) else symbols


def _symbol(name: str) -> str | None:
    """The mangled symbol inside a profiler name (``.kd`` and truncation marks stripped), or None."""
    s = name.strip()
    for suffix in (".kd", "...", "…"):
        s = s.removesuffix(suffix)
    nv = _NV_STATIC.match(s)  # nvcc's internal-linkage prefix on a mangled name
    if nv is not None:
        s = nv.group(1)
    m = _MANGLED.match(s)
    return m.group(0) if m and m.group(0) == s else None


def demangle_all(names: Iterable[str]) -> dict[str, Demangled]:
    """Demangle every distinct name with at most two ``c++filt`` processes (and one ``llvm-cxxfilt``)."""
    uniq = list(dict.fromkeys(names))
    symbols = {n: s for n in uniq if (s := _symbol(n)) is not None}
    result = {n: Demangled(n, False) for n in uniq if n not in symbols}
    if not symbols:
        return result
    keys = list(symbols)
    first = _run([_vendorize(symbols[k]) for k in keys])
    failed = []
    for k, sym, text in zip(keys, (symbols[k] for k in keys), first, strict=True):
        if text and text != _vendorize(sym):
            result[k] = Demangled(_restore(text), True)
        else:
            failed.append(k)
    llvm = _run_llvm([symbols[k] for k in failed])
    result.update({k: Demangled(text, True) for k, text in zip(failed, llvm, strict=True) if text != symbols[k]})
    result.update(_repair([k for k in failed if k not in result], symbols))
    return result


def _repair(keys: list[str], symbols: dict[str, str]) -> dict[str, Demangled]:
    """Demangle truncated symbols by closing them: one batched call over all candidate completions."""
    cands: list[tuple[str, int, str, str]] = []
    for k in keys:
        sym = _vendorize(symbols[k])
        fixed = _fix_last_length(sym)
        if fixed is not None:  # preferred: keeps the cut identifier's surviving text
            cands.extend((k, -1, fixed, fixed + c) for c in _CLOSERS)
        for cut in range(min(_MAX_CUT, len(sym) - 3) + 1):
            stem = sym[: len(sym) - cut]
            cands.extend((k, cut, stem, stem + c) for c in _CLOSERS)
    outs = _run([c[3] for c in cands])
    best: dict[str, tuple[int, str]] = {}
    for (k, cut, stem, line), text in zip(cands, outs, strict=True):
        if text and text != line and (k not in best or cut < best[k][0]) and not _swallowed(text, stem):
            best[k] = (cut, text)
    result = {}
    for k in keys:
        arity = template_arity(symbols[k])
        if k in best:
            text = _restore(best[k][1])
            text = re.sub(r"\((?:void)?\)$", "", text).rstrip() + "…"
            result[k] = Demangled(text, True, repaired=True, arity=arity)
        else:
            scanned = _scan_names(symbols[k])
            result[k] = Demangled(scanned or k, True, repaired=bool(scanned), arity=arity)
    return result


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _swallowed(text: str, stem: str) -> bool:
    """Did a length prefix eat our closing ``E``/``v`` characters as identifier text?"""
    return any(t not in stem and t.rstrip("Ev") != t for t in _IDENT.findall(text))


_SOURCE_NAME = re.compile(r"(\d+)")
_SKIP = re.compile(r"[ST][0-9A-Z]*_|L[^E]*E")
_DIGITS = re.compile(r"\d+")


def _fix_last_length(sym: str) -> str | None:
    """A symbol cut inside its last identifier, with that identifier's length prefix made true."""
    for m in reversed(list(_DIGITS.finditer(sym))):
        rest = sym[m.end() :]
        if rest and (rest[0].isalpha() or rest[0] == "_") and int(m.group()) > len(rest):
            return sym[: m.start()] + f"{len(rest)}{rest}"
    return None


def _scan_names(sym: str) -> str | None:
    """Last resort for symbols no completion demangles (e.g. C++20 ``Tn`` template parameters):
    the nested name and the identifiers of its template arguments, read straight off the
    length-prefixed source names. ``_ZN7sgl_hip10activation18act_and_mulI14__hip_bfloat16...``
    -> ``sgl_hip::activation::act_and_mul<__hip_bfloat16, …>…``.
    """
    if not sym.startswith("_ZN"):
        return None
    i, n = 3, len(sym)
    path: list[str] = []
    args: list[str] = []
    in_args = False
    while i < n and not (in_args and sym.startswith("Ev", i)):
        if sym[i].isdigit():
            m = _SOURCE_NAME.match(sym, i)
            assert m is not None
            length = int(m.group(1))
            ident = sym[m.end() : m.end() + length]
            (args if in_args else path).append(ident)
            i = m.end() + length
        elif (m := _SKIP.match(sym, i)) is not None:  # substitutions S_/S3_/T_ and literals Li32E
            i = m.end()
        elif sym[i] == "I" and path:
            in_args = True
            i += 1
        elif sym.startswith("DF16b", i):
            if in_args:
                args.append("std::bfloat16_t")
            i += 5
        else:
            i += 1
    if not path:
        return None
    return "::".join(path) + (f"<{', '.join(args)}, …>" if args else "") + "…"
