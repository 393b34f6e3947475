"""Issue 16, deliverable 3: each class of hostile input the fuzzer found, on a real fixture mutated the way
``bench/fuzz.py`` mutates it, ends in a clean ``KernelscopeError`` or a read with the bad record dropped and
counted (a ``DroppedRecordsWarning``), never in an exception outside the hierarchy."""

from __future__ import annotations

import contextlib
import csv
import gzip
import json
import os
import shutil
import sqlite3
import warnings
from pathlib import Path

import msgspec
import pytest
from conftest import run_kscope

from kernelscope import api, readers
from kernelscope.codeobj.read import read_binary
from kernelscope.errors import DroppedRecordsWarning, FormatError, InputError, KernelscopeError, ToolFailedError
from kernelscope.model import Profile, numbers, text
from kernelscope.process import run_tool
from kernelscope.readers import att, ncu_source

DATA = Path(__file__).parent / "data"
DEMO = Path(__file__).parent.parent / "kernelscope" / "data" / "demo" / "mi350x" / "rmsnorm"
NSYS = DATA / "nsys" / "h100_transformer_eager.sqlite"
ROCPD = DATA / "rocpd" / "rmsnorm_results.db"
TRACE = DEMO / "discover_kernel_trace.csv"
STATS = DEMO / "discover_kernel_stats.csv"
FORMATS = [
    "kineto",
    "rocprof-kernel-trace",
    "rocprof-kernel-stats",
    "rocprof-json",
    "rocpd",
    "nsys-sqlite",
    "ncu-csv",
    "ncu-rep",
    "profile-json",
]


def _loop(tmp: Path) -> Path:
    a, b = tmp / "loop_a", tmp / "loop_b"
    a.symlink_to(b)
    b.symlink_to(a)
    return a


def _head(src: Path, dst: Path, lines: int = 12) -> Path:
    dst.write_bytes(b"".join(src.read_bytes().splitlines(keepends=True)[:lines]))
    return dst


# --- a directory or a symlink loop where a file is expected ---------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", ["directory", "symlink_loop"])
def test_directory_or_loop_is_an_input_error(tmp_path: Path, fmt: str, kind: str) -> None:
    path = tmp_path / "x.file" if kind == "directory" else _loop(tmp_path)
    if kind == "directory":
        path.mkdir()
    with pytest.raises(InputError):
        readers.read(path, fmt=fmt)
    with pytest.raises(InputError):
        readers.detect(path)


@pytest.mark.parametrize("kind", ["directory", "symlink_loop"])
def test_directory_or_loop_elsewhere(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "x.file" if kind == "directory" else _loop(tmp_path)
    if kind == "directory":
        path.mkdir()
    for call in (Profile.load, ncu_source.is_report, read_binary):
        with pytest.raises(InputError):
            call(path)  # type: ignore[operator]


def test_att_wave_file_as_a_symlink_loop(tmp_path: Path) -> None:
    src = next((DATA / "att" / "fused_rope_cache" / "big").iterdir())
    folder = tmp_path / src.name
    shutil.copytree(src, folder)
    wave = sorted(folder.glob("se*_sm*_sl*_wv*.json"))[0]
    wave.unlink()
    wave.symlink_to(wave)
    with pytest.raises(KernelscopeError):
        att.read(folder, workers=1)


# --- numbers: 1e400, 2**64, -1, NaN, text where a number belongs -----------------------------------------


@pytest.mark.parametrize("end", ["1e400", str(2**64), "-1", "NaN", "x"])
def test_rocprof_trace_impossible_end_is_dropped_and_counted(tmp_path: Path, end: str) -> None:
    good = readers.read(_head(TRACE, tmp_path / "good.csv"), fmt="rocprof-kernel-trace")
    with (tmp_path / "good.csv").open(newline="") as f:
        rows = list(csv.reader(f))
    col = next(i for i, h in enumerate(rows[0]) if h.replace("_", "").lower() == "endtimestamp")
    rows[1][col] = end
    bad = tmp_path / "bad.csv"
    with bad.open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            prof = readers.read(bad, fmt="rocprof-kernel-trace")
        except FormatError:  # not an int64 timestamp at all: the reader's own clean error
            assert end != "-1"  # an end before the start is a record dropped, not a damaged file
            return
    assert len(prof.launches) == len(good.launches) - 1
    assert next(str(w.message) for w in seen if w.category is DroppedRecordsWarning).endswith(
        "dropped 1 kernel launches with impossible times (negative, non-finite or out of range)"
    )


@pytest.mark.parametrize("value", ["-1", "1e400", "-Infinity"])
def test_rocprof_stats_negative_or_infinite_row_is_dropped(tmp_path: Path, value: str) -> None:
    with _head(STATS, tmp_path / "s.csv").open(newline="") as f:
        rows = list(csv.reader(f))
    rows[1][-1] = value  # the last column is a time or a share: never negative
    with (tmp_path / "s.csv").open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DroppedRecordsWarning)
        prof = readers.read(tmp_path / "s.csv", fmt="rocprof-kernel-stats")
    assert all(
        v is None or v >= 0 for s in prof.stats for v in (s.total_ns, s.avg_ns, s.min_ns, s.max_ns, s.std_ns, s.pct)
    )


