"""Fuzz every reader and every command that takes a file with mutated real inputs (issue 16).

```
python bench/fuzz.py [--per-target 1000] [--seed 16] [--targets REGEX] [--workers 2] [--timeout 10]
                     [--cli 6] [--json] [--results] [--list]
```

Method:

- **Targets** (``TARGETS``): one per input kind. Each has seed files (small real files from ``tests/data`` and
  ``kernelscope/data/demo``, gunzipped and trimmed so that mutations hit the content; built once per run under
  a temporary folder) and a callable that exercises the input in-process through the public API: the
  sniffer (``readers.detect``: only an exception outside the hierarchy counts), the reader with its format
  forced (``readers.read(path, fmt=...)``), and the command behind the CLI (``api.gap_report``, ``api.isa``,
  ``api.att``, ``api.ncu``, ``Profile.load``, ``api.memory_show``/``memory_list``).
- **Mutators** (``MUTATORS``): named functions ``(bytes, random.Random) -> bytes``: bit flips, truncation,
  insert/delete/duplicate of ranges, JSON/CSV-aware type swaps, hostile numbers (1e400, 2**66, -1, -1e18,
  NaN, Infinity, 0), invalid UTF-8, empty file; SQL-aware value swaps for SQLite inputs, protobuf-aware field
  values for XPlanes; and, as specials, a directory or a symlink loop where a file is expected. An input is 1
  to 3 stacked mutations of one seed (of one file of an ATT folder); input ``i`` of target ``t`` draws from
  ``random.Random(f"{seed}/{t}/{i}")``, so the same seed gives the same bytes whatever the worker count or order.
- **Workers**: each input runs in a forked worker (its own session) with a timeout; a worker that runs past
  it is killed with its process group (an external disassembler included) and replaced: ``hang``.
- **Classes**: ``clean`` (a ``KernelscopeError``; ``multiline`` counts those whose message spans lines),
  ``ok`` (returned) and within it ``suspicious`` (the result holds a negative or non-finite number under a
  name about time, duration, start/end or total: a generic walk of structs, dataclasses, dicts, lists and
  numpy arrays), ``other`` (any other exception: its type and innermost ``kernelscope/`` frame), ``hang``.
- **CLI**: ``--cli N`` mutated inputs per target also run as ``python -m kernelscope gap|isa|att|ncu|memory``
  subprocesses; a run is bad when it prints ``Traceback``, exits with a code other than 0 or 2, prints more
  than one stderr line on exit 2, or runs past the timeout.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import gzip
import json
import math
import multiprocessing
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection, wait
from pathlib import Path
from random import Random
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, machine, publish, write_results

TESTS = ROOT / "tests" / "data"
DEMO = ROOT / "kernelscope" / "data" / "demo"
CLASSES = ("clean", "ok", "suspicious", "other", "hang")

# ---------------------------------------------------------------------------------------------- mutators
HOSTILE_NUMBERS = [
    b"1e400",
    b"-1e400",
    b"99999999999999999999999",
    b"-1",
    b"-1e18",
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"0",
    b"-0",
    b"1e-400",
    b"18446744073709551616",
    b"9.3e18",
    b"0x10",
]
TYPE_SWAPS = [b'"x"', b'"12"', b"null", b"[]", b"{}", b"true", b"[1,2]", b'{"a":1}', b'""']
CSV_SWAPS = [b"", b"x", b'"a,b"', b"None", b"nan", b"-", b"1,2", b'"']
INVALID_UTF8 = [b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x28\x8c\x28", b"\xc0\xaf", b"\x80"]
_NUMBER = re.compile(rb"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])")
_JSON_VALUE = re.compile(rb'(?<=:)\s*(?:"(?:[^"\\\n]|\\.)*"|-?\d[\d.eE+-]*|true|false|null)')


def _pos(data: bytes, rng: Random) -> int:
    return rng.randrange(len(data) + 1)


def _span(data: bytes, rng: Random) -> tuple[int, int]:
    a = rng.randrange(len(data) + 1)
    return a, min(len(data), a + rng.choice([1, 2, 4, 16, 64, 256, 4096]))


def bitflip(data: bytes, rng: Random) -> bytes:
    if not data:
        return b"\x01"
    b = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 4, 8])):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def truncate(data: bytes, rng: Random) -> bytes:
    return data[: rng.randrange(len(data))] if data else b""


def delete_range(data: bytes, rng: Random) -> bytes:
    a, b = _span(data, rng)
    return data[:a] + data[b:] if b > a else data[:-1]


def insert_random(data: bytes, rng: Random) -> bytes:
    i = _pos(data, rng)
    return data[:i] + bytes(rng.randrange(256) for _ in range(rng.choice([1, 3, 16, 64]))) + data[i:]


def duplicate_range(data: bytes, rng: Random) -> bytes:
    a, b = _span(data, rng)
    if b <= a:
        return data + data[-1:] + b"\n"
    return data[:b] + data[a:b] + data[b:]


def _replace_match(data: bytes, rng: Random, pattern: re.Pattern[bytes], choices: list[bytes]) -> bytes | None:
    matches = list(pattern.finditer(data[: 1 << 20]))
    if not matches:
        return None
    m = rng.choice(matches)
    new = rng.choice(choices)
    if new == data[m.start() : m.end()].strip():
        new = choices[(choices.index(new) + 1) % len(choices)]
    return data[: m.start()] + new + data[m.end() :]


def hostile_number(data: bytes, rng: Random) -> bytes:
    """A number anywhere (JSON value, CSV field, inside a string) becomes a hostile one."""
    return _replace_match(data, rng, _NUMBER, HOSTILE_NUMBERS) or data + b"1e400"


def type_swap(data: bytes, rng: Random) -> bytes:
    """A JSON value becomes another type (string, null, list, object, bool); in CSV a field becomes text."""
    out = _replace_match(data, rng, _JSON_VALUE, TYPE_SWAPS)
    if out is None:
        out = _replace_match(data, rng, _NUMBER, CSV_SWAPS + TYPE_SWAPS)
    return out if out is not None else b"null"


def invalid_utf8(data: bytes, rng: Random) -> bytes:
    i = _pos(data, rng)
    quotes = [m.start() + 1 for m in re.finditer(rb'"', data[: 1 << 20])]
    if quotes and rng.random() < 0.5:
        i = rng.choice(quotes)  # inside a string, past a tolerant tokenizer
    return data[:i] + rng.choice(INVALID_UTF8) + data[i:]


def empty(data: bytes, rng: Random) -> bytes:
    return b""


def swap_lines(data: bytes, rng: Random) -> bytes:
    lines = data.split(b"\n")
    if len(lines) < 3:
        return data + b"\n" + data[:32]
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    out = b"\n".join(lines)
    return out if out != data else data + b"\n" + lines[0]  # two equal lines swapped: repeat one instead


SQL_VALUES: list[object] = [
    None,
    -1,
    -(10**18),
    2**63 - 1,
    10**30,
    float("inf"),
    float("nan"),
    -1.5,
    "x",
    "",
    b"\xff\x00",
    "1e400",
    0,
]


def sql_value(data: bytes, rng: Random) -> bytes:
    """SQLite: a random cell of a random table becomes a hostile value (a bit flip elsewhere if not SQLite)."""
    if not data.startswith(b"SQLite format 3\x00"):
        return bitflip(data, rng)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "x.db"
        db.write_bytes(data)
        con = sqlite3.connect(db)
        try:
            names = con.execute("SELECT name FROM sqlite_master WHERE type='table'")
            tables = sorted(n for (n,) in names if isinstance(n, str))  # an earlier mutation may leave a BLOB name
            tables = [t for t in tables if not t.startswith("sqlite_")]
            for _ in range(12):  # until one update changes a cell (a constraint may refuse a value)
                t = rng.choice(tables)
                cols = [r[1] for r in con.execute(f'PRAGMA table_info("{t}")')]
                rows = [r[0] for r in con.execute(f'SELECT rowid FROM "{t}" ORDER BY rowid LIMIT 200')]
                if not (cols and rows):
                    continue
                c, row, v = rng.choice(cols), rng.choice(rows), rng.choice(SQL_VALUES)
                if isinstance(v, int) and v > 2**63 - 1:
                    v = str(v)
                before = con.total_changes
                with contextlib.suppress(sqlite3.Error):
                    con.execute(f'UPDATE "{t}" SET "{c}" = ? WHERE rowid = ? AND "{c}" IS NOT ?', (v, row, v))
                if con.total_changes > before:
                    break
            con.commit()
        except (sqlite3.Error, ValueError):  # a malformed file (a stacked mutation): names that do not decode
            return bitflip(data, rng)
        finally:
            con.close()
        out = db.read_bytes()
        return out if out != data else bitflip(data, rng)


PROTO_INTS = [-1, -(2**62), 2**63 - 1, 2**62, 0]


def proto_value(data: bytes, rng: Random) -> bytes:
    """XPlane: one field of a random event, line, plane or stat becomes hostile (a negative or huge time, a
    stat of another type or naming no metadata, a name with control characters or a huge stream number),
    re-encoded as valid protobuf; a bit flip where the bytes no longer parse."""
    from google.protobuf.message import DecodeError

    from kernelscope.readers.xplane import message_class

    space = message_class()()
    try:
        space.ParseFromString(data)
    except DecodeError:  # a stacked mutation's bytes
        return bitflip(data, rng)
    planes = list(space.planes)
    if not planes:
        return bitflip(data, rng)
    plane = rng.choice(planes)
    lines = list(plane.lines)
    events = [e for line in lines for e in line.events]
    stats = [s for e in events for s in e.stats] + list(plane.stats)
    choice = rng.randrange(7)
    if choice == 0 and events:
        ev = rng.choice(events)
        setattr(ev, rng.choice(["offset_ps", "duration_ps", "metadata_id"]), rng.choice(PROTO_INTS))
    elif choice == 1 and lines:
        rng.choice(lines).timestamp_ns = rng.choice(PROTO_INTS)
    elif choice == 2 and stats:
        st = rng.choice(stats)
        field, value = rng.choice(
            [("str_value", b"x\xff"), ("double_value", float("nan")), ("double_value", float("inf")),
             ("uint64_value", 2**64 - 1), ("ref_value", 2**40), ("int64_value", -1), ("bytes_value", b"\xff")]
        )  # fmt: skip
        setattr(st, field, value)
    elif choice == 3 and stats:
        rng.choice(stats).metadata_id = rng.choice(PROTO_INTS)
    elif choice == 4 and lines:
        rng.choice(lines).name = rng.choice([b"Stream #99999999999999999999999", b"Stream #-1", b"\x1b[2J\nStream #1"])
    elif choice == 5:
        plane.name = rng.choice([b"/device:GPU:99999999999999999999999", b"/device:GPU:-1", b"/device:GPU:\xff"])
    elif plane.event_metadata:
        key = rng.choice(sorted(plane.event_metadata))
        names = [b"", b"\x1b]0;owned\x07kernel", b"a" * 5000, b"x.kd\n[clone .kd]", b"\xff\xfekernel"]
        plane.event_metadata[key].name = rng.choice(names)
    out: bytes = space.SerializeToString()
    return out if out != data else bitflip(data, rng)


Mutator = Callable[[bytes, Random], bytes]
MUTATORS: list[tuple[str, Mutator]] = [
    ("bitflip", bitflip),
    ("truncate", truncate),
    ("delete_range", delete_range),
    ("insert_random", insert_random),
    ("duplicate_range", duplicate_range),
    ("hostile_number", hostile_number),
    ("hostile_number", hostile_number),
    ("type_swap", type_swap),
    ("type_swap", type_swap),
    ("invalid_utf8", invalid_utf8),
    ("swap_lines", swap_lines),
    ("empty", empty),
]
SQL_MUTATORS: list[tuple[str, Mutator]] = [("sql_value", sql_value)] * 6 + [
    (n, f) for n, f in MUTATORS if n in ("bitflip", "truncate", "delete_range", "insert_random")
]
PROTO_MUTATORS: list[tuple[str, Mutator]] = [("proto_value", proto_value)] * 6 + [
    (n, f) for n, f in MUTATORS if n in ("bitflip", "truncate", "delete_range", "insert_random", "duplicate_range")
]
SPECIALS = ("directory", "symlink_loop")  # where a file is expected

# ----------------------------------------------------------------------------------------------- seeds


def _trim_json(doc: Any, keep: int) -> Any:
    if isinstance(doc, list):
        return [_trim_json(x, keep) for x in doc[:keep]]
    if isinstance(doc, dict):
        return {k: _trim_json(v, keep) for k, v in doc.items()}
    return doc


def _kineto_seed(src: Path) -> bytes:
    """A few events of each category (kernels with their runtime launches), so a mutation hits what matters."""
    doc = json.loads(gzip.decompress(src.read_bytes()))
    seen: Counter[str] = Counter()
    kept, corr = [], set()
    for e in doc["traceEvents"]:
        cat = str(e.get("cat", e.get("ph")))
        if seen[cat] < 12:
            seen[cat] += 1
            kept.append(e)
            if (c := (e.get("args") or {}).get("correlation")) is not None:
                corr.add(c)
    kept += [e for e in doc["traceEvents"] if e not in kept and (e.get("args") or {}).get("correlation") in corr][:40]
    doc["traceEvents"] = kept
    return json.dumps(doc, indent=1).encode()


def _csv_head(data: bytes, rows: int) -> bytes:
    return b"\n".join(data.split(b"\n")[: rows + 1]) + b"\n"


def build_seeds(work: Path) -> dict[str, list[Path]]:
    """Seed files per seed set, written under ``work`` (deterministic)."""
    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, list[Path]] = {}

    def put(group: str, name: str, data: bytes) -> Path:
        p = work / group / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        out.setdefault(group, []).append(p)
        return p

    kin = [
        _kineto_seed(TESTS / "kineto" / f)
        for f in (
            "h100_transformer_compile.json.gz",
            "h100_transformer_eager.json.gz",
            "tracelens_mi300x_sglang_decode.json.gz",  # ROCm: Python frames, no gcnArchName
        )
    ]
    for i, data in enumerate(kin):
        put("kineto", f"k{i}.json", data)
        put("kineto-gz", f"k{i}.json.gz", gzip.compress(data, mtime=0))
    for d in ("rmsnorm", "flash_attn_func"):
        put(
            "rocprof-trace",
            f"{d}_kernel_trace.csv",
            _csv_head((DEMO / "mi350x" / d / "discover_kernel_trace.csv").read_bytes(), 25),
        )
        put(
            "rocprof-stats",
            f"{d}_kernel_stats.csv",
            _csv_head((DEMO / "mi350x" / d / "discover_kernel_stats.csv").read_bytes(), 25),
        )
    put(
        "rocprof-trace",
        "rocpd_kernel_trace.csv",
        _csv_head((TESTS / "rocpd" / "rmsnorm_kernel_trace.csv").read_bytes(), 25),
    )
    rj = json.loads((TESTS / "rocprof_json" / "rmsnorm_results.json").read_bytes())
    put("rocprof-json", "results.json", json.dumps(_trim_json(rj, 12), indent=1).encode())
    shutil.copy(TESTS / "rocpd" / "rmsnorm_results.db", put("rocpd", "results.db", b""))
    shutil.copy(TESTS / "nsys" / "h100_transformer_eager.sqlite", put("nsys", "eager.sqlite", b""))
    put("rpd", "matmul.rpd", gzip.decompress((TESTS / "rpd" / "matmul_gfx90a.rpd.gz").read_bytes()))
    put("rocprof-v1-json", "results.json", gzip.decompress((TESTS / "rocprof_v1" / "results.json.gz").read_bytes()))
    for f in ("tracelens_vllm_decode_full.capture", "h200_graph_capture"):
        doc = json.loads(gzip.decompress((TESTS / "kineto" / f"{f}.json.gz").read_bytes()))
        put("kineto-capture", f"{f}.json", json.dumps(doc, indent=1).encode())  # a line per field to mutate
    for f in (
        "tracelens_mi300x_legacy_conv",
        "tracelens_mi355x_te_fused_attn",
        "h200_jax_block_conv",
        "h200_jax_steps",
    ):
        put("xplane", f"{f}.xplane.pb", gzip.decompress((TESTS / "xplane" / f"{f}.xplane.pb.gz").read_bytes()))
    for f in ("h100_nsys_small_cuda_gpu_kern_sum.csv", "tsv_cuda_gpu_kern_sum.tsv", "stdout_csv.txt"):
        put("nsys-stats", f, _csv_head((TESTS / "nsys" / "stats" / f).read_bytes(), 25))
    for f in ("h100_kern_sum_table.txt", "h100_kern_gb_sum_column.txt", "h200_profile_stats_log.txt"):
        put("nsys-stats", f, (TESTS / "nsys" / "stats" / f).read_bytes())  # the human forms, whole
    for f in ("h100_gpu_trace.csv.gz", "h100_gpu_trace_column.txt.gz"):
        data = gzip.decompress((TESTS / "nsys" / "stats" / f).read_bytes())
        put("nsys-gpu-trace", f.removesuffix(".gz"), _csv_head(data, 60))
    for f in ("table_default.txt", "table_top15.txt", "log_with_table.txt"):
        put("torch-table", f, (TESTS / "torch_table" / f).read_bytes())
    put("nvprof", "nccl.nvvp", gzip.decompress((TESTS / "nvprof" / "nccl_v100.nvvp.gz").read_bytes()))
    for f in ("summary.txt", "summary.csv", "summary_ms.txt", "summary_per_gpu.txt", "gpu_summary_us.csv"):
        put("nvprof-summary", f, (TESTS / "nvprof" / f"nccl_v100.{f}").read_bytes())
    for f in ("h100_softmax_fast.ncu.txt", "live_log.ncu.txt"):
        put("ncu-text", f, (TESTS / "ncu" / "text" / f).read_bytes())
    put(
        "ncu-text",
        "triton.ncu.txt",
        gzip.decompress((TESTS / "ncu" / "text" / "h100_triton_softmax_mm.ncu.txt.gz").read_bytes()),
    )
    for f in ("gpu-trace.csv", "gpu-trace_default.csv", "gpu-trace_printed.txt"):
        put("nvprof-trace", f, _csv_head((TESTS / "nvprof" / f"nccl_v100.{f}").read_bytes(), 60))
    for f in ("h100_softmax_fast_details.csv.gz", "h100_softmax_slow_raw.csv.gz"):
        put("ncu-csv", f.removesuffix(".gz"), gzip.decompress((TESTS / "ncu" / f).read_bytes()))
    for f in ("h100_softmax_fast_source_sass.csv.gz", "h100_softmax_slow_source_sass.csv.gz"):
        put("ncu-source", f.removesuffix(".gz"), _csv_head(gzip.decompress((TESTS / "ncu" / f).read_bytes()), 120))
    shutil.copy(TESTS / "ncu" / "h100_softmax_fast.ncu-rep", put("ncu-rep", "fast.ncu-rep", b""))
    from kernelscope.readers import read

    prof = read(out["kineto"][0])
    (work / "profile-json").mkdir(exist_ok=True)
    prof.save(work / "profile-json" / "profile.json")
    out["profile-json"] = [work / "profile-json" / "profile.json"]
    # and the containers: a host library of two compressed offload bundles, a fatbin of three cubins
    for f in ("add_gfx942.hsaco", "softmax_gfx942.hsaco", "add_gfx1201.hsaco", "hip/libk2z.so"):
        shutil.copy(TESTS / "codeobj" / f, put("codeobj-amd", f, b""))
    for f in ("add_sm90.cubin", "ptxas/scale_sm52.cubin", "fatbin/k.fatbin"):
        shutil.copy(TESTS / "codeobj" / f, put("codeobj-nvidia", f, b""))
    for name, sub in (("rope", "fused_rope_cache/big"), ("pa", "pa_mqa_logits_fp4/small")):
        src = next((TESTS / "att" / sub).iterdir())
        dst = work / "att" / name / src.name
        shutil.copytree(src, dst)
        out.setdefault("att", []).append(dst)
    put("memory", "v1.json", (TESTS / "memory" / "v1.json").read_bytes())
    agents = work / "rocprof-agents" / "rmsnorm"  # a rocprofv3 run: the trace, and the agent file beside it
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "run_kernel_trace.csv").write_bytes(
        _csv_head((DEMO / "mi350x" / "rmsnorm" / "discover_kernel_trace.csv").read_bytes(), 25)
    )
    shutil.copy(DEMO / "mi350x" / "rmsnorm" / "discover_agent_info.csv", agents / _AGENT_FILE)
    repo = work / "source-repo" / "kernels"  # a folder of prebuilt code objects, as aiter ships them
    repo.mkdir(parents=True, exist_ok=True)
    for f in _REPO_OBJECTS:
        shutil.copy(TESTS / "codeobj" / f"{f}.hsaco", repo / f"{f}.co")
    shutil.copy(TESTS / "triton_sources" / "slots.py", repo / "slots.py")  # Triton kernels: find reads their bodies
    out["source-repo"] = [repo]
    out["rocprof-agents"] = [agents]
    ledger = work / "launch-ledger" / "h100_copies_a"
    shutil.copytree(TESTS / "launches" / "h100_copies_a", ledger)
    lines = (ledger / _LEDGER_FILE).read_bytes().splitlines(keepends=True)
    (ledger / _LEDGER_FILE).write_bytes(b"".join(lines[:12]))  # small: mutations reach every field
    out["launch-ledger"] = [ledger]
    return out


# --------------------------------------------------------------------------------------------- targets


def _sniff(path: Path) -> None:
    """The sniffer must refuse cleanly or name a format; only an escape counts."""
    from kernelscope.errors import KernelscopeError
    from kernelscope.readers import detect

    with contextlib.suppress(KernelscopeError):
        detect(path)


def _trace(fmt: str) -> Callable[[Path], Any]:
    def run(path: Path) -> Any:
        from kernelscope import api
        from kernelscope.readers import read

        _sniff(path)
        prof = read(path, fmt=fmt)
        return prof, api.gap_report([path], fmt=fmt)

    return run


def _profile_json(path: Path) -> Any:
    from kernelscope import api
    from kernelscope.model import Profile

    _sniff(path)
    return Profile.load(path), api.gap_report([path], fmt="profile-json")


def _ncu_rep(path: Path) -> Any:
    from kernelscope import api
    from kernelscope.readers import read

    _sniff(path)
    return read(path, fmt="ncu-rep"), api.ncu(path)


def _ncu_source(path: Path) -> Any:
    from kernelscope import api

    return api.ncu(path)


def _isa(path: Path) -> Any:
    from kernelscope import api

    return api.isa([path])


def _att(path: Path) -> Any:
    from kernelscope import api

    return api.att([path], workers=1)


def _att_file(rng: Random, files: list[str]) -> str:
    """The ATT file to mutate: the code and metadata JSON, a wave file or a wave-states file."""
    wave = [f for f in files if f.startswith("se")]
    return rng.choice(
        [
            "code.json",
            "code.json",
            "filenames.json",
            "occupancy.json",
            rng.choice(wave),
            rng.choice(wave),
            rng.choice([f for f in files if f.startswith("wstates")]),
        ]
    )


_LEDGER_FILE = "launches_rank0_pid518.jsonl"
_REPO_OBJECTS = ("add_gfx942", "mm_gfx942", "softmax_gfx942", "add_gfx950")
_REPO_TRITON = ("_move_rows_kernel", "_fill_tiles_kernel", "_rms_norm_slots_kernel")
_AGENT_FILE = "run_agent_info.csv"


def _ledger(path: Path) -> Any:
    """A ``kscope profile`` folder whose launch ledger is mutated: the reader, then (a ledger it reads) gap over
    the folder, which reads the ledger again for the Triton configs (a bad one costs them, with a warning)."""
    from kernelscope import api
    from kernelscope.readers import launch_ledger

    return launch_ledger.read(path / _LEDGER_FILE), api.gap_report([path])


def _shapes_view(path: Path) -> Any:
    """A mutated Kineto trace through the commands that read its op shapes: roofline, shapes, replay --list."""
    from kernelscope import api

    return api.roofline(path, gpu="H100 SXM"), api.shapes([path]), api.replay_candidates(path)


def _report_view(path: Path) -> Any:
    """A mutated Kineto trace through the commands that read all of it: report, suggest, and diff against the
    seed it came from."""
    from kernelscope import api

    seed = TESTS / "kineto" / "h100_transformer_eager.json.gz"
    return api.report([path], gpu="H100 SXM"), api.suggest([path], gpu="H100 SXM"), api.diff([seed], [path])


_REPLAY = TESTS / "kineto" / "tracelens_vllm_decode_full.json.gz"  # the graph replays a mutated capture attributes


def _capture(path: Path) -> Any:
    """A mutated graph-capture trace: its launches read, then the replay trace's roofline with it (--capture)."""
    from kernelscope import api
    from kernelscope.readers import kineto

    return kineto.read_captured(path), api.roofline(_REPLAY, capture=path, gpu="MI300X")


