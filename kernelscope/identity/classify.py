"""Read kernel names: kind, category, dtype, tile, MMA shape, layout, short function name, vendor.

Pure over names (plus one batched ``c++filt`` call): ``classify(names) -> [KernelIdentity]``. The
decisions are the ordered tables of ``rules.yaml``; this module only parses names into the fields
those rules match on and applies them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from kernelscope.identity import cxx
from kernelscope.identity.demangle import Demangled, demangle_all
from kernelscope.identity.rules import Attribute, Rule, RuleSet, default_rules
from kernelscope.model.identity import KernelIdentity

_CAMEL1 = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL2 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_NONWORD = re.compile(r"[^A-Za-z0-9]+")
_CAST_LITERAL = re.compile(r"\(\w[\w ]*\)(?=-?\d)")
_TOKEN_SPLIT = re.compile(r"_+|(?<=\d)x(?=[a-z])")
_NARROW = ("fp8", "fp4", "int8", "uint8", "int4")
_SORT = re.compile(r"(?i)sort|merge")  # a sort's or merge's first template type is its key
_INTEGER = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool")


def words(*parts: str) -> str:
    """``CUDAFunctor_add`` -> ``cuda functor add``; digits stay attached (``rmsnorm2d fwd``)."""
    out = []
    for p in parts:
        split = _CAMEL2.sub(r"\1 \2", _CAMEL1.sub(r"\1 \2", p))
        out.append(_NONWORD.sub(" ", split).strip().lower())
    return " ".join(o for o in out if o)


def _unwrap(comps: list[cxx.Component], rules: RuleSet, depth: int = 0) -> tuple[list[cxx.Component], str]:
    """The components naming the kernel's own code, and the outermost wrapper template unwrapped."""
    if not comps:
        return comps, ""
    key = comps[cxx.key_component(comps)]
    if not rules.wrappers.fullmatch(key.name) or depth > 8:
        return comps, ""
    for i, arg in enumerate(key.targs):
        if cxx.is_literal(arg) or rules.carriers.match(arg.strip()):
            continue
        inner = cxx.path(arg)
        if not inner:
            continue
        last = inner[cxx.key_component(inner)]
        if key.open_targs and i == len(key.targs) - 1 and not (last.has_targs or last.params is not None):
            return comps, ""  # the argument was cut mid-name: this level is the last we can read
        found, _ = _unwrap(inner, rules, depth + 1)
        return found, key.name
    return comps, ""


def _fmt(template: str, m: re.Match[str]) -> str:
    def sub(x: re.Match[str]) -> str:
        g = m.group(int(x.group(1))) or ""
        return g.upper() if x.group(2) else g

    return re.sub(r"\{(\d+)(!u)?\}", sub, template)


def _attribute(entries: Sequence[Attribute], texts: dict[str, str]) -> str | None:
    for a in entries:
        m = a.pattern.search(texts[a.field])
        if m:
            return _fmt(a.value, m)
    return None