def test_ncu_source_csv_infinite_cell(tmp_path: Path) -> None:
    data = gzip.decompress((DATA / "ncu" / "h100_softmax_fast_source_sass.csv.gz").read_bytes())
    lines = data.splitlines(keepends=True)[:60]
    row = lines[-1].decode()
    cells = row.split('","')
    cells[-1] = '1e400"\n'
    lines[-1] = '","'.join(cells).encode()
    path = tmp_path / "src.csv"
    path.write_bytes(b"".join(lines))
    with contextlib.suppress(KernelscopeError):
        ncu_source.read(path)


@pytest.mark.parametrize("value", ["x", 1.5e300, float("inf"), b"\xff\x00", -(10**18)])
def test_nsys_hostile_start_is_dropped_and_counted(tmp_path: Path, value: object) -> None:
    db = tmp_path / "n.sqlite"
    shutil.copy(NSYS, db)
    before = len(readers.read(db, fmt="nsys-sqlite").launches)
    con = sqlite3.connect(db)
    con.execute(
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = ?, globalPid = ?, streamId = ? "
        "WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)",
        (value, value, value),
    )
    con.commit()
    con.close()
    with pytest.warns(DroppedRecordsWarning):
        prof = readers.read(db, fmt="nsys-sqlite")
    assert len(prof.launches) == before - 1
    assert all(k.duration_ns >= 0 and (k.start_ns or 0) >= 0 for k in prof.launches)


@pytest.mark.parametrize("value", ["x", "", float("inf"), b"\xff\x00", 2**63 - 1])
def test_rocpd_hostile_values(tmp_path: Path, value: object) -> None:
    db = tmp_path / "r.db"
    shutil.copy(ROCPD, db)
    con = sqlite3.connect(db)
    table = next(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE name LIKE 'rocpd_kernel_dispatch_%'"))
    cols = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
    sets = ", ".join(f'"{c}" = ?' for c in cols if c in ("grid_size_x", "workgroup_size_x", "start", "end"))
    con.execute(
        f'UPDATE "{table}" SET {sets} WHERE rowid = (SELECT min(rowid) FROM "{table}")', (value,) * sets.count("?")
    )
    con.commit()
    con.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DroppedRecordsWarning)
        prof = readers.read(db, fmt="rocpd")
    assert all(k.duration_ns >= 0 for k in prof.launches)


@pytest.mark.parametrize("number", ["1e400", "-1", "-1e18", str(2**66)])
def test_kineto_hostile_duration(tmp_path: Path, number: str) -> None:
    doc = json.loads(gzip.decompress((DATA / "kineto" / "h100_transformer_eager.json.gz").read_bytes()))
    good = readers.read(DATA / "kineto" / "h100_transformer_eager.json.gz")
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    kernels[0]["dur"] = "__HOSTILE__"
    path = tmp_path / "k.json"
    path.write_text(json.dumps(doc).replace('"__HOSTILE__"', number))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # numpy's "invalid value encountered in cast"
        warnings.simplefilter("ignore", DroppedRecordsWarning)
        try:
            prof = readers.read(path, fmt="kineto")
        except FormatError:  # 1e400 is not a JSON number msgspec decodes: a clean error
            assert number == "1e400"
            return
        assert len(prof.launches) == len(good.launches) - 1
        assert all(k.duration_ns >= 0 for k in prof.launches)
        cols = list(readers.stream_columns(path, fmt="kineto") or [])
        assert sum(len(c.kernels) for c in cols) == len(prof.launches)
        assert all((c.kernels.duration_ns >= 0).all() for c in cols)
        assert api.gap_report([path], fmt="kineto").totals.launches == len(prof.launches)


