"""A kernel's category from its source: the body reader, the ``sources`` rules and ``kscope find``.

Each source rule carries real kernels' facts (their file, parameters and body calls, from vLLM 0.33.0,
SGLang 0.5.23 and amd-aiter wheels) whose names the name rules decide only weakly; the rule must decide
them. The bodies read here are small kernels written for these tests.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from kernelscope.errors import InputError
from kernelscope.identity import classify
from kernelscope.identity.rules import Rule, default_rules, parse
from kernelscope.identity.source import SOURCE_RULE, with_source
from kernelscope.sources.body import KernelBody, kernel_body
from kernelscope.sources.find import Finder
from kernelscope.sources.index import SourceIndex

RULES = default_rules()

PLAIN = textwrap.dedent(
    """

    @triton.jit
    def move_rows_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)
    """
)
KERNELS = (Path(__file__).parent / "data" / "triton_sources" / "slots.py").read_text()


def _line(text: str, start: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(start))


def _body(facts: dict[str, str]) -> KernelBody:
    return KernelBody(
        ops=frozenset(facts.get("ops", "").split()),
        helpers=tuple(facts.get("helpers", "").split()),
        params=tuple(p.strip() for p in facts.get("params", "").split(",") if p.strip()),
        doc=facts.get("doc", ""),
        module=facts.get("module", ""),
        flow=facts.get("flow", ""),
    )


def _cases(rules: tuple[Rule, ...]) -> list[tuple[str, dict[str, str]]]:
    return [(r.id, f) for r in rules for f in r.facts]


def test_every_source_rule_has_real_examples() -> None:
    assert RULES.sources
    assert all(r.facts and all(f.get("kernel") and f.get("module") for f in r.facts) for r in RULES.sources)


@pytest.mark.parametrize(("rule_id", "facts"), _cases(RULES.sources))
def test_source_rule_decides_its_examples(rule_id: str, facts: dict[str, str]) -> None:
    named = classify([facts["kernel"]])[0]
    rule = next(r for r in RULES.sources if r.id == rule_id)
    # the name alone decides weakly, or by a rule this source rule may replace (a top-k an attention backend keeps)
    assert named.category_rule.split("(")[0] in RULES.source_weak | rule.over
    read = with_source(named, _body(facts))
    assert (read.category_rule, read.category) == (SOURCE_RULE + rule_id, rule.category)
    assert (read.kind, read.function, read.dtype) == (named.kind, named.function, named.dtype)


def test_a_name_that_says_what_it_computes_keeps_its_category() -> None:
    # an RMSNorm in an attention backend's module, handed the slot mapping, is still a norm
    named = classify(["_rms_norm_slots_kernel"])[0]
    facts = {"module": "vllm/v1/attention/ops/kv_cache_norm.py", "params": "x_ptr, slot_mapping_ptr", "ops": "load"}
    assert with_source(named, _body(facts)) == named
    assert named.category == "norm"


def test_a_rule_replaces_only_the_name_rules_it_is_over() -> None:
    """``over`` scopes a source rule: a top-k kept by an attention backend is attention's, but a router's own
    gating GEMM (a dot over expert ids) stays the router's, and a top-k elsewhere stays a top-k."""
    named = classify(["_routing_sigmoid_top1_kernel"])[0]
    assert named.category == "router" and named.category_rule not in RULES.source_weak
    gemm = {"module": "pkg/layers/fused_moe/router.py", "params": "x_ptr, w_ptr, topk_ids_ptr", "ops": "dot load"}
    assert with_source(named, _body(gemm)) == named
    assert with_source(named, _body({"module": "pkg/layers/sampler/topk.py", "ops": "load"})) == named
    attn = with_source(named, _body({"module": "pkg/v1/attention/backends/mla/sparse.py", "ops": "load"}))
    assert (attn.category, attn.category_rule) == ("attention", SOURCE_RULE + "attention-module")


