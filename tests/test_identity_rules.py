"""A test per rules.yaml entry: each entry's real example names are decided by that entry."""

from __future__ import annotations

import pytest

from kernelscope.errors import InputError
from kernelscope.identity import classify
from kernelscope.identity.rules import Rule, default_rules, parse

RULES = default_rules()


def _cases(rules: tuple[Rule, ...]) -> list[tuple[str, str]]:
    return [(r.id, e) for r in rules for e in r.examples]


def test_every_rule_has_examples() -> None:
    assert all(r.examples for r in (*RULES.kinds, *RULES.categories))


@pytest.mark.parametrize(("rule_id", "example"), _cases(RULES.kinds))
def test_kind_rule_decides_its_examples(rule_id: str, example: str) -> None:
    ident = classify([example])[0]
    rule = next(r for r in RULES.kinds if r.id == rule_id)
    assert ident.rule == rule_id
    assert ident.kind == rule.kind
    if rule.category:
        assert ident.category == rule.category


@pytest.mark.parametrize(("rule_id", "example"), _cases(RULES.categories))
def test_category_rule_decides_its_examples(rule_id: str, example: str) -> None:
    ident = classify([example])[0]
    rule = next(r for r in RULES.categories if r.id == rule_id)
    assert (ident.category_rule, ident.category) == (rule_id, rule.category)


def test_bad_rules_are_one_clear_error() -> None:
    from importlib import resources

    import yaml

    doc = yaml.safe_load(resources.files("kernelscope.identity").joinpath("rules.yaml").read_text())
    doc["kinds"][0]["match"] = {"nonsense": "x"}
    with pytest.raises(InputError, match="unknown field 'nonsense'"):
        parse(doc)
    doc["kinds"][0]["match"] = {"name": "(unclosed"}
    with pytest.raises(InputError, match="bad pattern"):
        parse(doc)
    doc["kinds"][0]["match"] = {"name": "x"}
    doc["dtypes"]["tokens"].append({"pattern": "^s(?:gemv)$", "map": {"s": "fp32"}})
    with pytest.raises(InputError, match="maps its groups but has 0"):
        parse(doc)
    doc["dtypes"]["tokens"][-1] = {"pattern": "^(fp8|FP8)$", "map": {"fp8": "fp8", "FP8": "fp8"}}
    with pytest.raises(InputError, match="maps one spelling twice"):
        parse(doc)
    doc["dtypes"]["tokens"][-1] = {"pattern": "^([sd])gemv$", "map": {"s": "fp32"}, "dtype": "fp32"}
    with pytest.raises(InputError, match="needs either dtype or map"):
        parse(doc)


def test_a_map_reads_its_groups_case_blind_activation_then_weight() -> None:
    from kernelscope.identity.rules import _spelling

    pair = _spelling("t", {"pattern": "^a(\\w+?)w(\\w+)$", "map": {"Fp8": "fp8", "fp4": "fp4", "BF16": "bf16"}})
    assert [pair.dtype_of(m) for m in map(pair.pattern.match, ("afp8wFP4", "abf16wbf16", "afp8wint4"))] == [
        "fp8xfp4",
        "bf16",
        None,  # a group the map does not spell: no guess
    ]
