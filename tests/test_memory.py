"""``kscope memory``: the record schema, validated writes and reads, masking, concurrent ``new``, records
made from a real eval, the views and the CLI contract.

``tests/data/memory/v1.json`` is a full record written by hand: every field filled, valid.
"""

from __future__ import annotations

import inspect
import json
import multiprocessing
import subprocess
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
import typer
from conftest import assert_one_error_line, run_kscope
from test_loop_eval import Synth, git, make_workspace
from typer.testing import CliRunner

from kernelscope import api
from kernelscope.cli import app
from kernelscope.errors import FormatError, InputError
from kernelscope.loop.memory import parse, schema_file
from kernelscope.model.levers import LEVERS
from kernelscope.model.memory import Correctness, MemoryRecord, Performance, json_schema, json_schema_text
from kernelscope.model.task import STATUSES

FULL = Path(__file__).parent / "data" / "memory" / "v1.json"
DELETE = object()


def full() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(FULL.read_text())
    return doc


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    api.init_workspace(tmp_path / "ws")
    return tmp_path / "ws"


def new(ws: Path, category: str = "memory_access", **fields: Any) -> MemoryRecord:
    return api.memory_new(workspace=ws, category=category, author="alice", **fields)


def on_disk(ws: Path, version: int) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((ws / "memory" / f"v{version}.json").read_text())
    return doc


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The CLI in this process, as a ``CompletedProcess`` for conftest's checks (each ``kscope`` subprocess
    pays Python's start-up)."""
    res = CliRunner().invoke(app, [str(a) for a in args])
    return subprocess.CompletedProcess(args, res.exit_code, res.stdout, res.stderr)


