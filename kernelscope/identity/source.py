"""A kernel's kind and category from its source, where its name left them open or decided only by a generic word.

An engine's Triton helper that "copies", "fills" or "sums" (``_swa_scatter_kernel``,
``_fill_compress_tail_kernel``, ``_qkvr_qkv_kernel``) may serve a KV cache, an attention backend or a
sampler: the name does not say which, the kernel's parameters (``slot_mapping``, ``key_cache``), its
module (``mem_cache/``, ``attention/``) and its body's operations (``tl.dot``) do. The ``sources``
table of ``rules.yaml`` decides from those facts; only identities whose category rule is one of
``source_weak`` are changed, so a name that says ``rms_norm`` stays a norm wherever it lives. A bare
name the rules call ``unknown`` is ``triton`` once it resolves to a ``@triton.jit`` function.
"""

from __future__ import annotations

import msgspec

from kernelscope.identity.classify import words
from kernelscope.identity.rules import RuleSet, default_rules
from kernelscope.model.identity import KernelIdentity
from kernelscope.model.source import SourceMatch
from kernelscope.sources.body import KernelBody

SOURCE_RULE = "source:"  # prefix of a ``rule``/``category_rule`` decided by the kernel's source
# definitions (sources/scan.py kinds) whose compiler is certain: a bare name resolved to one is that compiler's kernel
_MADE_BY = {"triton": "triton"}


def facts(body: KernelBody, function: str) -> dict[str, str]:
    """The fields ``sources`` rules match on: lower-case words (``ops``: the body's calls, sorted)."""
    return {
        "ops": " ".join(sorted(body.ops)),
        "params": words(*body.params),
        "module": words(body.module),
        "helpers": words(*body.helpers),
        "doc": words(body.doc),
        "words": words(function),
        "flow": body.flow,
    }


def with_definition(ident: KernelIdentity, definition: str) -> KernelIdentity:
    """``ident`` with the kind its definition proves where the name alone left it ``unknown``: a bare name (which
    Triton, FlyDSL and ``extern "C"`` kernels all print) resolved to a ``@triton.jit`` function is Triton's."""
    kind = _MADE_BY.get(definition)
    if ident.kind != "unknown" or kind is None:
        return ident
    return msgspec.structs.replace(ident, kind=kind, rule=f"{SOURCE_RULE}{definition}-definition")


def _name_rule(ident: KernelIdentity) -> str:
    return ident.category_rule.split("(", 1)[0]  # ``elementwise(context)`` is ``elementwise``


def weak(ident: KernelIdentity, rules: RuleSet | None = None) -> bool:
    """Whether the name decided the category only by a ``source_weak`` rule, or by one a source rule may
    replace (its ``over``), so that the kernel's source may decide it: else reading the source is wasted."""
    rules = rules or default_rules()
    rule = _name_rule(ident)
    return rule in rules.source_weak or any(rule in r.over for r in rules.sources)


def with_source(ident: KernelIdentity, body: KernelBody, rules: RuleSet | None = None) -> KernelIdentity:
    """``ident`` with its category decided by ``body`` where a ``sources`` rule applies to the name's own
    category rule (one of ``source_weak``, or of the source rule's ``over``); else ``ident``."""
    rules = rules or default_rules()
    if not weak(ident, rules):
        return ident
    known, named = facts(body, ident.function), _name_rule(ident)
    rule = next(
        (r for r in rules.sources if (named in rules.source_weak or named in r.over) and r.applies(known)), None
    )
    if rule is None or rule.category is None:
        return ident
    return msgspec.structs.replace(ident, category=rule.category, category_rule=SOURCE_RULE + rule.id)


def from_match(ident: KernelIdentity, match: SourceMatch) -> KernelIdentity:
    """``ident`` with the kind and category a ``kscope find`` answer read from the kernel's source (where it did)."""
    if match.kind_rule.startswith(SOURCE_RULE):
        ident = msgspec.structs.replace(ident, kind=match.kind, rule=match.kind_rule)
    if match.category_rule.startswith(SOURCE_RULE):
        ident = msgspec.structs.replace(ident, category=match.category, category_rule=match.category_rule)
    return ident