def _agents(path: Path) -> Any:
    """A rocprofv3 run whose ``agent_info.csv`` is mutated: the reader, then gap over the run's folder, which
    reads the agent file beside the trace for the GPUs (a bad one costs them, with a warning)."""
    from kernelscope import api
    from kernelscope.readers import rocprof_agents

    return rocprof_agents.read(path / _AGENT_FILE), api.gap_report([path])


def _source_index(path: Path) -> Any:
    """A folder of code objects and a Triton source file, one file mutated: indexed (ELF symbol tables, Python
    definitions), then its kernels looked up (a resolved Triton kernel's body is read for its kind and category)."""
    from kernelscope.sources.find import Finder
    from kernelscope.sources.index import SourceIndex

    index = SourceIndex(path.parent / "index.sqlite")
    try:
        return index.index([path], workers=1), Finder(index).find(["add", "mm", "softmax.kd", *_REPO_TRITON])
    finally:
        index.close()


def _memory(path: Path) -> Any:
    from kernelscope import api

    ws = path.parent.parent
    return api.memory_show(1, workspace=ws), api.memory_list(workspace=ws)


@dataclasses.dataclass(frozen=True)
class Target:
    name: str
    seeds: str  # seed set in build_seeds
    call: Callable[[Path], Any]
    cli: tuple[str, ...]  # argv after `python -m kernelscope`; {} is the input
    sql: bool = False
    proto: bool = False  # a protobuf (XPlane): field-aware mutations
    gz: bool = False  # mutate the content and gzip it, or gzip and mutate the bytes
    folder: Callable[[Random, list[str]], str] | None = None  # the input is a folder: which file to mutate
    memory: bool = False  # the input is memory/v1.json of a workspace
    lenient: bool = False  # skips what it cannot read rather than refusing it (the source index): no clean errors