def _params(entries: Sequence[Attribute], texts: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for a in entries:
        if a.key not in out and (m := a.pattern.search(texts[a.field])):
            out[a.key] = _fmt(a.value, m)
    return out


def _type_dtypes(text: str, rules: RuleSet) -> list[str]:
    """Dtypes spelled as C++ types in ``text``, in order of appearance."""
    text = _CAST_LITERAL.sub("", text)
    hits = sorted((m.start(), d) for s in rules.type_dtypes for m in s.pattern.finditer(text) if (d := s.dtype_of(m)))
    return list(dict.fromkeys(d for _, d in hits))


def _token_dtypes(name: str, rules: RuleSet) -> list[str]:
    """Dtypes spelled as name tokens (``bf16``, ``afp8``, ``MxE2m1``, ``bf16xbf16xmxfp4``), in order."""
    found: list[str] = []
    for tok in _TOKEN_SPLIT.split(name):
        matches = ((m, s) for s in rules.token_dtypes if (m := s.pattern.search(tok)))
        hits = sorted((m.start(), d) for m, s in matches if (d := s.dtype_of(m)))
        found.extend(d for _, d in hits)
    return list(dict.fromkeys(found))


def _combine(dtypes: list[str]) -> str | None:
    """One dtype, or ``AxB`` for mixed inputs; fp32 is dropped beside others (it is the accumulator)."""
    if len(dtypes) > 1 and "fp32" in dtypes:
        dtypes = [d for d in dtypes if d != "fp32"]
    return "x".join(dtypes[:2]) if dtypes else None


def _pick(types: list[str], integers: bool, keyed: bool = False) -> str | None:
    """The data type among a template's types (in order of appearance): floating first, the first of them
    less fp32 beside a narrower type (it is the accumulator beside bf16/fp16; beside only fp64 it is the data
    and a later ``double`` a parameter, such as a distribution's probability); integer types only where the
    kernel computes on them (functors, sorts), since elsewhere ``int``/``long`` are index types. A sort's
    (``keyed``) first type is its key, whatever floats its comparator's context names."""
    if keyed and types:
        return types[0]
    floats = [t for t in types if t not in _INTEGER]
    if any(t not in ("fp32", "fp64") for t in floats):
        floats = [t for t in floats if t != "fp32"]
    if floats:
        return floats[0]
    ints = [t for t in types if t in _INTEGER]
    return ints[0] if integers and ints else None


_QUANTIZES = re.compile(r"(?i)(?<![a-z])quant(?:ize)?(?![a-z])")  # quant_, _quant_, quantize: not dequant
_SCALAR_DOUBLE = re.compile(r"(?<=[(,])\s*(?:const\s+)?double\s*(?=[,)])")


def _spelled_narrow(named: list[str], category: str) -> str | None:
    """The narrow type a kernel's own name spells first; a GEMM naming a 4-bit type before an 8-bit one
    (``mxfp4_fp8_gemm``: its weights, then its activations) computes on both, activations first."""
    spelled = [d for d in named if d in _NARROW]
    if spelled[:1] == ["fp4"] and "fp8" in spelled and category in ("gemm", "moe_gemm"):
        return "fp8xfp4"
    return spelled[0] if spelled else None


def _dtype(
    plain: str, key: list[cxx.Component], function: str, text: str, category: str, wrapper: str, rules: RuleSet
) -> str | None:
    for spelled_as in rules.spelled_dtypes:
        if m := spelled_as.pattern.match(plain):
            return spelled_as.dtype_of(m)
    if not cxx.is_cxx(text):
        return _combine(_token_dtypes(plain, rules))
    k = key[cxx.key_component(key)] if key else None
    keyed = category == "sort_scan" and _SORT.search(function) is not None
    args = ", ".join(k.targs) if k else ""
    targs = _type_dtypes(args.replace("*", " ") if keyed else args, rules)  # a sort's iterators (long*) name its key
    named = _token_dtypes(function, rules)
    # a kernel whose own name spells a narrow type (rms_norm_static_fp8_quant, convert_fp8) is typed by that
    # spelling; a quantizing kernel (or one whose name says it quantizes: a norm fused with a group quant) by the
    # narrow type among its template arguments
    if spelled := _spelled_narrow(named, category):
        return spelled
    quantizes = category == "quant" or _QUANTIZES.search(function) is not None
    if quantizes and (narrow := [d for d in targs if d in _NARROW]):
        return narrow[0]
    # integer types are data where the kernel computes on them, not where an indexing wrapper moves data by them
    computes = bool(wrapper) and not rules.indexing_wrappers.search(wrapper)
    integers = computes or category in ("sort_scan", "elementwise", "reduce")
    local = " ".join(c.name for c in key if c.is_local)
    for found in (
        _pick(targs, integers, keyed=keyed),
        _combine(named),
        _pick(_type_dtypes(local, rules), integers),
    ):
        if found:
            return (_opmath_data(text, rules) or found) if found == "fp32" and wrapper else found
    # a scalar ``double`` parameter (a scaling factor, an epsilon) says nothing of the data the kernel works on
    floating = _floating(_SCALAR_DOUBLE.sub("", text), rules)
    return floating[0] if floating else None


def _floating(text: str, rules: RuleSet) -> list[str]:
    return [d for d in _type_dtypes(text, rules) if d in ("bf16", "fp16", "fp8", "fp4", "fp64")]


def _opmath_data(text: str, rules: RuleSet) -> str | None:
    """The bf16/fp16 data an ATen functor computing in fp32 (its opmath type) works on, named by its wrapper;
    read only then, since it scans the whole name."""
    first = _floating(text, rules)[:1]
    return first[0] if first in (["bf16"], ["fp16"]) else None


def _function(rule: Rule, fn: str) -> str:
    if rule.whole:
        return fn
    if rule.group is not None and (m := rule.group.search(fn)):
        return next((v for v in m.groupdict().values() if v), fn).strip()
    if rule.cut is not None and (m := rule.cut.search(fn)) and m.start() > 0:
        return fn[: m.start()]
    return fn


def _category(kind: str, fields: dict[str, str], rules: RuleSet) -> tuple[str, str]:
    """The first category rule that decides; when that is only a default (``other``, a kind's usual
    category), the words of the template arguments and namespaces get a say: the operation of
    ``thrust::…::__parallel_for::kernel<…>`` or ``Eigen::…::EigenMetaKernel<…TensorReductionOp…>``
    is in its arguments, not in its function name."""
    usable = [r for r in rules.categories if not r.kinds or kind in r.kinds]
    rule = next(r for r in usable if r.applies(fields))
    if rule.id in rules.fallbacks:
        context = {**fields, "words": fields["context"]}
        hit = next((r for r in usable if "words" in r.match and r.applies(context)), None)
        if hit is not None:
            return hit.category or "other", f"{hit.id}(context)"
    return rule.category or "other", rule.id


def _context(comps: list[cxx.Component], library: str | None, raw: str) -> str:
    """The words of the qualified name and its template arguments, less the library's own name (fbgemm_gpu,
    thrust: it says nothing of the operation), and of the source file an anonymous namespace of the symbol
    was named after. Of the parameters only a parameter struct (``SparseAttentionIndexerParams``): their other
    types (``LogProb``, ``PackedTensorAccessor<…IndexBoundsCheck…>``) name data, not the operation."""
    drop = set(words(library).split()) if library else set()
    named = [part for c in comps for part in (c.name, *c.targs, *_PARAM_STRUCT.findall(c.params or ""))]
    return " ".join(w for w in words(*named, *_anonymous_files(raw)).split() if w not in drop)


_PARAM_STRUCT = re.compile(r"\w+?(?:_?[Pp]arams?|_?[Aa]rgs|_?[Aa]rguments)\b")


# nvcc names a file's anonymous namespace _GLOBAL__N__<hash>_<length>_<file>_<ext>_<hash>; demangled it is only
# "(anonymous namespace)", but the file (dcp_direct_a2a_lse_reduce.cu) says what its kernels serve
_ANONYMOUS_FILE = re.compile(r"_GLOBAL__N__[0-9a-f]+_(\d+)_")
_SOURCE_EXT = re.compile(r"_(?:cu|cuh|cpp|cc|cxx|hip)$")


def _anonymous_files(raw: str) -> list[str]:
    return [_SOURCE_EXT.sub("", raw[m.end() : m.end() + int(m[1])]) for m in _ANONYMOUS_FILE.finditer(raw)]


_RETURNS_VOID = re.compile(r"void\s+\w")


def classify_one(name: str, dm: Demangled, rules: RuleSet) -> KernelIdentity:
    raw = name.strip()
    truncated = cxx.is_truncated(raw) or dm.repaired
    plain = cxx.clean(raw) if not dm.mangled else cxx.strip_suffixes(raw).rstrip(".…")
    text = cxx.clean(dm.text) if dm.mangled and dm.text != raw else cxx.clean(raw)
    # a name printed with its return type (``void r4d_gemm_kernel``: a report cut its template and parameters) is C++
    bare = (
        not cxx.is_cxx(text)
        and not _RETURNS_VOID.match(raw)
        and not cxx.in_anonymous_namespace(dm.text if dm.mangled else raw)
    )
    comps = cxx.path(text) if not bare else [cxx.Component(text)]
    key, wrapper = _unwrap(comps, rules)
    at = cxx.key_component(key) if key else 0
    kc = key[at] if key else cxx.Component(text)
    function = kc.name.strip() or text
    if dm.mangled and not dm.repaired and dm.text == raw:  # undemangleable: keep the symbol
        function = plain
    namespaces = [c.name for c in comps[:-1] if not c.is_local]
    fields = {
        "name": plain,
        "bare": "1" if bare else "0",
        "mangled": "1" if dm.mangled else "0",
        "kd": "1" if raw.endswith(".kd") or raw.endswith("[clone .kd]") else "0",
        "head": namespaces[0] if namespaces else "",
        "path": "::".join(c.name for c in comps if not c.is_local),
        "function": function,
        "wrapper": wrapper,
        "text": text,
        "words": words(function),
        "ns": words(*namespaces),
        "context": _context(comps, namespaces[0] if namespaces else None, raw),
    }
    kind_rule = next(r for r in rules.kinds if r.applies(fields))
    kind = kind_rule.kind or "unknown"
    named = _function(kind_rule, function)
    if kind_rule.group is not None and named != function:
        fields["words"] = words(named)  # a name the rule took out of a generated one says what it computes
    if named == "kernel" and at and not key[at - 1].is_local:
        named = key[at - 1].name.strip()  # `gemvx::kernel`, thrust's `__parallel_for::kernel`: the scope names it
    if kind_rule.category:
        category, category_rule = kind_rule.category, kind_rule.id
    else:
        category, category_rule = _category(kind, fields, rules)
    texts = {"name": plain, "text": text, "raw": raw}
    # the template arguments are all there when their list closed before any cut: a printed name's open list
    # shows; a cut mangled name's repair closes every list it cuts, so only a started parameter list proves it
    complete = not kc.open_targs and not any("…" in a or "..." in a for a in kc.targs)
    cut_before = ((truncated and not kc.has_targs) or dm.repaired) and kc.params is None
    readable = not bare and complete and not cut_before and named == kc.name.strip()
    return KernelIdentity(
        name=name,
        demangled=dm.text if dm.mangled else name,
        kind=kind,
        category=category,
        function=named,
        # a symbol no demangler prints whole still spells its function's arguments (not a wrapper's inner kernel)
        template_args=len(kc.targs) if readable else dm.arity if not wrapper and named == kc.name.strip() else None,
        namespace="::".join(c.name for c in key[: cxx.key_component(key)] if not c.is_local) or None
        if not bare
        else None,
        vendor=_attribute(rules.attributes["vendor"], texts),
        dtype=_dtype(plain, key, function, text, category, wrapper, rules),
        tile=_attribute(rules.attributes["tile"], texts),
        mma=_attribute(rules.attributes["mma"], texts),
        layout=_attribute(rules.attributes["layout"], texts),
        params=_params(rules.attributes["params"], texts),
        truncated=truncated,
        rule=kind_rule.id,
        category_rule=category_rule,
    )


def classify(names: Iterable[str], rules: RuleSet | None = None) -> list[KernelIdentity]:
    """Classify names (duplicates are read once); one ``c++filt`` batch for all mangled ones."""
    names = list(names)
    rules = rules or default_rules()
    dm = demangle_all(names)
    memo: dict[str, KernelIdentity] = {}
    for n in names:
        if n not in memo:
            memo[n] = classify_one(n, dm[n], rules)
    return [memo[n] for n in names]


class Identities:
    """A name -> identity cache filled in batches, so a stream of trace batches costs one ``c++filt``
    run per batch of new names rather than one per name."""

    def __init__(self, rules: RuleSet | None = None) -> None:
        self._rules = rules
        self._known: dict[str, KernelIdentity] = {}

    def add(self, names: Iterable[str]) -> None:
        new = [n for n in dict.fromkeys(names) if n not in self._known]
        if new:
            self._known.update(zip(new, classify(new, self._rules), strict=True))

    def __getitem__(self, name: str) -> KernelIdentity:
        if name not in self._known:
            self.add([name])
        return self._known[name]