def test_facts_no_rule_matches_leave_the_name_decision() -> None:
    named = classify(["_fill_tiles_kernel"])[0]
    assert with_source(named, _body({"module": "pkg/ops/tiles.py", "ops": "load store"})) == named
    # integer bookkeeping (counts, offsets from loaded lengths) computes on what it loads, but no float math: the
    # engines' index helpers, which the labellers call other, attention or kv_cache by purpose
    index = {"module": "pkg/ops/tiles.py", "ops": "load maximum store", "flow": "computes"}
    assert with_source(named, _body(index)) == named


def test_body_reads_ops_of_the_kernel_and_its_own_files_helpers() -> None:
    body = kernel_body(KERNELS, "_fill_tiles_kernel", _line(KERNELS, "def _fill_tiles_kernel"), "a/b.py")
    assert body is not None
    assert {"dot", "max", "exp2", "load", "store", "arange"} <= body.ops  # dot, max, exp2 come from the helper
    assert body.helpers == ("_online_softmax",)
    assert body.params == ("q_ptr", "k_ptr", "o_ptr", "BLOCK")
    assert body.doc == "Slot bookkeeping for a paged cache."  # the module's, the kernel has none
    assert body.module == "a/b.py"


FLOWS = [  # (what the body's stores write, the statements after ``offs``)
    ("moves", "    v = tl.load(src + offs)\n    tl.store(dst + offs, v)"),
    ("moves", "    v = tl.load(src + offs).to(tl.float32)\n    tl.store(dst + offs, v, mask=offs < n)"),
    ("moves", "    s = tl.load(slots + offs)\n    v = tl.load(src + s * 64)\n    tl.store(dst + s * 64, value=v)"),
    ("computes", "    v = tl.load(src + offs)\n    tl.store(dst + offs, tl.sigmoid(v) * v)"),
    (
        "computes",
        "    acc = tl.zeros([8], tl.float32)\n    for i in range(4):\n        acc += tl.load(src + i)\n    tl.store(dst, acc)",
    ),
    ("computes", "    v = tl.load(src + offs)\n    tl.atomic_add(dst + offs, v)"),
    ("", "    tl.store(dst + offs, offs * 2 + pid)"),  # indices only: nothing loaded is written
]


@pytest.mark.parametrize(("flow", "statements"), FLOWS)
def test_body_flow_says_whether_stores_move_or_compute_loaded_values(flow: str, statements: str) -> None:
    text = f"@triton.jit\ndef k(src, dst, slots, n):\n    pid = tl.program_id(0)\n    offs = pid * 8 + tl.arange(0, 8)\n{statements}\n"
    body = kernel_body(text, "k", 1, "pkg/ops/k.py")
    assert body is not None and body.flow == flow


def test_body_flow_of_an_expression_deeper_than_the_stack_is_unknown_not_an_error() -> None:
    deep = "+".join(["v"] * 2000)  # the parser takes it; a recursive walk of it would not
    text = f"@triton.jit\ndef k(src, dst):\n    v = tl.load(src)\n    w = {deep}\n    tl.store(dst, w)\n"
    body = kernel_body(text, "k", 1, "pkg/ops/k.py")
    assert body is not None and body.flow == "" and "store" in body.ops


def test_body_is_found_from_any_line_of_its_decorators_or_its_def() -> None:
    first = _line(KERNELS, "@triton.autotune")
    for line in (first, first + 1, first + 2):
        body = kernel_body(KERNELS, "_move_rows_kernel", line, "m.py")
        assert body is not None and body.params[0] == "slot_ptr"
    assert kernel_body(KERNELS, "_move_rows_kernel", first + 3, "m.py") is None  # inside the body: not its def
    assert kernel_body(KERNELS, "_no_such_kernel", first, "m.py") is None
    assert kernel_body("def broken(:\n", "broken", 1, "m.py") is None