TARGETS: list[Target] = [
    Target("kineto", "kineto", _trace("kineto"), ("gap", "{}")),
    Target("kineto-gz", "kineto", _trace("kineto"), ("gap", "{}"), gz=True),
    Target("kineto-shapes", "kineto", _shapes_view, ("roofline", "{}", "--gpu", "H100 SXM")),
    Target("kineto-report", "kineto", _report_view, ("suggest", "{}", "--gpu", "H100 SXM")),
    Target("rocprof-kernel-trace", "rocprof-trace", _trace("rocprof-kernel-trace"), ("gap", "{}")),
    Target("rocprof-kernel-stats", "rocprof-stats", _trace("rocprof-kernel-stats"), ("gap", "{}")),
    Target("rocprof-json", "rocprof-json", _trace("rocprof-json"), ("gap", "{}")),
    Target("rocpd", "rocpd", _trace("rocpd"), ("gap", "{}"), sql=True),
    Target("nsys-sqlite", "nsys", _trace("nsys-sqlite"), ("gap", "{}"), sql=True),
    Target("nsys-kern-sum", "nsys-stats", _trace("nsys-kern-sum"), ("gap", "{}")),
    Target("nsys-gpu-trace", "nsys-gpu-trace", _trace("nsys-gpu-trace"), ("gap", "{}")),
    Target("torch-table", "torch-table", _trace("torch-table"), ("gap", "{}")),
    Target("nvprof", "nvprof", _trace("nvprof"), ("gap", "{}"), sql=True),
    Target("nvprof-summary", "nvprof-summary", _trace("nvprof-summary"), ("gap", "{}")),
    Target("nvprof-trace", "nvprof-trace", _trace("nvprof-trace"), ("gap", "{}")),
    Target("ncu-text", "ncu-text", _trace("ncu-text"), ("gap", "{}")),
    Target("rpd", "rpd", _trace("rpd"), ("gap", "{}"), sql=True),
    Target("rocprof-v1-json", "rocprof-v1-json", _trace("rocprof-v1-json"), ("gap", "{}")),
    Target("ncu-csv", "ncu-csv", _trace("ncu-csv"), ("gap", "{}")),
    Target("xplane", "xplane", _trace("xplane"), ("gap", "{}"), proto=True),
    Target(
        "kineto-capture", "kineto-capture", _capture, ("roofline", str(_REPLAY), "--capture", "{}", "--gpu", "MI300X")
    ),
    Target("ncu-source-csv", "ncu-source", _ncu_source, ("ncu", "{}")),
    Target("ncu-rep", "ncu-rep", _ncu_rep, ("ncu", "{}")),
    Target("profile-json", "profile-json", _profile_json, ("gap", "{}")),
    Target("codeobj-amd", "codeobj-amd", _isa, ("isa", "{}")),
    Target("codeobj-nvidia", "codeobj-nvidia", _isa, ("isa", "{}")),
    Target("att", "att", _att, ("att", "{}"), folder=_att_file),
    Target("launch-ledger", "launch-ledger", _ledger, ("gap", "{}"), folder=lambda rng, files: _LEDGER_FILE),
    Target("rocprof-agent-info", "rocprof-agents", _agents, ("gap", "{}"), folder=lambda rng, files: _AGENT_FILE),
    Target(
        "source-index",
        "source-repo",
        _source_index,
        ("find", "add", "mm", "_move_rows_kernel", "_fill_tiles_kernel", "--repo", "{}", "--db", "{}.sqlite"),
        folder=lambda rng, files: rng.choice(files),
        lenient=True,
    ),
    Target("memory", "memory", _memory, ("memory", "show", "1", "--workspace", "{ws}"), memory=True),
]
BY_NAME = {t.name: t for t in TARGETS}