def cli_json(*args: str | Path) -> dict[str, Any]:
    proc = cli(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


# --- the schema ------------------------------------------------------------------------------------


def _unordered(node: Any) -> Any:
    """A JSON Schema with every ``anyOf`` list sorted: the order of alternatives carries no meaning."""
    if isinstance(node, dict):
        return {k: sorted(map(_unordered, v), key=json.dumps) if k == "anyOf" else _unordered(v)
                for k, v in node.items()}  # fmt: skip
    return [_unordered(v) for v in node] if isinstance(node, list) else node


def test_the_checked_in_schema_is_the_structs() -> None:
    """``memory.v1.json`` (for readers other than kscope) is ``json_schema()``, a valid draft 2020-12 schema that
    accepts the full record, which the Struct reads and writes back unchanged."""
    from jsonschema import Draft202012Validator

    schema = json_schema()
    # compared as schemas, not text: msgspec < 0.22 lists a nullable field's anyOf alternatives in another order
    if _unordered(json.loads(schema_file().read_text())) != _unordered(schema):
        pytest.fail(f"{schema_file()} is out of date: write kernelscope.model.memory.json_schema_text() to it")
    assert json.loads(json_schema_text()) == schema
    assert schema_file().is_relative_to(Path(api.__file__).parent.parent / "data")  # package data: ships in the wheel
    Draft202012Validator.check_schema(schema)
    record = schema["$defs"]["MemoryRecord"]["properties"]
    assert record["category"]["enum"] == sorted(LEVERS)
    assert schema["$defs"]["Performance"]["properties"]["status"]["enum"] == sorted(STATUSES)
    doc = full()
    assert Draft202012Validator(schema).is_valid(doc)
    assert Draft202012Validator(schema).is_valid(doc | {"quality_gate": {"passed": True}})  # no checks, none failed
    assert msgspec.to_builtins(parse(FULL.read_bytes(), 1)) == doc


def _mutate(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split("/")]
        node: Any = doc
        for p in parents:
            node = node[p]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value

    return change


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (_mutate("category", "faster"), r"at \$\.category: Invalid enum value 'faster'"),
        (_mutate("evidence/0/inference", DELETE), r"at \$\.evidence\[0\]: Object missing required field `inference`"),
        (_mutate("evidence/1/action", "  "), r"at \$\.evidence\[1\]\.action: expected non-empty text"),
        (_mutate("notes", "extra"), r"at \$: Object contains unknown field `notes`"),
        (_mutate("performance/spedup", 2.0), r"at \$\.performance: Object contains unknown field `spedup`"),
        (_mutate("performance/status", "great"), r"at \$\.performance\.status: Invalid enum value 'great'"),
        (_mutate("performance/ci", [1.0]), r"at \$\.performance\.ci: Expected `array` of length >= 2"),
        (_mutate("correctness/status", "ok"), r"at \$\.correctness\.status"),
        (
            _mutate("isa_metrics/after/vgpr", "88"),
            r"at \$\.isa_metrics\.after\[\.\.\.\]: Expected `int \| float`, got `str`",
        ),
        (_mutate("quality_gate/checks/1/passed", False), r"at \$\.quality_gate: passed is true but a check failed"),
        (_mutate("commit", "main"), r"at \$\.commit: Expected `str` matching regex"),
        (_mutate("created", "yesterday"), r"at \$\.created: Expected `str` matching regex"),
        (_mutate("version", 2), r"at \$\.version: 2 is not the N of the file name v1\.json"),
        (_mutate("masked", {"by": "x", "at": "2025-06-02T00:00:00Z", "reason": "r"}), r"at \$\.masked: disagrees"),
        (_mutate("history", []), None),  # valid: a record never masked
    ],
)
def test_a_hand_edited_record_is_validated_on_read(
    ws: Path, change: Callable[[dict[str, Any]], None], where: str | None
) -> None:
    from jsonschema import Draft202012Validator

    doc = full()
    change(doc)
    (ws / "memory" / "v1.json").write_text(json.dumps(doc))
    beyond_json_schema = where is not None and ("file name" in where or "disagrees" in where)  # kscope checks those
    assert Draft202012Validator(json_schema()).is_valid(doc) == (where is None or beyond_json_schema)
    if where is None:
        assert api.memory_show(1, workspace=ws).version == 1
        return
    for read in (lambda: api.memory_show(1, workspace=ws), lambda: api.memory_list(workspace=ws)):
        with pytest.raises(FormatError, match=rf"memory/v1\.json: expected a kernelscope\.memory\.v1 record.* {where}"):
            read()


# --- writing ----------------------------------------------------------------------------------------


def test_new_and_set(ws: Path) -> None:
    r = new(ws, kernel="softmax_kernel", task="softmax", title="128-bit loads")
    assert (r.version, r.category, r.author, r.title) == (1, "memory_access", "alice", "128-bit loads")
    assert r.performance is None and r.masked is None and r.history == []
    assert datetime.fromisoformat(r.created).tzinfo == UTC
    assert on_disk(ws, 1) == msgspec.to_builtins(r)  # every key written, validated
    patch = ws / "patch.json"
    patch.write_text(json.dumps({"hypothesis": "fewer VMEM instructions", "task": None, "references": ["docs/att.md"]}))
    r = api.memory_set(
        1,
        [
            "performance.metric=time_us",  # objects on the way are made
            "performance.direction=lower",
            "performance.status=improved",
            "performance.speedup=1.25",  # JSON when it parses
            "performance.ci=[1.2, 1.3]",
            "evidence[-1].source=kscope att --json hotspots[0]",  # the evidence just added
            "pitfalls+=tail loop for rows % 4",  # text when it does not
            "isa_metrics.after.vgpr=88",
            'title="42"',  # a JSON string keeps digits as text
            'search_log+={"what": "unroll 4", "result": "spills"}',
        ],
        workspace=ws,
        from_json=patch,
        add_evidence=("38% stall on vmcnt", "latency not hidden", "float4 loads"),
    )
    doc = on_disk(ws, 1)
    perf = {"metric": "time_us", "direction": "lower", "status": "improved", "speedup": 1.25, "ci": [1.2, 1.3]}
    assert {k: doc["performance"][k] for k in perf} == perf and doc["performance"]["baseline"] is None
    assert doc["evidence"] == [
        {
            "evidence": "38% stall on vmcnt",
            "inference": "latency not hidden",
            "action": "float4 loads",
            "source": "kscope att --json hotspots[0]",
        }
    ]
    assert doc["pitfalls"] == ["tail loop for rows % 4"]
    assert doc["task"] is None and doc["hypothesis"] == "fewer VMEM instructions" and doc["title"] == "42"
    assert doc["isa_metrics"] == {"before": {}, "after": {"vgpr": 88}, "source": None}
    assert doc["search_log"] == [{"what": "unroll 4", "result": "spills"}]
    assert r.title == "42" and r.references == ["docs/att.md"]


