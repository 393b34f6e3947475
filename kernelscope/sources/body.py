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
from pathlib import PurePosixPath

_MAX_DEPTH = 4  # helpers of helpers: a kernel's own file rarely nests deeper, and cycles must end


@dataclass(frozen=True)
class KernelBody:
    """The facts of one kernel definition, as words (lower-case, space-separated where several)."""

    ops: frozenset[str]  # attribute calls (``tl.dot`` -> dot, ``acc.to`` -> to), with those of same-file helpers
    helpers: tuple[str, ...]  # plain-name calls: other functions the kernel calls (``_rms_norm``, ``_attn_inner``)
    params: tuple[str, ...]  # parameter names (``slot_mapping``, ``BLOCK_M``)
    doc: str  # the docstring (the kernel's own, else its module's)
    module: str  # the file's path inside its repository (``vllm/v1/attention/ops/merge.py``)


def _calls(fn: ast.FunctionDef, defs: dict[str, ast.FunctionDef], depth: int = 0) -> tuple[set[str], list[str]]:
    ops: set[str] = set()
    helpers: list[str] = []
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute):
            ops.add(node.func.attr)
        elif isinstance(node.func, ast.Name):
            helpers.append(node.func.id)
            inner = defs.get(node.func.id)
            if inner is not None and inner is not fn and depth < _MAX_DEPTH:
                more_ops, more_helpers = _calls(inner, defs, depth + 1)
                ops |= more_ops
                helpers += more_helpers
    return ops, helpers


def _first_line(fn: ast.FunctionDef) -> int:
    return min([fn.lineno, *(d.lineno for d in fn.decorator_list)])


def kernel_body(text: str, symbol: str, line: int, path: str) -> KernelBody | None:
    """The body facts of ``def symbol`` at ``line`` (its ``def`` line, or any line of its decorators) of a
    Python file; None when the file does not parse or has no such definition."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    funcs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    fn = next((f for f in funcs if f.name == symbol and _first_line(f) <= line <= f.lineno), None)
    if fn is None:
        return None
    defs = {f.name: f for f in funcs if f.col_offset == 0}
    ops, helpers = _calls(fn, defs)
    args = fn.args
    params = tuple(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
    doc = ast.get_docstring(fn) or ast.get_docstring(tree) or ""
    return KernelBody(
        ops=frozenset(ops),
        helpers=tuple(dict.fromkeys(h for h in helpers if h != symbol)),
        params=params,
        doc=doc,
        module=str(PurePosixPath(path)),
    )