# --------------------------------------------------------------------------------------- input making


def _mutate(data: bytes, rng: Random, pool: list[tuple[str, Mutator]], names: list[str]) -> bytes:
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        name, fn = rng.choice(pool)
        data = fn(data, rng)
        names.append(name)
    return data


_QUIET = threading.Lock()


def make_input(target: Target, seeds: dict[str, list[Path]], seed: int, index: int, where: Path) -> tuple[Path, str]:
    """Write input ``index`` of ``target`` under the empty folder ``where``; its path and a description."""
    where.mkdir(parents=True, exist_ok=True)
    rng = Random(f"{seed}/{target.name}/{index}")
    src = rng.choice(seeds[target.seeds])
    names: list[str] = []
    special = rng.choice(SPECIALS) if rng.random() < 0.02 else None
    if target.folder:
        dst = where / src.parent.name / src.name
        shutil.copytree(src, dst)
        inner = target.folder(rng, sorted(p.name for p in dst.iterdir()))
        file, path = dst / inner, dst
        names.append(inner)
    elif target.memory:
        ws = where / "ws"
        from kernelscope import api

        # redirect_stdout swaps the process-wide sys.stdout: CLI inputs are made in threads, and two swaps
        # interleaving would leave sys.stdout None for good (and --json would print nothing)
        with _QUIET, contextlib.redirect_stdout(None):
            api.init_workspace(ws)
            api.memory_init(workspace=ws)
        file = path = ws / "memory" / "v1.json"
    else:
        file = path = where / src.name
    desc_src = f"{src.parent.name}/{src.name}" if not target.folder else src.name
    if special is not None:
        if file.exists():
            file.unlink()
        if special == "directory":
            file.mkdir()
        else:
            file.symlink_to(file.name)  # a link to itself: ELOOP on open
        names.append(special)
        return path, f"{desc_src}: {'+'.join(names)}"
    data = (src / names[0]).read_bytes() if target.folder else src.read_bytes()
    if target.gz:
        if rng.random() < 0.5:
            data = gzip.compress(_mutate(data, rng, MUTATORS, names), mtime=0)
            names.append("gzip")
        else:
            names.append("gzip")
            data = _mutate(gzip.compress(data, mtime=0), rng, MUTATORS, names)
    else:
        pool = SQL_MUTATORS if target.sql else PROTO_MUTATORS if target.proto else MUTATORS
        data = _mutate(data, rng, pool, names)
    file.write_bytes(data)
    return path, f"{desc_src}: {'+'.join(names)}"