def test_bad_source_rules_are_one_clear_error() -> None:
    from importlib import resources

    import yaml

    text = resources.files("kernelscope.identity").joinpath("rules.yaml").read_text()
    doc = yaml.safe_load(text)
    doc["sources"][0]["match"] = {"name": "x"}  # a name field: source rules read source facts only
    with pytest.raises(InputError, match="unknown field 'name'"):
        parse(doc)
    doc = yaml.safe_load(text)
    doc["sources"][0]["examples"][0]["body"] = "tl.dot"
    with pytest.raises(InputError, match="unknown example field"):
        parse(doc)
    doc = yaml.safe_load(text)
    del doc["sources"][0]["category"]
    with pytest.raises(InputError, match="needs the category it decides"):
        parse(doc)
    doc = yaml.safe_load(text)
    doc["sources"][0]["over"] = ["no-such-rule"]
    with pytest.raises(InputError, match="kv-cache-module: over names no category rule: no-such-rule"):
        parse(doc)
    doc = yaml.safe_load(text)
    doc["source_weak"].append("no-such-rule")
    with pytest.raises(InputError, match="source_weak names no category rule: no-such-rule"):
        parse(doc)


def _engine(tmp_path: Path) -> Path:
    """A checkout holding the kernels in a memory-pool module, and ``_fill_tiles_kernel`` again elsewhere."""
    repo = tmp_path / "engine"
    (repo / "engine" / "mem_cache").mkdir(parents=True)
    (repo / "engine" / "ops").mkdir(parents=True)
    (repo / "engine" / "mem_cache" / "slots.py").write_text(KERNELS + PLAIN)
    (repo / "engine" / "ops" / "tiles.py").write_text(
        KERNELS.replace("_move_rows_kernel", "_other_kernel").replace("q_ptr, k_ptr, o_ptr", "o_ptr, q_ptr, k_ptr")
    )
    return repo


def test_find_decides_a_resolved_triton_kernel_by_its_body(tmp_path: Path) -> None:
    repo = _engine(tmp_path)
    index = SourceIndex(tmp_path / "i.sqlite")
    index.index([repo])
    found = {
        m.name: m for m in Finder(index).find(["_move_rows_kernel", "_rms_norm_slots_kernel", "_fill_tiles_kernel"])
    }
    moved = found["_move_rows_kernel"]
    assert moved.status == "resolved" and moved.location is not None and moved.location.path.endswith("slots.py")
    assert (moved.category, moved.category_rule) == ("kv_cache", "source:kv-cache-module")
    assert classify(["_move_rows_kernel"])[0].category != "kv_cache"  # the name alone does not say it
    assert (moved.kind, moved.kind_rule) == ("triton", classify(["_move_rows_kernel"])[0].rule)  # named Triton already
    assert (found["_rms_norm_slots_kernel"].category, found["_rms_norm_slots_kernel"].category_rule) == ("norm", "norm")
    # defined in two files with other parameters: ambiguous, but both bodies say attention (their helper's dot,
    # max and exp2), which the name alone does not
    tiles = found["_fill_tiles_kernel"]
    assert tiles.status == "ambiguous" and (tiles.category, tiles.category_rule) == (
        "attention",
        "source:attention-dot",
    )
    assert classify(["_fill_tiles_kernel"])[0].category != "attention"


def test_gap_find_sources_takes_the_category_the_source_decided(tmp_path: Path) -> None:
    from kernelscope.api import gap_report

    events = [
        {"ph": "X", "cat": "kernel", "name": n, "pid": 0, "tid": 7, "ts": 100.0 + 10 * i, "dur": 5.0,
         "args": {"device": 0, "stream": 7, "correlation": i + 1}}
        for i, n in enumerate(["_move_rows_kernel", "_rms_norm_slots_kernel", "move_rows_kernel"])
    ]  # fmt: skip
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    got = gap_report([trace], find_sources=True, repo=[_engine(tmp_path)], index_db=tmp_path / "i.sqlite")
    rows = {r.name: r for r in got.kernels}
    assert rows["_move_rows_kernel"].category == "kv_cache" and rows["_move_rows_kernel"].source_status == "resolved"
    assert rows["_rms_norm_slots_kernel"].category == "norm"
    assert (rows["move_rows_kernel"].kind, rows["move_rows_kernel"].category) == ("triton", "kv_cache")
    plain = {r.name: r.category for r in gap_report([trace]).kernels}
    assert plain["_move_rows_kernel"] == classify(["_move_rows_kernel"])[0].category != "kv_cache"


