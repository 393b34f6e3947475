"""Search spaces: ``SPACE.yaml`` read and checked, constraints evaluated safely, candidates enumerated.

A constraint is a Python *expression* over the config's params and the shape's names (``BLOCK_M * BLOCK_K
<= 16384``, ``BLOCK_M <= M``). It is parsed once and checked against a whitelist of node types — names,
numbers, strings, arithmetic, comparisons, ``and/or/not``, ``x if c else y`` and a few pure functions
(``min``, ``max``, ``abs``) — so no attribute access, subscripting, lambdas or builtins can run; then it is
evaluated with an empty ``__builtins__``.
"""

from __future__ import annotations

import ast
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import yaml

from kernelscope.errors import FormatError, InputError
from kernelscope.model.tune import Candidate, Params, Space, Value

_NODES: tuple[type[ast.AST], ...] = (
    ast.Expression,
    ast.BoolOp,
    ast.BinOp,
    ast.UnaryOp,
    ast.Compare,
    ast.IfExp,
    ast.Call,
    ast.Name,
    ast.Load,
    ast.Constant,
    ast.And,
    ast.Or,
    ast.Not,
    ast.USub,
    ast.UAdd,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
    ast.Eq,
    ast.NotEq,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.In,
    ast.NotIn,
    ast.Tuple,
    ast.List,
)
FUNCTIONS: dict[str, Callable[..., Any]] = {"min": min, "max": max, "abs": abs, "cdiv": lambda a, b: -(-a // b)}
_MAX_POW = 64  # 2**64 is as big as a kernel parameter gets; 9**9**9 would hang the evaluator


def _small_power(exponent: ast.expr) -> bool:
    return isinstance(exponent, ast.Constant) and isinstance(exponent.value, int) and 0 <= exponent.value <= _MAX_POW


class Constraint:
    """One checked expression; ``holds(values)`` is its truth over a config and shape."""

    def __init__(self, text: str) -> None:
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError as exc:
            raise InputError(f"constraint {text!r}: not a Python expression ({exc.msg})") from None
        for node in ast.walk(tree):
            if not isinstance(node, _NODES):
                allowed = "arithmetic, comparisons, and/or/not, min/max/abs/cdiv"
                raise InputError(f"constraint {text!r}: {type(node).__name__} is not allowed (only {allowed})")
            if isinstance(node, ast.Call) and not (
                isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and not node.keywords
            ):
                raise InputError(f"constraint {text!r}: only min, max, abs and cdiv may be called")
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and not _small_power(node.right):
                raise InputError(f"constraint {text!r}: a power needs a constant exponent from 0 to {_MAX_POW}")
        self.text = text
        self.names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - FUNCTIONS.keys()
        self._code = compile(tree, "<constraint>", "eval")

    def holds(self, values: dict[str, Value]) -> bool:
        missing = self.names - values.keys()
        if missing:
            raise InputError(
                f"constraint {self.text!r}: {', '.join(sorted(missing))} is neither a param nor a shape name"
            )
        try:
            return bool(eval(self._code, {"__builtins__": {}, **FUNCTIONS}, dict(values)))
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise InputError(f"constraint {self.text!r} at {values}: {type(exc).__name__}: {exc}") from None


def read_space(path: Path) -> Space:
    """``SPACE.yaml``: ``params`` (name -> list of values), optional ``constraints``, ``shapes``, ``incumbent``."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
    except yaml.YAMLError as exc:
        raise FormatError(path, "a YAML search space", f"invalid YAML ({one(exc)})") from None
    if not isinstance(data, dict) or not isinstance(data.get("params", data.get("configs")), (dict, list)):
        raise FormatError(path, "a mapping with params: {name: [values]} (or configs: [{name: value}])", "neither")
    try:
        space = msgspec.convert(data, Space)
    except msgspec.ValidationError as exc:
        raise FormatError(path, "params/constraints/shapes/incumbent as docs/tune.md shows", str(exc)) from None
    check(space, str(path))
    return space


def one(exc: Exception) -> str:
    return " ".join(str(exc).split())


def check(space: Space, where: str) -> None:
    for name, values in space.params.items():
        if not values:
            raise InputError(f"{where}: param {name!r} has no values")
        if any(isinstance(v, float) and not math.isfinite(v) for v in values):
            raise InputError(f"{where}: param {name!r} has a NaN or infinite value")
    for c in space.constraints:
        Constraint(c)  # parse errors now, not mid-sweep
    names = set(space.params) if space.params else {n for c in space.configs for n in c}
    if space.incumbent is not None and set(space.incumbent) != names:
        raise InputError(f"{where}: incumbent must set exactly the params {sorted(names)}")


def parse_shape(text: str) -> Params:
    """``M=4096,N=4096,K=4096`` -> {"M": 4096, ...}; numbers become int or float, the rest stay text."""
    shape: Params = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, raw = part.partition("=")
        if not sep or not name.strip():
            raise InputError(f"--shape {text!r}: expected NAME=VALUE[,NAME=VALUE...]")
        shape[name.strip()] = _scalar(raw.strip())
    if not shape:
        raise InputError(f"--shape {text!r}: empty")
    return shape


def _scalar(raw: str) -> Value:
    for kind in (int, float):
        try:
            value = kind(raw)
        except ValueError:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"{raw!r}: expected a finite number")
        return value
    return {"true": True, "false": False}.get(raw.lower(), raw)


def configs(space: Space) -> list[Params]:
    """The explicit config list, or every combination of the params in the order the space lists them (the
    last param varies fastest)."""
    if space.configs:
        return [dict(c) for c in space.configs]
    names = list(space.params)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*space.params.values())]


def enumerate_candidates(
    space: Space, shapes: Sequence[Params], config_list: Sequence[Params] | None = None
) -> Iterator[tuple[Candidate, str | None]]:
    """Each (shape, config) with the first constraint it violates (None: it satisfies them all)."""
    rules = [Constraint(c) for c in space.constraints]
    for shape in shapes:
        for config in config_list if config_list is not None else configs(space):
            values = {**shape, **config}
            broken = next((r.text for r in rules if not r.holds(values)), None)
            yield Candidate(shape=dict(shape), config=dict(config)), broken