# ----------------------------------------------------------------------------------------- classifying
# names of times, durations and totals: `duration_ns`, `ts`, `max_us`, `start`, `end_ns`, `total` (not `status`)
_TIME_NAME = re.compile(r"time|dur|_ns(_|$)|_us(_|$)|_ms(_|$)|^ts$|(^|_)(start|end|begin|total|latency)(_|$)", re.I)
# differences between two runs (kscope diff's delta_ns, count_effect_ns): signed by nature
_SIGNED = re.compile(r"delta|effect", re.I)


def suspicious(result: Any, limit: int = 200_000) -> str | None:
    """``path=value`` of the first negative or non-finite number under a time-like name, else None. A profile's
    ``metadata`` (the input's own header fields, e.g. Kineto's ``baseTimeNanoseconds``, passed through verbatim
    and never computed with) is not walked."""
    import msgspec
    import numpy as np

    stack: list[tuple[str, Any, bool]] = [("", result, False)]
    seen: set[int] = set()
    n = 0
    while stack and n < limit:
        where, obj, timed = stack.pop()
        n += 1
        if obj is None or isinstance(obj, (bool, str, bytes, Path)):
            continue
        if isinstance(obj, (int, float)):
            if timed and (obj < 0 or (isinstance(obj, float) and not math.isfinite(obj))):
                return f"{where}={obj!r}"
            continue
        if isinstance(obj, np.ndarray):
            if timed and obj.dtype.kind in "fi" and obj.size:
                bad = ~np.isfinite(obj) | (obj < 0) if obj.dtype.kind == "f" else obj < 0
                if bad.any():
                    return f"{where}[{int(np.flatnonzero(bad.ravel())[0])}]={obj.ravel()[bad.ravel()][0]!r}"
            continue
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, np.generic):
            stack.append((where, obj.item(), timed))
            continue
        if isinstance(obj, dict):
            items = [(str(k), v) for k, v in obj.items()]
        elif isinstance(obj, (list, tuple, set, frozenset)):
            items = [(f"{i}", v) for i, v in enumerate(obj)]
            stack.extend((f"{where}[{k}]", v, timed) for k, v in items)
            continue
        elif isinstance(obj, msgspec.Struct):
            items = [(f, getattr(obj, f, None)) for f in obj.__struct_fields__]
        elif dataclasses.is_dataclass(obj):
            items = [(f.name, getattr(obj, f.name, None)) for f in dataclasses.fields(obj)]
        elif hasattr(obj, "__dict__"):
            items = [(k, v) for k, v in vars(obj).items() if not k.startswith("_")]
        elif hasattr(obj, "__slots__"):
            items = [(k, getattr(obj, k, None)) for k in obj.__slots__ if not k.startswith("_")]
        else:
            continue
        timed_names = {k: bool(_TIME_NAME.search(k)) and not _SIGNED.search(k) for k, _ in items}
        stack.extend((f"{where}.{k}", v, timed_names[k]) for k, v in items if k != "metadata")
    return None