def test_kineto_every_launch_of_a_kernel_dropped_and_a_huge_device(tmp_path: Path) -> None:
    doc = json.loads(gzip.decompress((DATA / "kineto" / "h100_transformer_eager.json.gz").read_bytes()))
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    for e in kernels:
        if e["name"] == kernels[0]["name"]:
            e["dur"] = -1
    kernels[-1].setdefault("args", {})["device"] = "__HUGE__"
    path = tmp_path / "k.json"
    path.write_text(json.dumps(doc).replace('"__HUGE__"', str(2**70)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DroppedRecordsWarning)
        report = api.gap_report([path], fmt="kineto")
    assert kernels[0]["name"] not in {r.name for r in report.kernels}
    assert report.totals.dropped_records == sum(e["name"] == kernels[0]["name"] for e in kernels)  # in the JSON too


def test_numbers_helper() -> None:
    assert numbers.to_int("1,234") == 1234 and numbers.to_int("12.0") == 12
    for bad in ("1e400", "NaN", "inf", str(2**64), float("nan"), b"1", None, True, "x", ""):
        assert numbers.to_int(bad) is None, bad
    assert numbers.to_duration(-1) is None and numbers.span(5, 3) is None and numbers.span(3, 5) == 2
    assert numbers.ns_from_us(float("inf")) is None and numbers.ns_from_us(1.5) == 1500
    assert numbers.int64s([1, 2**64]) is None


def test_profile_json_huge_or_negative_times_are_dropped(tmp_path: Path) -> None:
    prof = readers.read(DATA / "kineto" / "h100_transformer_eager.json.gz")
    path = tmp_path / "p.json"
    prof.save(path)
    raw = path.read_text()
    first = json.loads(raw)["launches"][0]
    raw = raw.replace(f'"duration_ns":{first["duration_ns"]}', f'"duration_ns":{2**64}', 1)
    raw = raw.replace(f'"start_ns":{first["start_ns"]}', '"start_ns":-1', 1)
    path.write_text(raw)
    with pytest.warns(DroppedRecordsWarning, match="dropped"):
        loaded = Profile.load(path)
    assert 1 <= len(prof.launches) - len(loaded.launches) <= 2
    raw = path.read_text().replace(f'"duration_ns":{2**64}', f'"duration_ns":{first["duration_ns"]}', 1)
    raw = raw.replace('"start_ns":-1', f'"start_ns":{first["start_ns"]}', 1)
    value = next(k["launch_dur_ns"] for k in json.loads(raw)["launches"] if k.get("launch_dur_ns"))
    path.write_text(raw.replace(f'"launch_dur_ns":{value},', '"launch_dur_ns":-1,', 1))  # a launching call's time
    with pytest.warns(DroppedRecordsWarning, match="dropped"):
        loaded = Profile.load(path)
    assert len(prof.launches) - len(loaded.launches) == 1
    from kernelscope.model.columns import OpColumns

    bad = [msgspec.structs.replace(prof.launches[0], duration_ns=2**64), *prof.launches[1:]]
    with pytest.warns(DroppedRecordsWarning):
        cols = OpColumns.from_records(bad)
    assert len(cols) == len(prof.launches) - 1


def test_host_ranges_with_huge_ids_or_impossible_times_never_reach_the_columns() -> None:
    """A host range's thread id beyond int64 is "thread unknown"; a harness mark with an impossible time is
    dropped (kscope's own profile JSON carries both; a damaged one reached numpy's int64 conversion)."""
    from kernelscope.model.columns import HARNESS_MARK, NO_DEVICE, LaunchColumns
    from kernelscope.model.records import Annotation

    prof = readers.read(DATA / "kineto" / "h100_transformer_eager.json.gz")
    k = prof.launches[0]
    marks = [
        Annotation(name=HARNESS_MARK + "do_bench", start_ns=2**64, end_ns=2**64 + 5, thread=1),
        Annotation(name=HARNESS_MARK + "do_bench", start_ns=10, end_ns=5, thread=1),
        Annotation(name="aten::mm", start_ns=1, end_ns=2, thread=2**70),
    ]
    cols = LaunchColumns.from_profile(msgspec.structs.replace(prof, annotations=[*prof.annotations, *marks]))
    batch = next(c for c in cols if c.rank == k.rank and c.host is not None)  # the rank's first batch holds them
    assert batch.harness_marks is not None and batch.harness_marks.shape == (0, 2)
    assert batch.host is not None and NO_DEVICE in batch.host.device.tolist()


def test_att_code_table_out_of_int64(tmp_path: Path) -> None:
    src = next((DATA / "att" / "fused_rope_cache" / "big").iterdir())
    folder = tmp_path / src.name
    shutil.copytree(src, folder)
    code = (folder / "code.json").read_text()
    doc = json.loads(code)
    rows = doc["code"]
    rows[0][6] = "__HOSTILE__"
    (folder / "code.json").write_text(json.dumps(doc).replace('"__HOSTILE__"', str(2**64)))
    with pytest.raises(FormatError, match="int64"):
        att.read(folder, workers=1)


@pytest.mark.parametrize("column", [6, 7, 8, 9])
def test_att_negative_cycle_counts_are_refused(tmp_path: Path, column: int) -> None:
    """code.json's hit, latency, stall and idle columns count events and cycles: a negative one is a damaged
    file, refused in one line, never summed into negative stall totals."""
    src = next((DATA / "att" / "fused_rope_cache" / "big").iterdir())
    folder = tmp_path / src.name
    shutil.copytree(src, folder)
    doc = json.loads((folder / "code.json").read_text())
    doc["code"][3][column] = -1
    (folder / "code.json").write_text(json.dumps(doc))
    with pytest.raises(FormatError, match="negative count"):
        att.read(folder, workers=1)


def test_att_negative_wave_state_count_is_refused(tmp_path: Path) -> None:
    src = next((DATA / "att" / "fused_rope_cache" / "big").iterdir())
    folder = tmp_path / src.name
    shutil.copytree(src, folder)
    path = next(folder.glob("wstates*.json"))
    doc = json.loads(path.read_text())
    doc["state"][0] = -3
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match="negative number"):
        att.read(folder, workers=1)


