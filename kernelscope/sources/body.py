"""What a Python GPU kernel's body does — a reader of one definition in one source file (pure over its text).

The name of an engine's Triton helper rarely says what it computes (``_qkvr_qkv_kernel``,
``_fit_kpool_indices_kernel``); its body and module do: the ``tl`` operations it and the helpers
of its own file call (``dot``, ``exp2``, ``rsqrt``, ``cumsum``), its parameters (``slot_mapping``,
``expert_ids``), its docstring and the folder it lives in (``mem_cache/``, ``attention/``). This
module reads those facts; ``identity.source`` decides a category from them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath

_MAX_DEPTH = 4  # helpers of helpers: a kernel's own file rarely nests deeper


@dataclass(frozen=True)
class KernelBody:
    """The facts of one kernel definition, as words (lower-case, space-separated where several)."""

    ops: frozenset[str]  # attribute calls (``tl.dot`` -> dot, ``acc.to`` -> to), with those of same-file helpers
    helpers: tuple[str, ...]  # plain-name calls: other functions the kernel calls (``_rms_norm``, ``_attn_inner``)
    params: tuple[str, ...]  # parameter names (``slot_mapping``, ``BLOCK_M``)
    doc: str  # the docstring (the kernel's own, else its module's)
    module: str  # the file's path inside its repository (``vllm/v1/attention/ops/merge.py``)


def _calls(fn: ast.FunctionDef, defs: dict[str, ast.FunctionDef]) -> tuple[set[str], list[str]]:
    """The attribute calls and plain-name calls of ``fn`` and of the helpers in ``defs`` it reaches (each
    read once, ``_MAX_DEPTH`` levels down)."""
    ops: set[str] = set()
    helpers: list[str] = []
    seen = {fn.name}
    level = [fn]
    for _ in range(_MAX_DEPTH + 1):
        reached: list[ast.FunctionDef] = []
        for node in (n for f in level for stmt in f.body for n in ast.walk(stmt)):  # not its decorators' calls
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                ops.add(node.func.attr)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                helpers.append(node.func.id)
                if (inner := defs.get(node.func.id)) is not None and inner.name not in seen:
                    seen.add(inner.name)
                    reached.append(inner)
        level = reached
    return ops, helpers


@dataclass(frozen=True)
class _Module:
    defs: dict[str, list[ast.FunctionDef]]  # every function of the file by name, nested ones too
    top: dict[str, ast.FunctionDef]  # module-level functions: the helpers a kernel may call
    doc: str


@lru_cache(maxsize=32)  # a profile's Triton kernels come a few files at a time: each is parsed once
def _module(text: str) -> _Module | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    defs: dict[str, list[ast.FunctionDef]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            defs.setdefault(node.name, []).append(node)
    top = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    return _Module(defs, top, ast.get_docstring(tree) or "")


def _first_line(fn: ast.FunctionDef) -> int:
    return min([fn.lineno, *(d.lineno for d in fn.decorator_list)])


def kernel_body(text: str, symbol: str, line: int, path: str) -> KernelBody | None:
    """The body facts of ``def symbol`` at ``line`` (its ``def`` line, or any line of its decorators) of a
    Python file; None when the file does not parse or has no such definition."""
    module = _module(text)
    if module is None:
        return None
    fn = next((f for f in module.defs.get(symbol, ()) if _first_line(f) <= line <= f.lineno), None)
    if fn is None:
        return None
    ops, helpers = _calls(fn, module.top)
    args = fn.args
    params = tuple(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
    doc = ast.get_docstring(fn) or module.doc
    return KernelBody(
        ops=frozenset(ops),
        helpers=tuple(dict.fromkeys(h for h in helpers if h != symbol)),
        params=params,
        doc=doc,
        module=str(PurePosixPath(path)),
    )