def _place(exc: BaseException) -> tuple[str, str]:
    """The innermost ``kernelscope/`` frame (file:line; the innermost frame if none is ours) and the innermost frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/kernelscope/" in f.filename and "/bench/" not in f.filename]

    def fmt(f: traceback.FrameSummary) -> str:
        p = f.filename
        p = p[p.rindex("/kernelscope/") + 1 :] if "/kernelscope/" in p else Path(p).name
        return f"{p}:{f.lineno}"

    if not frames:
        return "?", "?"
    return fmt(ours[-1] if ours else frames[-1]), fmt(frames[-1])


def classify(call: Callable[[Path], Any], path: Path) -> dict[str, Any]:
    from kernelscope.errors import KernelscopeError

    try:
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
            result = call(path)
    except KernelscopeError as exc:
        msg = str(exc)
        return {"cls": "clean", "multiline": "\n" in msg.strip(), "error": msg[:200]}
    except (Exception, RecursionError) as exc:
        place, inner = _place(exc)
        return {"cls": "other", "type": type(exc).__name__, "place": place, "inner": inner, "error": str(exc)[:200]}
    bad = suspicious(result)
    return {"cls": "suspicious", "where": bad} if bad else {"cls": "ok"}


# ------------------------------------------------------------------------------------------- workers


def _worker(conn: Connection, seeds: dict[str, list[Path]], scratch: str) -> None:
    os.setsid()  # a process group of its own: a timeout kills an external disassembler too
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.dup2(2, 1)  # whatever a target or a native library prints goes to stderr, never into --json's stdout
    from kernelscope.errors import InputWarning

    warnings.simplefilter("ignore", InputWarning)  # a damaged input said so: an outcome, not noise on the run's stderr
    boss = os.getppid()
    while True:
        while not conn.poll(1.0):
            if os.getppid() != boss:  # the harness died: inherited pipe ends would keep recv() waiting
                return
        job = conn.recv()
        if job is None:
            return
        name, seed, index = job
        target = BY_NAME[name]
        where = Path(tempfile.mkdtemp(dir=scratch))
        try:
            path, desc = make_input(target, seeds, seed, index, where)
            res = classify(target.call, path)
        except BaseException as exc:
            res = {
                "cls": "other",
                "type": f"harness:{type(exc).__name__}",
                "place": _place(exc)[0],
                "inner": "",
                "error": str(exc)[:200],
            }
            desc = "?"
        finally:
            shutil.rmtree(where, ignore_errors=True)
        res.update(target=name, index=index, input=desc)
        conn.send(res)


class Pool:
    """Forked workers, one input each at a time; a worker past ``timeout`` is killed and replaced."""

    def __init__(self, workers: int, seeds: dict[str, list[Path]], scratch: Path, timeout: float) -> None:
        self.ctx = multiprocessing.get_context("fork")
        self.seeds, self.scratch, self.timeout = seeds, str(scratch), timeout
        self.slots: list[Any] = [self._start() for _ in range(max(1, workers))]

    def _start(self) -> Any:
        parent, child = self.ctx.Pipe()
        p = self.ctx.Process(target=_worker, args=(child, self.seeds, self.scratch), daemon=True)
        p.start()
        child.close()
        return {"proc": p, "conn": parent, "job": None, "since": 0.0}

    def _kill(self, slot: dict[str, Any]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(slot["proc"].pid, signal.SIGKILL)
        slot["proc"].join(5)
        slot["conn"].close()

    def run(self, jobs: list[tuple[str, int, int]], progress: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
        todo, results = list(reversed(jobs)), []
        while todo or any(s["job"] for s in self.slots):
            for i, s in enumerate(self.slots):
                if s["job"] is None and todo:
                    s["job"], s["since"] = todo.pop(), time.monotonic()
                    try:
                        s["conn"].send(s["job"])
                    except OSError:
                        todo.append(s["job"])
                        self._kill(s)
                        self.slots[i] = self._start()
            busy = {s["conn"]: s for s in self.slots if s["job"]}
            ready = wait(list(busy), timeout=0.2)
            for conn in ready:
                s = busy[conn]
                try:
                    res = conn.recv()
                except (EOFError, OSError):  # the worker died (a segfault, os._exit): count it as other
                    name, _, index = s["job"]
                    res = {
                        "cls": "other",
                        "type": "WorkerDied",
                        "place": "(process)",
                        "inner": "",
                        "error": "",
                        "target": name,
                        "index": index,
                        "input": "?",
                    }
                    self._kill(s)
                    s.update(self._start())
                res["seconds"] = round(time.monotonic() - s["since"], 3)
                s["job"] = None
                results.append(res)
                progress(res)
            now = time.monotonic()
            for i, s in enumerate(self.slots):
                if s["job"] and now - s["since"] > self.timeout:
                    name, _, index = s["job"]
                    self._kill(s)
                    res = {"cls": "hang", "target": name, "index": index, "input": "?", "seconds": self.timeout}
                    results.append(res)
                    progress(res)
                    self.slots[i] = self._start()
        return results

    def close(self) -> None:
        for s in self.slots:
            with contextlib.suppress(OSError):
                s["conn"].send(None)
        for s in self.slots:
            s["proc"].join(2)
            if s["proc"].is_alive():
                self._kill(s)


def describe(target: Target, seeds: dict[str, list[Path]], seed: int, index: int) -> str:
    """The description of input ``index`` (made again in a scratch folder: inputs are deterministic)."""
    with tempfile.TemporaryDirectory() as tmp:
        return make_input(target, seeds, seed, index, Path(tmp))[1]


# ------------------------------------------------------------------------------------------------ CLI


def cli_run(target: Target, seeds: dict[str, list[Path]], seed: int, index: int, timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path, desc = make_input(target, seeds, seed, index, Path(tmp))
        argv = [a.replace("{}", str(path)).replace("{ws}", str(path.parent.parent)) for a in target.cli]
        env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
        try:
            p = subprocess.run(
                [sys.executable, "-m", "kernelscope", *argv],
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
                cwd=tmp,
                env=env,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {"target": target.name, "index": index, "input": desc, "rc": None, "bad": "hang"}
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    bad = None
    if "Traceback" in p.stderr or "Traceback" in p.stdout:
        bad = "traceback"
    elif p.returncode not in (0, 2):
        bad = f"exit {p.returncode}"
    elif p.returncode == 2 and len(lines) != 1:
        bad = f"{len(lines)} stderr lines"
    return {
        "target": target.name,
        "index": index,
        "input": desc,
        "rc": p.returncode,
        "bad": bad,
        "last": lines[-1][:200] if lines else "",
    }


# ---------------------------------------------------------------------------------------------- report


def summarize(results: list[dict[str, Any]], targets: list[Target]) -> dict[str, Any]:
    table = {}
    for t in targets:
        rs = [r for r in results if r["target"] == t.name]
        c = Counter(r["cls"] for r in rs)
        table[t.name] = {
            "inputs": len(rs),
            "clean": c["clean"],
            "ok": c["ok"] + c["suspicious"],
            "suspicious": c["suspicious"],
            "other": c["other"],
            "hang": c["hang"],
            "multiline": sum(1 for r in rs if r.get("multiline")),
        }
    places: dict[tuple[str, str], dict[str, Any]] = {}
    for r in sorted(results, key=lambda r: (r["target"], r["index"])):
        if r["cls"] != "other":
            continue
        key = (r["type"], r["place"])
        p = places.setdefault(
            key,
            {
                "type": r["type"],
                "place": r["place"],
                "inner": r["inner"],
                "count": 0,
                "targets": Counter(),
                "example": f"{r['target']}#{r['index']} {r['input']}",
                "error": r["error"],
            },
        )
        p["count"] += 1
        p["targets"][r["target"]] += 1
    others = sorted(places.values(), key=lambda p: (-p["count"], p["type"], p["place"]))
    for p in others:
        p["targets"] = dict(p["targets"])
    susp = [f"{r['target']}#{r['index']} {r['input']}: {r['where']}" for r in results if r["cls"] == "suspicious"]
    hangs = [f"{r['target']}#{r['index']} {r['input']}" for r in results if r["cls"] == "hang"]
    multiline = [
        f"{r['target']}#{r['index']} {r['input']}: {r['error'][:100]!r}" for r in results if r.get("multiline")
    ]
    return {"table": table, "others": others, "suspicious": susp, "hangs": hangs, "multiline": multiline}


def _md_table(summary: dict[str, Any]) -> list[str]:
    lines = [
        "| target | inputs | clean | ok | suspicious | other | hang | multi-line clean |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    tot: Counter[str] = Counter()
    for name, row in summary["table"].items():
        tot.update(row)
        lines.append(
            f"| {name} | {row['inputs']} | {row['clean']} | {row['ok']} | {row['suspicious']} | {row['other']} "
            f"| {row['hang']} | {row['multiline']} |"
        )
    lines.append(
        f"| **all** | {tot['inputs']} | {tot['clean']} | {tot['ok']} | {tot['suspicious']} | {tot['other']} "
        f"| {tot['hang']} | {tot['multiline']} |"
    )
    return lines


def report_lines(
    summary: dict[str, Any], cli: list[dict[str, Any]], args: argparse.Namespace, wall: float
) -> list[str]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT, check=False
    ).stdout.strip()
    m = machine(["msgspec", "numpy", "pyelftools"])
    lines = [
        run_heading(args),
        "",
        f"{datetime.date.today().isoformat()}, commit {commit}; {m['cpus']} CPUs ({m['cpu']}), {m['ram']}, "
        f"Python {m['python']}, {m['os']}; {m['packages']}.",
        f"Command: `python bench/fuzz.py --per-target {args.per_target} --seed {args.seed} --workers {args.workers} "
        f"--timeout {args.timeout:g} --cli {args.cli}"
        + (f" --targets '{args.targets}'" if args.targets else "")
        + f" --results`; {wall:.0f} s wall.",
        "",
    ]
    lines += _md_table(summary)
    lines += [
        "",
        "`ok` includes `suspicious` (returned, but holds a negative or non-finite time, duration or total). "
        "`other`: an exception outside `KernelscopeError`; `hang`: past the per-input timeout.",
        "",
    ]
    if summary["others"]:
        lines += [
            f"Distinct places of `other` ({len(summary['others'])}; innermost `kernelscope/` frame, then the "
            "innermost frame):",
            "",
            "| type | place | innermost | count | targets | example input | message |",
            "|---|---|---|---:|---|---|---|",
        ]
        for p in summary["others"]:
            tg = ", ".join(f"{k} {v}" for k, v in p["targets"].items())
            msg = p["error"].replace("|", "\\|").replace("\n", " ")[:90]
            lines.append(
                f"| {p['type']} | `{p['place']}` | `{p['inner']}` | {p['count']} | {tg} | {p['example']} | {msg} |"
            )
        lines.append("")
    if summary["hangs"]:
        lines += ["Hangs: " + "; ".join(summary["hangs"][:20]), ""]
    if summary["multiline"]:
        lines += ["Multi-line clean errors: " + "; ".join(summary["multiline"][:10]), ""]
    if summary["suspicious"]:
        by_target = Counter(s.split("#")[0] for s in summary["suspicious"])
        lines += [
            "Suspicious (first of each target): "
            + "; ".join(next(s for s in summary["suspicious"] if s.startswith(t + "#")) for t in by_target),
            "",
        ]
    if cli:
        bad = [c for c in cli if c["bad"]]
        kinds = Counter(str(c["bad"]).split(" ")[0] if "stderr" not in str(c["bad"]) else "stderr lines" for c in bad)
        lines += [
            f"CLI: {len(cli)} runs as `python -m kernelscope ...` subprocesses, {len(bad)} bad "
            f"({', '.join(f'{k} {v}' for k, v in kinds.items()) or 'none'}); exit codes "
            + ", ".join(f"{k}: {v}" for k, v in sorted(Counter(str(c["rc"]) for c in cli).items()))
            + "."
        ]
        for c in bad[:12]:
            lines.append(
                f"- {c['target']}#{c['index']} ({c['input']}): {c['bad']}, last stderr line `{c['last'][:120]}`"
            )
        lines.append("")
    return lines


HEADING = "## fuzz.py: hostile inputs through every reader and file-taking command (issue 16)"


def run_heading(args: argparse.Namespace) -> str:
    """The section's heading names the run, so --results replaces only a rerun of the same one (the first,
    unnamed section is the baseline before issue 16's fixes and stays)."""
    targets = f", targets {args.targets}" if args.targets else ""
    return f"{HEADING}: seed {args.seed}, {args.per_target:,} inputs per target{targets}"