# --- text: invalid UTF-8 in a name (replaced) and in the structure (a FormatError) ----------------------


def _profile_json(tmp_path: Path) -> tuple[Path, bytes]:
    prof = readers.read(DATA / "kineto" / "h100_transformer_eager.json.gz")
    path = tmp_path / "p.json"
    prof.save(path)
    return path, path.read_bytes()


def test_invalid_utf8_in_a_name_is_replaced(tmp_path: Path) -> None:
    path, raw = _profile_json(tmp_path)
    at = raw.index(b'"name":"') + len(b'"name":"')
    path.write_bytes(raw[:at] + b"\xff\xfe" + raw[at:])
    prof = Profile.load(path)
    assert prof.launches[0].name.startswith("\ufffd")


def test_invalid_utf8_in_the_structure_is_a_format_error(tmp_path: Path) -> None:
    path, raw = _profile_json(tmp_path)
    at = raw.index(b'"launches"')
    path.write_bytes(raw[:at] + b"\xc0\xaf" + raw[at:])
    with pytest.raises(FormatError):
        Profile.load(path)


def test_invalid_utf8_in_kineto_and_rocprof_json_names(tmp_path: Path) -> None:
    data = gzip.decompress((DATA / "kineto" / "h100_transformer_eager.json.gz").read_bytes())
    at = data.index(b'"name": "') + len(b'"name": "')
    (tmp_path / "k.json").write_bytes(data[:at] + b"\xed\xa0\x80" + data[at:])
    readers.read(tmp_path / "k.json", fmt="kineto")
    rj = gzip.decompress((DATA / "rocprof_json" / "rmsnorm_att_results.json.gz").read_bytes())
    at = rj.index(b'"name": "') + len(b'"name": "') if b'"name": "' in rj else rj.index(b'"name":"') + 8
    (tmp_path / "r.json").write_bytes(rj[:at] + b"\xff" + rj[at:])
    readers.read(tmp_path / "r.json", fmt="rocprof-json")
    assert text.json(b'{"a":"\xff"}') == {"a": "\ufffd"}


def test_invalid_utf8_in_sqlite_text(tmp_path: Path) -> None:
    db = tmp_path / "n.sqlite"
    shutil.copy(NSYS, db)
    con = sqlite3.connect(db)
    con.execute("UPDATE StringIds SET value = CAST(? AS TEXT) WHERE id = (SELECT min(id) FROM StringIds)", (b"k\xff",))
    con.commit()
    con.close()
    assert readers.detect(db) == "nsys-sqlite"
    readers.read(db)