@pytest.mark.parametrize(
    ("assignment", "error"),
    [
        ("performance.speedup=fast", r"at \$\.performance\.speedup: Expected `float \| null`, got `str`"),
        ("performance.speedup=1.2", r"at \$\.performance: Object missing required field `metric`"),
        ("correctness.status=maybe", r"at \$\.correctness\.status: Invalid enum value 'maybe'"),
        ('evidence+={"evidence": "e", "action": "a"}', r"at \$\.evidence\[0\]: Object missing required field `inf"),
        ("perfomance.speedup=1.2", r"at \$: Object contains unknown field `perfomance`"),
        ("pitfalls+=null", r"at \$\.pitfalls\[0\]: Expected `str`, got `null`"),
        ("category=faster", r"Invalid enum value 'faster'"),
        ("version=7", "version is not for kscope memory set"),
        ("masked=null", r"masked is not for kscope memory set \(kscope memory mask\|unmask"),
        ("history+={}", "history is not for kscope memory set"),
        ("evidence[0].action=x", r"index 0 is out of range \(the list holds 0\)"),
        ("title+=more", r"title\+=: title is not a list"),
        ("performance..speedup=1", "expected a field path"),
        ("speedup", "expected FIELD=VALUE or FIELD"),
        ("title.word=x", r"\.word names a field of an object, found str"),
    ],
)
def test_an_invalid_set_writes_nothing(ws: Path, assignment: str, error: str) -> None:
    new(ws, title="t")
    before = (ws / "memory" / "v1.json").read_bytes()
    with pytest.raises(InputError, match=error):
        api.memory_set(1, ["kernel=k", assignment], workspace=ws)
    assert (ws / "memory" / "v1.json").read_bytes() == before


def test_from_json_is_a_merge_patch_and_cannot_touch_bookkeeping(ws: Path) -> None:
    new(ws, title="t", kernel="k")
    patch = ws / "patch.json"
    patch.write_text(json.dumps({"correctness": {"status": "passed", "commands": ["pytest"]}, "kernel": None}))
    r = api.memory_set(1, workspace=ws, from_json=patch)
    assert r.correctness is not None and r.correctness.commands == ["pytest"] and r.kernel is None
    patch.write_text(json.dumps({"correctness": {"notes": "flaky on gfx942"}}))  # merges into the object
    r = api.memory_set(1, workspace=ws, from_json=patch)
    assert r.correctness is not None and (r.correctness.status, r.correctness.notes) == ("passed", "flaky on gfx942")
    before = (ws / "memory" / "v1.json").read_bytes()
    for bad, error in (
        ({"history": []}, "history is not for kscope memory set"),
        ({"author": None}, r"missing required field `author`"),
        ([1], "expected a JSON object"),
    ):
        patch.write_text(json.dumps(bad))
        with pytest.raises(InputError, match=error):
            api.memory_set(1, workspace=ws, from_json=patch)
    patch.write_text("{not json")
    with pytest.raises(FormatError, match="invalid JSON"):
        api.memory_set(1, workspace=ws, from_json=patch)
    with pytest.raises(InputError, match="needs FIELD=VALUE"):
        api.memory_set(1, workspace=ws)
    assert (ws / "memory" / "v1.json").read_bytes() == before


