"""Load and validate ``rules.yaml``: the ordered pattern tables behind the classifier."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import yaml

from kernelscope.errors import InputError

FIELDS = ("name", "bare", "mangled", "kd", "head", "path", "function", "wrapper", "text", "words", "ns", "context")
# the facts of a kernel's source (identity.source): its body's calls, parameters, file, helpers, docstring, name
SOURCE_FIELDS = ("ops", "params", "module", "helpers", "doc", "words", "flow")


@dataclass(frozen=True)
class Rule:
    """One ordered entry: when every ``match`` field matches (and no ``unless`` field), it decides."""

    id: str
    match: dict[str, re.Pattern[str]]
    unless: dict[str, re.Pattern[str]]
    examples: tuple[str, ...]
    kind: str | None = None
    category: str | None = None
    kinds: frozenset[str] = frozenset()  # category rules: only for these kinds (empty: all)
    cut: re.Pattern[str] | None = None  # function: cut the name at the first match
    group: re.Pattern[str] | None = None  # function: the named group f (or g) of this pattern
    whole: bool = False  # function: the whole name
    facts: tuple[dict[str, str], ...] = ()  # source rules: real kernels' source facts it decides (its examples)
    over: frozenset[str] = frozenset()  # source rules: name rules, besides ``source_weak``, whose decision it replaces

    def applies(self, fields: dict[str, str]) -> bool:
        return all(p.search(fields[k]) for k, p in self.match.items()) and not any(
            p.search(fields[k]) for k, p in self.unless.items()
        )


@dataclass(frozen=True)
class Attribute:
    field: str
    pattern: re.Pattern[str]
    value: str
    key: str = ""


@dataclass(frozen=True)
class Spelling:
    """A pattern and the dtype it spells: a fixed one, or the text of its groups mapped through ``map`` (keys
    lower-case, looked up case-blind: `Fp8`, `fp8` and `FP8` are one spelling). Two groups name mixed inputs,
    activation then weight: one dtype when they agree, ``AxW`` when not."""

    pattern: re.Pattern[str]
    dtype: str = ""
    map: dict[str, str] = field(default_factory=dict)

    def dtype_of(self, m: re.Match[str]) -> str | None:
        if self.dtype:
            return self.dtype
        spelled = [g.lower() for g in m.groups() if g is not None]
        if not spelled or any(g not in self.map for g in spelled):
            return None
        return "x".join(dict.fromkeys(self.map[g] for g in spelled))


@dataclass(frozen=True)
class RuleSet:
    kinds: tuple[Rule, ...]
    categories: tuple[Rule, ...]
    wrappers: re.Pattern[str]  # the wrapper templates' names, matched whole
    carriers: re.Pattern[str]
    indexing_wrappers: re.Pattern[str]  # wrappers whose integer types are indices, not data
    attributes: dict[str, tuple[Attribute, ...]]
    type_dtypes: tuple[Spelling, ...]
    token_dtypes: tuple[Spelling, ...]
    spelled_dtypes: tuple[Spelling, ...] = ()
    fallbacks: frozenset[str] = frozenset()  # category rules that only give a default
    sources: tuple[Rule, ...] = ()  # category rules over a kernel's source facts
    source_weak: frozenset[str] = frozenset()  # category rules whose decision a kernel's source may replace


def _compile(where: str, pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise InputError(f"identity rules: {where}: bad pattern {pattern!r}: {exc}") from None


def _fields(where: str, spec: dict[str, str] | None, known: tuple[str, ...] = FIELDS) -> dict[str, re.Pattern[str]]:
    out = {}
    for k, v in (spec or {}).items():
        if k not in known:
            raise InputError(f"identity rules: {where}: unknown field {k!r} (known: {', '.join(known)})")
        out[k] = _compile(f"{where}.{k}", str(v))
    return out


def _spelling(where: str, entry: dict[str, Any]) -> Spelling:
    pattern = _compile(where, entry["pattern"])
    if ("dtype" in entry) == ("map" in entry):
        raise InputError(f"identity rules: {where}: {entry['pattern']!r} needs either dtype or map")
    if "map" in entry and not 1 <= pattern.groups <= 2:
        raise InputError(f"identity rules: {where}: {entry['pattern']!r} maps its groups but has {pattern.groups}")
    spelled = {str(k).lower(): str(v) for k, v in (entry.get("map") or {}).items()}
    if len(spelled) < len(entry.get("map") or {}):
        raise InputError(f"identity rules: {where}: {entry['pattern']!r} maps one spelling twice (keys are case-blind)")
    return Spelling(pattern, str(entry.get("dtype", "")), spelled)


def _rule(entry: dict[str, Any]) -> Rule:
    rid = str(entry["id"])
    fn = entry.get("function") or {}
    return Rule(
        id=rid,
        match=_fields(rid, entry.get("match")),
        unless=_fields(rid, entry.get("unless")),
        examples=tuple(str(e) for e in entry.get("examples") or ()),
        kind=entry.get("kind"),
        category=entry.get("category"),
        kinds=frozenset(entry.get("kinds") or ()),
        cut=_compile(rid, fn["cut"]) if "cut" in fn else None,
        group=_compile(rid, fn["group"]) if "group" in fn else None,
        whole=bool(fn.get("whole", False)),
    )


def _source_rule(entry: dict[str, Any]) -> Rule:
    rid = str(entry["id"])
    facts = tuple({str(k): str(v) for k, v in e.items()} for e in entry.get("examples") or ())
    if unknown := {k for f in facts for k in f} - {"kernel", *SOURCE_FIELDS}:
        raise InputError(f"identity rules: {rid}: unknown example field(s) {', '.join(sorted(unknown))}")
    if not entry.get("category"):
        raise InputError(f"identity rules: {rid}: a source rule needs the category it decides")
    return Rule(
        id=rid,
        match=_fields(rid, entry.get("match"), SOURCE_FIELDS),
        unless=_fields(rid, entry.get("unless"), SOURCE_FIELDS),
        examples=tuple(f.get("kernel", "") for f in facts),
        category=str(entry["category"]),
        facts=facts,
        over=frozenset(entry.get("over") or ()),
    )


def parse(doc: dict[str, Any]) -> RuleSet:
    """A rule set from the YAML document (exposed so tests and users can load their own tables)."""
    attrs = {
        name: tuple(
            Attribute(e["field"], _compile(f"attributes.{name}", e["pattern"]), e["value"], e.get("key", ""))
            for e in entries
        )
        for name, entries in doc["attributes"].items()
    }
    dt = doc["dtypes"]
    rs = RuleSet(
        kinds=tuple(_rule(e) for e in doc["kinds"]),
        categories=tuple(_rule(e) for e in doc["categories"]),
        wrappers=_compile("wrappers", "|".join(f"(?:{w})" for w in doc["wrappers"])),
        carriers=_compile("carriers", doc["carriers"]),
        indexing_wrappers=_compile("indexing_wrappers", doc["indexing_wrappers"]),
        attributes=attrs,
        type_dtypes=tuple(_spelling("dtypes.types", e) for e in dt["types"]),
        token_dtypes=tuple(_spelling("dtypes.tokens", e) for e in dt["tokens"]),
        spelled_dtypes=tuple(_spelling("dtypes.spelled", e) for e in dt["spelled"]),
        fallbacks=frozenset(doc.get("fallbacks") or ()),
        sources=tuple(_source_rule(e) for e in doc.get("sources") or ()),
        source_weak=frozenset(doc.get("source_weak") or ()),
    )
    ids = [r.id for r in (*rs.kinds, *rs.categories, *rs.sources)]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise InputError(f"identity rules: duplicate rule ids: {', '.join(sorted(dup))}")
    if rs.kinds[-1].match or rs.categories[-1].match:
        raise InputError("identity rules: the last kind and category rules must match everything")
    if unknown := rs.source_weak - {r.id for r in rs.categories}:
        raise InputError(f"identity rules: source_weak names no category rule: {', '.join(sorted(unknown))}")
    for r in rs.sources:
        if unknown := r.over - {c.id for c in rs.categories}:
            raise InputError(f"identity rules: {r.id}: over names no category rule: {', '.join(sorted(unknown))}")
    return rs


@cache
def default_rules() -> RuleSet:
    text = resources.files("kernelscope.identity").joinpath("rules.yaml").read_text()
    return parse(yaml.safe_load(text))