# --- ELF -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["truncate", "huge_shoff", "shstrndx", "symtab_link"])
def test_damaged_elf_is_a_format_error(tmp_path: Path, damage: str) -> None:
    data = bytearray((DATA / "codeobj" / "softmax_gfx942.hsaco").read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 3]
    elif damage == "huge_shoff":
        data[0x28:0x30] = (2**63 + 12345).to_bytes(8, "little")
    elif damage == "shstrndx":
        data[0x3E:0x40] = (0xFFF0).to_bytes(2, "little")
    else:
        data[0x3C:0x3E] = (0x7FFF).to_bytes(2, "little")  # e_shnum far beyond the file
    path = tmp_path / "x.hsaco"
    path.write_bytes(bytes(data))
    try:
        objs = read_binary(path)
    except KernelscopeError:
        return
    assert isinstance(objs, list)


# --- SQLite by an escaped URI; external tools with a timeout; one-line errors ----------------------------


@pytest.mark.parametrize("name", ["a#b.sqlite", "a?b.sqlite", "a%20b.sqlite", "a%b.sqlite"])
def test_sqlite_name_with_uri_characters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(NSYS, tmp_path / name)
    assert readers.detect(name) == "nsys-sqlite"
    assert readers.read(name).launches
    assert sorted(os.listdir(tmp_path)) == [name]  # no stray "a" made by a URI that lost ?mode=ro


def test_rocpd_name_with_a_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROCPD, tmp_path / "r#1.db")
    assert readers.detect("r#1.db") == "rocpd"
    assert readers.read("r#1.db").launches
    assert os.listdir(tmp_path) == ["r#1.db"]


def test_tool_timeout_is_one_error_line() -> None:
    with pytest.raises(ToolFailedError, match="timeout") as exc:
        run_tool(["sleep", "5"], timeout_s=0.2)
    assert "\n" not in str(exc.value)
    with pytest.raises(ToolFailedError):
        run_tool(["/nonexistent/tool"])


def test_error_messages_are_one_line() -> None:
    e = FormatError("f.sqlite", "a table", "CREATE TABLE t(\n  a INT\n)\x1b[31m")
    assert "\n" not in str(e) and "\x1b" not in str(e) and "\\n" in str(e)
    assert str(InputError("a\r\nb")) == "a\\r\\nb"


HOSTILE = "gemm\x1b[2J\x1b]0;pwned\x07\x9b31m\nkscope: error: forged line"


def _hostile_trace(tmp_path: Path) -> Path:
    """The eager H100 trace with its hottest kernel renamed HOSTILE."""
    doc = json.loads(gzip.decompress((DATA / "kineto" / "h100_transformer_eager.json.gz").read_bytes()))
    hot = max((e for e in doc["traceEvents"] if e.get("cat") == "kernel"), key=lambda e: e["dur"])
    for e in doc["traceEvents"]:
        if e.get("name") == hot["name"]:
            e["name"] = HOSTILE
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(doc))
    return trace


def test_hostile_kernel_names_cannot_reach_the_terminal_or_forge_lines(tmp_path: Path) -> None:
    """A kernel name is the profiled program's to choose: in every human format (table, CSV, Markdown, the
    report's files) its control characters are escaped; the JSON keeps the exact name."""
    trace = _hostile_trace(tmp_path)
    outputs = {}
    for flag in ("", "--csv", "--markdown"):
        done = run_kscope("gap", trace, *([flag] if flag else []))
        assert done.returncode == 0, done.stderr
        outputs[flag or "table"] = done.stdout
    assert run_kscope("report", trace, "-o", tmp_path / "rep").returncode == 0
    outputs |= {p.name: p.read_text() for p in (tmp_path / "rep").iterdir() if p.suffix in (".md", ".html")}
    for where, text_out in outputs.items():
        assert not any(c in text_out for c in "\x1b\x07\x9b"), where
        assert "\nkscope: error: forged" not in text_out, where
        assert "\\x1b[2J" in text_out, where  # shown, escaped
    raw = run_kscope("gap", trace, "--json").stdout
    assert not any(c in raw for c in "\x1b\x07\x9b")  # C0 and C1 as \u escapes, even on a terminal
    assert HOSTILE in {k["name"] for k in json.loads(raw)["kernels"]}  # the exact name, by JSON's own rules