def run_fuzz(
    targets: list[Target],
    per_target: int,
    seed: int,
    workers: int,
    timeout: float,
    work: Path,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    seeds = build_seeds(work / "seeds")
    scratch = work / "scratch"
    scratch.mkdir(exist_ok=True)
    # interleave targets so a slow target does not starve the others at the end
    jobs = [(t.name, seed, i) for i in range(per_target) for t in targets]
    pool = Pool(workers, seeds, scratch, timeout)
    try:
        results = pool.run(jobs, progress or (lambda r: None))
    finally:
        pool.close()
    for r in results:  # a hang's input is described again here, deterministically
        if r["input"] == "?" and (r["cls"] == "hang" or r.get("type") == "WorkerDied"):
            r["input"] = describe(BY_NAME[r["target"]], seeds, seed, r["index"])
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-target", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--targets", default="", help="regex over target names")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per input")
    ap.add_argument("--cli", type=int, default=6, help="mutated inputs per target also run through the CLI")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--results", action="store_true", help="add the section to bench/RESULTS.md")
    ap.add_argument("--list", action="store_true", help="list the targets and mutators, then stop")
    args = ap.parse_args(argv)
    targets = [t for t in TARGETS if re.search(args.targets, t.name)]
    if args.list:
        print("targets:", ", ".join(t.name for t in targets))
        print("mutators:", ", ".join(sorted({n for n, _ in MUTATORS + SQL_MUTATORS} | set(SPECIALS))))
        return 0
    if not targets:
        print(f"no target matches {args.targets!r}", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    done = Counter[str]()
    total = len(targets) * args.per_target

    def progress(r: dict[str, Any]) -> None:
        done[r["cls"]] += 1
        n = sum(done.values())
        if n % 500 == 0 or n == total:
            print(f"  {n}/{total} {dict(done)} {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="kscope-fuzz-") as tmp:
        results = run_fuzz(targets, args.per_target, args.seed, args.workers, args.timeout, Path(tmp), progress)
        cli: list[dict[str, Any]] = []
        if args.cli:
            seeds = build_seeds(Path(tmp) / "cli-seeds")
            jobs = [(t, i) for t in targets for i in range(args.cli)]
            with ThreadPoolExecutor(max(1, args.workers)) as ex:
                cli = list(ex.map(lambda j: cli_run(j[0], seeds, args.seed + 1, j[1], 60.0), jobs))
    summary = summarize(results, targets)
    wall = time.monotonic() - t0
    if args.json:
        print(
            json.dumps(
                {
                    "seed": args.seed,
                    "per_target": args.per_target,
                    "summary": summary,
                    "cli": cli,
                    "wall_s": round(wall, 1),
                },
                indent=1,
            )
        )
    lines = report_lines(summary, cli, args, wall)
    if args.json:
        if args.results:
            write_results("\n".join(lines) + "\n", lines[0])
    else:
        publish(lines, lines[0], args.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
