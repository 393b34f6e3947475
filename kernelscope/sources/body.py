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
    flow: str = ""  # what its stores write: ``computes`` (arithmetic on loaded values), ``moves`` (them unchanged)


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


_ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.MatMult)
_SHAPE = frozenset({"to", "reshape", "trans", "permute", "broadcast_to", "expand_dims", "view", "cast", "where"})
_RAW, _COMPUTED = 1, 2  # a value loaded (and perhaps cast or reshaped), one arithmetic made of loaded values


def _call_level(node: ast.Call, env: dict[str, int]) -> int:
    attr = node.func.attr if isinstance(node.func, ast.Attribute) else None
    if attr in ("load", "atomic_load"):
        return _RAW
    parts: list[ast.AST] = [*node.args, *(k.value for k in node.keywords)]
    if isinstance(node.func, ast.Attribute):
        parts.append(node.func.value)  # ``x.to(tl.float32)``: the value it casts
    inner = max((_level(p, env) for p in parts), default=0)
    return inner if attr in _SHAPE or not inner else _COMPUTED  # tl.exp, tl.sum, a helper: made of loaded values


def _level(node: ast.AST | None, env: dict[str, int]) -> int:
    """How a value derives from what the kernel loaded: 0 not at all (indices, constants), ``_RAW``, ``_COMPUTED``."""
    if isinstance(node, ast.Call):
        return _call_level(node, env)
    operands: list[ast.AST] = []
    arithmetic = False
    if isinstance(node, ast.BinOp):
        operands, arithmetic = [node.left, node.right], isinstance(node.op, _ARITH)
    elif isinstance(node, ast.UnaryOp):
        operands, arithmetic = [node.operand], isinstance(node.op, ast.USub)
    elif isinstance(node, ast.IfExp):
        operands = [node.body, node.orelse]
    elif isinstance(node, (ast.Subscript, ast.Attribute)):
        operands = [node.value]
    elif isinstance(node, ast.Tuple):
        operands = list(node.elts)
    elif isinstance(node, ast.Name):
        return env.get(node.id, 0)
    inner = max((_level(o, env) for o in operands), default=0)
    return _COMPUTED if inner and arithmetic else inner


def _stored(node: ast.Call) -> ast.AST | None:
    """The value a ``tl.store(pointer, value, ...)`` writes."""
    return node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "value"), None)


def _flow(fn: ast.FunctionDef) -> str:
    """Whether the kernel's stores write arithmetic on loaded values (``computes``), loaded values unchanged
    (``moves``), or neither (indices, constants: ``""``) — in program order, loops read twice."""
    env: dict[str, int] = {}
    stored = 0
    for _ in range(2):  # a loop's accumulator: its second pass sees what the first bound
        for node in (n for stmt in fn.body for n in ast.walk(stmt)):
            if isinstance(node, ast.Assign):
                level = _level(node.value, env)
                for t in node.targets:
                    for name in (e for e in ast.walk(t) if isinstance(e, ast.Name)):
                        env[name.id] = max(env.get(name.id, 0), level)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                level = max(_level(node.value, env), env.get(node.target.id, 0))
                env[node.target.id] = _COMPUTED if level and isinstance(node.op, _ARITH) else level
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == "store":
                    stored = max(stored, _level(_stored(node), env))
                elif node.func.attr.startswith("atomic_") and node.func.attr != "atomic_load":
                    stored = max(stored, _COMPUTED if any(_level(a, env) for a in node.args[1:]) else 0)
    return {0: "", _RAW: "moves", _COMPUTED: "computes"}[stored]


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


def _definition(text: str, symbol: str, line: int) -> tuple[_Module, ast.FunctionDef] | None:
    """The parsed file and its ``def symbol`` at ``line`` (its ``def`` line, or any line of its decorators)."""
    module = _module(text)
    if module is None:
        return None
    fn = next((f for f in module.defs.get(symbol, ()) if _first_line(f) <= line <= f.lineno), None)
    return None if fn is None else (module, fn)


def kernel_body(text: str, symbol: str, line: int, path: str) -> KernelBody | None:
    """The body facts of ``def symbol`` at ``line`` (its ``def`` line, or any line of its decorators) of a
    Python file; None when the file does not parse or has no such definition."""
    found = _definition(text, symbol, line)
    if found is None:
        return None
    module, fn = found
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
        flow=_safe_flow(fn),
    )


def named_by_repr(text: str, symbol: str, line: int) -> bool:
    """Whether ``def symbol`` at ``line`` is decorated ``triton.jit(repr=...)``: Triton names its compiled
    kernels by that function (aiter's ``make_kernel_repr`` appends ``_KEY_value`` for each config key), not
    by the bare function name."""
    found = _definition(text, symbol, line)
    return found is not None and any(
        isinstance(d, ast.Call) and any(k.arg == "repr" and not _none(k.value) for k in d.keywords)
        for d in found[1].decorator_list
    )


def _none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _safe_flow(fn: ast.FunctionDef) -> str:
    try:
        return _flow(fn)
    except RecursionError:  # an expression nested deeper than the stack (the parser allows some the walk cannot)
        return ""