@pytest.mark.parametrize(
    "args",
    [
        ("diff", "{trace}", "{base}"),
        ("diff", "{trace}", "{base}", "--csv"),
        ("diff", "{trace}", "{base}", "--markdown"),
        ("suggest", "{trace}"),
        ("suggest", "{trace}", "--markdown"),
        ("roofline", "{trace}"),
        ("shapes", "{trace}"),
        ("shapes", "{trace}", "--json"),
        ("classify", HOSTILE),
        ("classify", HOSTILE, "--csv"),
        ("classify", HOSTILE, "--markdown"),
        ("find", HOSTILE, "--repo", "{repo}", "--db", "{db}"),
        ("find", HOSTILE, "--repo", "{repo}", "--db", "{db}", "--csv"),
        ("gap", "{trace}", "--group-by", "variant"),
        ("gap", "{trace}", "--phase-by", "."),
        ("replay", "{trace}", "--list"),
        ("replay", "{trace}", "--kernel", "gemm", "-o", "{script}"),
    ],
)
def test_every_command_that_prints_a_name_escapes_it(tmp_path: Path, args: tuple[str, ...]) -> None:
    """Issue 16 deliverable 5, command by command: no raw control character (C0, DEL, C1) and no forged
    line reach the terminal from a kernel name, in tables, CSV, Markdown or JSON."""
    where = {"trace": _hostile_trace(tmp_path), "base": DATA / "kineto" / "h100_transformer_eager.json.gz"}
    where |= {"repo": DATA / "srcrepos" / "vllm", "db": tmp_path / "i.sqlite", "script": tmp_path / "replay.py"}
    done = run_kscope(*[a.format(**where) if a.startswith("{") else a for a in args])
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert not any(c in out for c in "\x1b\x07\x9b")
    assert "\nkscope: error: forged" not in out


def test_a_replay_script_shows_a_hostile_name_escaped_and_keeps_it_exact(tmp_path: Path) -> None:
    """The script ``kscope replay`` writes is read in terminals and editors: its docstring shows the kernel's
    name escaped, its ``REPLAY`` literal keeps the exact name (which ``--check`` compares against)."""
    import ast

    script = tmp_path / "replay.py"
    done = run_kscope("replay", _hostile_trace(tmp_path), "--kernel", "gemm", "-o", script)
    assert done.returncode == 0, done.stderr
    text = script.read_text()
    assert not any(c in text for c in "\x1b\x07\x9b") and "gemm\\x1b[2J" in ast.get_docstring(ast.parse(text))
    literal = next(n.value for n in ast.parse(text).body if isinstance(n, ast.Assign) and n.targets[0].id == "REPLAY")  # type: ignore[attr-defined]
    assert HOSTILE in ast.literal_eval(literal)["kernels"]


def test_att_and_ncu_show_a_captures_own_strings_escaped(tmp_path: Path) -> None:
    """ATT's code.json (disassembly, source paths) and an Nsight Compute source page (the kernel's name) are the
    profiled program's text too: no raw control character reaches the table or the Markdown."""
    import shutil

    att = tmp_path / "att"
    shutil.copytree(next((DATA / "att" / "fused_rope_cache" / "big").iterdir()), att)
    code = json.loads((att / "code.json").read_text())
    for row in code["code"]:  # ISA text, and the source "file:line" where there is one
        row[0] += HOSTILE
        row[3] = f"{row[3]}{HOSTILE}" if row[3] else row[3]
    (att / "code.json").write_text(json.dumps(code))
    page = gzip.decompress((DATA / "ncu" / "h100_softmax_fast_source_sass.csv.gz").read_bytes()).decode()
    ncu = tmp_path / "src.csv"
    ncu.write_text(page.replace('"softmax_kernel"', '"' + HOSTILE.replace("\n", " ") + '"', 1))
    for args in [("att", att), ("att", att, "--markdown"), ("ncu", ncu), ("ncu", ncu, "--markdown")]:
        done = run_kscope(*args)
        assert done.returncode == 0, done.stderr
        assert not any(c in done.stdout for c in "\x1b\x07\x9b") and "\\x1b[2J" in done.stdout, args


def test_kineto_hostile_external_ids_read_as_no_op(tmp_path: Path) -> None:
    """``External id`` (a kernel's op call, for the op-tuning rule) of the wrong type or out of range is no
    op call, in the columns and the records views alike: never an exception, never a lost launch."""
    path = DATA / "kineto" / "h100_harnessed_tunableop.json.gz"
    doc = json.loads(gzip.decompress(path.read_bytes()))
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    for i, e in enumerate(kernels[:30]):
        e["args"]["External id"] = [[1, 2], "x", 2**70, None, 1.5, {"a": 1}][i % 6]
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(doc))
    for kwargs in ({}, {"phase_by": "no such annotation"}):
        r = api.gap_report([trace], **kwargs)
        assert r.totals.launches + r.totals.excluded_harness_launches == len(kernels)