def test_a_bare_name_resolved_to_a_triton_function_is_triton(tmp_path: Path) -> None:
    """A lower-case bare name with no library mark is ``unknown`` by its name alone (the taxonomy's row); once it
    resolves to a ``@triton.jit`` function, its source proves the compiler."""
    named = classify(["move_rows_kernel"])[0]
    assert named.kind == "unknown"
    index = SourceIndex(tmp_path / "i.sqlite")
    index.index([_engine(tmp_path)])
    [found] = Finder(index).find(["move_rows_kernel"])
    assert found.status == "resolved"
    assert (found.kind, found.kind_rule) == ("triton", "source:triton-definition")
    assert (found.category, found.category_rule) == ("kv_cache", "source:kv-cache-module")
    # two different @triton.jit definitions: which one ran is open, that Triton compiled it is not
    (tmp_path / "engine" / "engine" / "ops" / "more.py").write_text(PLAIN.replace("n, BLOCK", "n, m, BLOCK"))
    index.index([tmp_path / "engine"])
    [both] = Finder(index).find(["move_rows_kernel"])
    assert both.status == "ambiguous" and {c.definition for c in both.candidates} == {"triton"}
    assert (both.kind, both.kind_rule, both.category) == ("triton", "source:triton-definition", named.category)
    [other] = Finder(index).find(["no_such_rows_kernel"])
    assert (other.status, other.kind, other.kind_rule) == ("not_found", "unknown", named.rule)


def test_an_ambiguous_triton_name_takes_the_category_all_its_definitions_agree_on(tmp_path: Path) -> None:
    """Which of two definitions ran is open; what it computes is not when both bodies say the same (an engine
    keeps one copy of a kernel per backend); where they differ (the test above), the name decides."""
    repo = _engine(tmp_path)
    (repo / "engine" / "mem_cache" / "paged.py").write_text(PLAIN.replace("n, BLOCK", "n, m, BLOCK"))
    index = SourceIndex(tmp_path / "i.sqlite")
    index.index([repo])
    [both] = Finder(index).find(["move_rows_kernel"])
    assert both.status == "ambiguous" and len(both.candidates) == 2
    assert (both.category, both.category_rule) == ("kv_cache", "source:kv-cache-module")
    assert classify(["move_rows_kernel"])[0].category != "kv_cache"


def test_suggest_reads_each_kernel_as_its_source_shows(tmp_path: Path) -> None:
    """With a repository, suggest's facts take the kind and category the kernels' sources show (the rules that
    need a GEMM or a fusable category then see them); without one, the name's."""
    from kernelscope import api
    from kernelscope.analyses.suggest import Evidence, kernels

    events = [
        {"ph": "X", "cat": "kernel", "name": n, "pid": 0, "tid": 7, "ts": 100.0 + 10 * i, "dur": 5.0,
         "args": {"device": 0, "stream": 7, "correlation": i + 1}}
        for i, n in enumerate(["move_rows_kernel", "_rms_norm_slots_kernel"])
    ]  # fmt: skip
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    gap = api.gap_report([trace])
    found = api.locate_sources(
        ["move_rows_kernel", "_rms_norm_slots_kernel"], repos=[_engine(tmp_path)], db=tmp_path / "i.sqlite"
    )
    plain = {f.name: f.identity for f in kernels(Evidence(gap=gap))[0]}
    read = {f.name: f.identity for f in kernels(Evidence(gap=gap, sources={m.name: m for m in found}))[0]}
    assert (plain["move_rows_kernel"].kind, plain["move_rows_kernel"].category) == ("unknown", "other")
    assert (read["move_rows_kernel"].kind, read["move_rows_kernel"].category) == ("triton", "kv_cache")
    assert read["move_rows_kernel"].category_rule == "source:kv-cache-module"
    assert read["_rms_norm_slots_kernel"] == plain["_rms_norm_slots_kernel"]