def test_init_is_idempotent_and_leaves_other_files_alone(ws: Path) -> None:
    (ws / "memory" / "notes.txt").write_text("free-form notes stay\n")
    first = api.memory_init(workspace=ws)
    assert first.new and first.records == 0 and (ws / "memory" / "README.md").is_file()
    new(ws)
    new(ws)
    api.memory_mask(2, workspace=ws, by="bob", reason="noise")
    again = api.memory_init(workspace=ws)
    assert (again.new, again.records, again.masked) == (False, 2, 1)
    assert (ws / "memory" / "notes.txt").read_text() == "free-form notes stay\n"
    assert again.schema_file == str(schema_file())


def _new_after(barrier: Any, workspace: str, i: int) -> None:
    barrier.wait()
    api.memory_new(workspace=workspace, category="tile_shape", author=f"p{i}", title=f"from process {i}")


def test_eight_concurrent_new_make_v1_to_v8(ws: Path) -> None:
    """8 forked processes call ``memory new`` at the same moment: eight whole records, no number twice."""
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(8)
    procs = [ctx.Process(target=_new_after, args=(barrier, str(ws), i)) for i in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 8
    records = api.memory_list(workspace=ws).records
    assert [r.version for r in records] == list(range(1, 9))
    assert sorted(r.title or "" for r in records) == sorted(f"from process {i}" for i in range(8))
    assert sorted(p.name for p in (ws / "memory").iterdir()) == sorted(
        [".lock", *(f"v{n}.json" for n in range(1, 9))]
    )  # no temporary file left behind


# --- masking --------------------------------------------------------------------------------------------


def test_masked_records_leave_every_view_unless_asked(ws: Path) -> None:
    new(ws, kernel="k", title="one")
    new(ws, kernel="k", title="two")
    api.memory_set(2, ["pitfalls+=only in v2"], workspace=ws)
    new(ws, category="occupancy", kernel="k", title="three")
    api.memory_mask(2, workspace=ws, by="bob", reason="measured on a busy GPU")
    api.memory_mask(3, workspace=ws, by="bob", reason="wrong kernel")
    shown = api.memory_list(workspace=ws)
    assert [r.version for r in shown.records] == [1] and shown.hidden_masked == 2
    assert [r.version for r in api.memory_list(workspace=ws, include_masked=True).records] == [1, 2, 3]
    assert api.memory_list(workspace=ws, include_masked=True).hidden_masked == 0
    s = api.memory_summary(workspace=ws)
    assert (s.records, s.hidden_masked, s.pitfalls) == (1, 2, [])
    assert [(c.category, c.iterations) for c in s.categories] == [("memory_access", 1)]
    s = api.memory_summary(workspace=ws, include_masked=True)
    assert [(c.category, c.iterations) for c in s.categories] == [("memory_access", 2), ("occupancy", 1)]
    assert [p.text for p in s.pitfalls] == ["only in v2"]
    assert api.memory_latest(workspace=ws).version == 1
    assert api.memory_latest(workspace=ws, include_masked=True).version == 3
    assert api.memory_show(3, workspace=ws).masked is not None  # show still shows it
    api.memory_mask(1, workspace=ws, by="bob", reason="all bad")
    with pytest.raises(InputError, match=r"no memory records in .* \(3 masked: --include-masked shows them\)"):
        api.memory_latest(workspace=ws)
    text = cli("memory", "show", "v3", "-w", ws).stdout
    assert "MASKED by bob at" in text and "wrong kernel" in text
    assert "3 masked record(s) hidden; --include-masked shows them" in cli("memory", "list", "-w", ws).stdout


def test_mask_and_unmask_keep_who_and_when(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    new(ws)
    t0 = datetime.now(UTC).replace(microsecond=0)
    masked = api.memory_mask(1, workspace=ws, by="bob", reason="busy GPU")
    assert masked.masked is not None and (masked.masked.by, masked.masked.reason) == ("bob", "busy GPU")
    assert t0 <= datetime.fromisoformat(masked.masked.at) <= datetime.now(UTC)
    with pytest.raises(InputError, match=r"v1 is already masked \(by bob at"):
        api.memory_mask(1, workspace=ws, by="carol", reason="again")
    monkeypatch.setenv("USER", "carol")  # the default for --by
    r = api.memory_unmask(1, workspace=ws, reason="re-measured")
    assert r.masked is None
    assert [(e.action, e.by, e.reason) for e in r.history] == [
        ("mask", "bob", "busy GPU"),
        ("unmask", "carol", "re-measured"),
    ]
    assert r.history[0].at == masked.masked.at
    with pytest.raises(InputError, match="v1 is not masked"):
        api.memory_unmask(1, workspace=ws)
    with pytest.raises(InputError, match=r"at \$\.masked\.reason: expected non-empty text"):
        api.memory_mask(1, workspace=ws, reason=" ")
    api.memory_mask(1, workspace=ws, reason="r")
    unmasked_by_hand = on_disk(ws, 1) | {"masked": None}  # no unmask event: refused on read
    (ws / "memory" / "v1.json").write_text(json.dumps(unmasked_by_hand))
    with pytest.raises(FormatError, match=r"at \$\.masked: disagrees with the last event of \$\.history"):
        api.memory_list(workspace=ws, include_masked=True)


def test_the_author_comes_from_user_then_git(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USER", "dora")
    assert api.memory_new(workspace=ws, category="other").author == "dora"
    monkeypatch.delenv("USER")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    config = ws.parent / "gitconfig"
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    with pytest.raises(InputError, match="pass --author/--by NAME"):
        api.memory_new(workspace=ws, category="other")
    config.write_text("[user]\n\tname = Dora Git\n")
    assert api.memory_new(workspace=ws, category="other").author == "Dora Git"


# --- from an eval ----------------------------------------------------------------------------------------


def test_new_from_a_real_eval(tmp_path: Path) -> None:
    s: Synth = make_workspace(tmp_path)
    check = f"{sys.executable} check.py"
    s.new_task("t", runs=5, correctness=[check], kernel="softmax_kernel", lever="memory_access")
    s.configure(shift=0.8)
    git(s.repo, "commit", "-qam", "faster")  # a clean tree: the commit is what was measured
    result = api.evaluate("t", workspace=s.ws)
    assert result.status == "improved" and result.candidate.dirty is False
    r = api.memory_new(workspace=s.ws, author="a", from_eval=result.id)  # category and kernel: the task's
    assert (r.task, r.kernel, r.category, r.commit) == ("t", "softmax_kernel", "memory_access", result.candidate.commit)
    performance = Performance(
        metric="time_us",
        direction="lower",
        status="improved",
        baseline=result.baseline.median,
        candidate=result.candidate.median,
        speedup=result.speedup,
        ci=result.ci,
        p_value=result.p_value,
        runs=5,
        eval_id=result.id,
        result=result.result_path,
        diff_hash=result.candidate.diff_hash,
    )
    assert r.performance == performance
    assert r.correctness == Correctness(status="passed", commands=[check])

    # the tree had uncommitted changes: no commit holds what was measured
    path = s.ws / result.result_path
    doc = json.loads(path.read_text())
    doc["candidate"]["dirty"] = True
    path.write_text(json.dumps(doc | {"lever": None}))  # and a task that names no lever
    with pytest.raises(InputError, match=r"needs --category \(the eval's task names no lever\)"):
        api.memory_new(workspace=s.ws, author="a", from_eval=result.id)
    r = api.memory_new(workspace=s.ws, category="fusion", kernel="k", author="a", from_eval=result.id)
    assert (r.category, r.kernel, r.commit) == ("fusion", "k", None)  # what is given wins

    # result.json gone: the ledger line still has the verdict (and the lever), not the correctness runs
    path.unlink()
    r = api.memory_new(workspace=s.ws, author="a", from_eval=result.id)
    assert r.performance == performance and r.correctness is None and r.commit is None
    assert (r.category, r.kernel) == ("memory_access", "softmax_kernel")

    with pytest.raises(InputError, match=r"eval .* is of task t; drop --task"):
        api.memory_new(workspace=s.ws, category="other", author="a", from_eval=result.id, task="soft")
    with pytest.raises(InputError, match="no such eval"):
        api.memory_new(workspace=s.ws, category="other", author="a", from_eval="20990101T000000Z-00000000")
    with pytest.raises(InputError, match="expected an eval id"):
        api.memory_new(workspace=s.ws, category="other", author="a", from_eval="../t")
    assert [r.version for r in api.memory_list(workspace=s.ws).records] == [1, 2, 3]


# --- views ------------------------------------------------------------------------------------------------


def _measured(ws: Path, category: str, status: str, speedup: float, extra: Sequence[str] = (), task: str = "a") -> None:
    r = new(ws, category, task=task, kernel="k" if task == "a" else "other")
    perf = {"metric": "time_us", "direction": "lower", "status": status, "speedup": speedup}
    api.memory_set(r.version, [f"performance={json.dumps(perf)}", *extra], workspace=ws)


def test_summary_per_category_and_progress(ws: Path) -> None:
    _measured(ws, "memory_access", "improved", 1.10, ["isa_metrics.before.vgpr=64", "isa_metrics.after.vgpr=80"])
    _measured(ws, "tile_shape", "regressed", 0.90, ["pitfalls+=BLOCK 512 spills"])
    _measured(ws, "memory_access", "improved", 1.25, ["isa_metrics.after.vgpr=72", "isa_metrics.after.lds_bytes=4096"])
    _measured(ws, "memory_access", "neutral", 1.30, task="b")  # not a win, whatever its speedup
    new(ws, "fusion", task="a", kernel="k")  # not measured yet
    s = api.memory_summary(workspace=ws)
    rows = {c.category: (c.iterations, c.wins, c.best_speedup, c.best_version, c.latest) for c in s.categories}
    assert rows == {
        "memory_access": (3, 2, 1.25, 3, 4),
        "tile_shape": (1, 0, None, None, 2),
        "fusion": (1, 0, None, None, 5),
    }
    assert [c.category for c in s.categories] == ["memory_access", "tile_shape", "fusion"]  # LEVERS order
    (a, b) = s.progress
    assert (a.task, a.kernel, a.iterations, a.wins, a.best_speedup, a.best_version) == ("a", "k", 4, 2, 1.25, 3)
    assert [(m.metric, m.before, m.after) for m in a.isa] == [("vgpr", 64, 72), ("lds_bytes", None, 4096)]
    assert (b.iterations, b.wins, b.best_speedup) == (1, 0, None)
    assert [(p.version, p.text) for p in s.pitfalls] == [(2, "BLOCK 512 spills")]
    assert [r.version for r in api.memory_list(workspace=ws, task="a", category="memory_access").records] == [1, 3]
    assert [r.version for r in api.memory_list(workspace=ws, kernel="other").records] == [4]
    assert api.memory_latest(workspace=ws, category="tile_shape").version == 2
    with pytest.raises(InputError, match="--category faster: choose one of memory_access"):
        api.memory_list(workspace=ws, category="faster")
    text = cli("memory", "summary", "-w", ws).stdout
    assert "memory_access" in text and "vgpr 64 -> 72, lds_bytes ? -> 4096" in text and "BLOCK 512 spills" in text


# --- the CLI ------------------------------------------------------------------------------------------------


def test_every_json_output_carries_its_schema(ws: Path) -> None:
    assert cli_json("memory", "init", "-w", ws)["schema"] == "kernelscope.memory-init.v1"
    doc = cli_json("memory", "new", "-w", ws, "--category", "pipelining", "--author", "a", "--title", "prefetch [k+1]")
    assert (doc["schema"], doc["version"], doc["title"]) == ("kernelscope.memory.v1", 1, "prefetch [k+1]")
    doc = cli_json("memory", "set", "1", "-w", ws, "pitfalls+=x", "--add-evidence", "e", "i", "a")
    assert doc["pitfalls"] == ["x"] and doc["evidence"][0]["inference"] == "i"
    assert cli_json("memory", "show", "v1", "-w", ws) == doc
    assert cli_json("memory", "mask", "1", "-w", ws, "--by", "b", "--reason", "r")["masked"]["by"] == "b"
    assert cli_json("memory", "list", "-w", ws) == {
        "records": [],
        "hidden_masked": 1,
        "schema": "kernelscope.memory-list.v1",
    }
    assert cli_json("memory", "unmask", "1", "-w", ws, "--by", "b")["masked"] is None
    listed = cli_json("memory", "list", "-w", ws)
    assert [r["schema"] for r in listed["records"]] == ["kernelscope.memory.v1"]
    assert cli_json("memory", "summary", "-w", ws)["schema"] == "kernelscope.memory-summary.v1"
    assert cli_json("memory", "latest", "-w", ws)["version"] == 1
    human = cli("memory", "new", "-w", ws, "--category", "fusion", "--author", "a")
    assert human.returncode == 0 and human.stdout.startswith(f"wrote {ws / 'memory' / 'v2.json'}: v2 fusion")


def test_bad_input_is_one_error_line(ws: Path, tmp_path: Path) -> None:
    new(ws)
    for args in (
        ("memory", "list", "-w", tmp_path),  # not a workspace
        ("memory", "show", "7", "-w", ws),
        ("memory", "show", "seven", "-w", ws),
        ("memory", "new", "-w", ws, "--author", "a"),  # no --category
        ("memory", "new", "-w", ws, "--author", "a", "--category", "faster"),
        ("memory", "set", "1", "-w", ws, "performance.speedup=fast"),
        ("memory", "set", "1", "-w", ws, "a.-b=1"),
        ("memory", "set", "1", "-w", ws),
        ("memory", "mask", "1", "-w", ws, "--by", "b"),  # no --reason
        ("memory", "unmask", "1", "-w", ws, "--by", "b"),
        ("memory", "latest", "-w", ws, "--task", "nope"),
        ("memory", "summary", "-w", ws, "--category", "faster"),
    ):
        assert_one_error_line(cli(*args))
    broken = full()
    del broken["evidence"][0]["inference"]
    (ws / "memory" / "v2.json").write_text(json.dumps(broken | {"version": 2}))
    proc = run_kscope("memory", "list", "-w", ws)  # the real process: no traceback, one line
    assert_one_error_line(proc)
    assert f"{ws / 'memory' / 'v2.json'}: expected a kernelscope.memory.v1 record" in proc.stderr
    assert "at $.evidence[0]: Object missing required field `inference`" in proc.stderr


def _options(name: str) -> dict[str, Any]:
    group: Any = typer.main.get_command(app)
    command = group.commands["memory"].commands[name]
    return {p.name: p for p in command.params}


@pytest.mark.parametrize("name", ["init", "new", "show", "set", "mask", "unmask", "list", "summary", "latest"])
def test_cli_options_match_the_library(name: str) -> None:
    lib = inspect.signature(getattr(api, f"memory_{name}"))
    options = _options(name)
    for param_name, param in lib.parameters.items():
        assert param_name in options, f"kscope memory {name} has no option for api.memory_{name}({param_name}=...)"
        default = options[param_name].default
        if param.default not in (inspect.Parameter.empty, "."):
            assert default == param.default or (param.default == () and default is None), (name, param_name)
    assert set(options) - set(lib.parameters) == {"json"}
