"""Content sniffing: which reader a file needs, from its first bytes (decompressed if gzip).

Signatures are data: an ordered list of (format, predicate over the head). The first match wins, so
more specific signatures come first. Extensions never decide alone: a renamed file still reads.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable
from pathlib import Path

from kernelscope.readers._csv import norm
from kernelscope.readers._io import SQL_ERRORS, connect_sqlite, open_raw, sqlite_names
from kernelscope.readers.ncu_text import looks_like as ncu_text_head
from kernelscope.readers.nsys_gpu_trace import looks_like as nsys_gpu_trace_head
from kernelscope.readers.nsys_rep import MAGIC as NSYS_REP_MAGIC
from kernelscope.readers.nsys_sqlite import is_nvprof
from kernelscope.readers.nsys_stats import HEADER_LINES, header_columns, looks_human
from kernelscope.readers.nvprof_summary import looks_like as nvprof_summary_head
from kernelscope.readers.nvprof_trace import looks_like as nvprof_trace_head
from kernelscope.readers.rocprof_v1_json import MARKERS as ROCPROF_V1_MARKERS
from kernelscope.readers.rpd import TABLES as RPD_TABLES
from kernelscope.readers.torch_table import looks_like as torch_table_head
from kernelscope.readers.xplane import looks_like as xplane_head

HEAD_BYTES = 1 << 16
_GZIP_MAGIC = b"\x1f\x8b"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_NCU_MAGIC = b"NVR\x00"


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of the file's content, gunzipped when it is gzip (b"" if unreadable)."""
    with open_raw(path) as f:
        raw = f.read(size)
    if raw.startswith(_GZIP_MAGIC):
        try:
            with gzip.open(path, "rb") as g:
                return g.read(size)
        except (OSError, EOFError, zlib.error):
            return b""
    return raw


def read_tail(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The last ``size`` bytes of an uncompressed file from its first whole line (b"" if unreadable or gzip)."""
    with open_raw(path) as f:
        if f.read(2) == _GZIP_MAGIC:
            return b""
        f.seek(0, 2)
        f.seek(max(0, f.tell() - size))
        tail = f.read(size)
    return tail.split(b"\n", 1)[1] if len(tail) == size and b"\n" in tail else tail


def _csv_header(head: bytes) -> str:
    return head.split(b"\n", 1)[0].decode("utf-8", "replace").replace('"', "")


def _has_cols(*cols: str) -> Callable[[bytes], bool]:
    """Header holds every column, compared as the CSV readers compare them (``norm``: any spelling)."""
    want = {norm(c) for c in cols}

    def pred(head: bytes) -> bool:
        return want <= {norm(h) for h in _csv_header(head).strip().split(",")}

    return pred


def _json_with(*keys: bytes) -> Callable[[bytes], bool]:
    def pred(head: bytes) -> bool:
        s = head.lstrip()
        return s[:1] in (b"{", b"[") and any(k in head for k in keys)

    return pred


def _nsys_kern_sum(head: bytes) -> bool:
    """nsys stats' kernel summary: its header on one of the first lines (stdout puts a line before it)."""
    lines = head.decode("utf-8", "replace").splitlines()[:HEADER_LINES]
    return any(header_columns(line) is not None for line in lines)


def _rocprof_v1_json(head: bytes) -> bool:
    return _json_with(b'"traceEvents"')(head) and any(m in head for m in ROCPROF_V1_MARKERS)


def _xla_trace_json(head: bytes) -> bool:
    """XLA's own Chrome trace of a JAX capture: its processes are XPlane planes (``/device:GPU:0``)."""
    return _json_with(b'"traceEvents"')(head) and re.search(rb'"name":\s*"/(?:device|host):', head) is not None


# Formats recognised only to say which file to pass instead: format -> (what it is, what to do)
REDIRECTS = {
    "xla-trace-json": (
        "XLA's trace-viewer JSON of a JAX capture, whose GPU events carry no kind to tell kernels from copies",
        "pass the .xplane.pb that jax.profiler.trace wrote beside it",
    ),
}


def _ncu_csv(head: bytes) -> bool:
    header = _csv_header(head)
    return header.startswith("ID,Process ID,Process Name,Host Name,Kernel Name")


# Reports and printed tables (nsys stats' kernel summary and GPU trace, torch.profiler's table, nvprof's summary and
# trace, ncu's details), shared as files of their own or held in a log after everything the program printed: also
# looked for at a file's end
_TEXT_TABLES: list[tuple[str, Callable[[bytes], bool]]] = [
    ("nsys-gpu-trace", nsys_gpu_trace_head),
    ("nsys-kern-sum", looks_human),
    ("torch-table", torch_table_head),
    ("nvprof-summary", nvprof_summary_head),
    ("nvprof-trace", nvprof_trace_head),
    ("ncu-text", ncu_text_head),
]

# Ordered: first match wins.
SIGNATURES: list[tuple[str, Callable[[bytes], bool]]] = [
    ("nsys-rep", lambda head: head.startswith(NSYS_REP_MAGIC)),  # binary, a text signature first
    ("xplane", xplane_head),  # binary: its first bytes are a protobuf key, never text
    ("profile-json", _json_with(b'"kernelscope.profile.v1"')),
    ("rocprof-json", _json_with(b'"rocprofiler-sdk-tool"')),
    ("rocprof-v1-json", _rocprof_v1_json),  # a Chrome trace too: before kineto
    ("xla-trace-json", _xla_trace_json),  # likewise
    ("kineto", _json_with(b'"traceEvents"', b'"ph"')),
    ("rocprof-kernel-stats", _has_cols("Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage")),
    ("rocprof-kernel-trace", _has_cols("Kernel_Name", "Start_Timestamp", "End_Timestamp")),  # any spelling
    ("rocprof-kernel-trace", _has_cols("KernelName", "BeginNs", "EndNs")),  # rocprof v1/v2 results.csv
    ("ncu-csv", _ncu_csv),
    ("nsys-kern-sum", _nsys_kern_sum),
    *_TEXT_TABLES,
]


def _sqlite_format(path: Path) -> str | None:
    try:
        con = connect_sqlite(path)
        try:
            names = sqlite_names(con)
        finally:
            con.close()
    except SQL_ERRORS:
        return None
    if is_nvprof(names):
        return "nvprof"  # before nsys: nvprof's database has a CUPTI_ACTIVITY_KIND_KERNEL table too
    if "CUPTI_ACTIVITY_KIND_KERNEL" in names or "StringIds" in names:
        return "nsys-sqlite"
    if "kernels" in names or any(n.startswith("rocpd_kernel_dispatch") for n in names):
        return "rocpd"
    if names >= RPD_TABLES:
        return "rpd"
    return None


def sniff(path: Path) -> str | None:
    """The format name for ``path``, or ``None`` when no signature matches."""
    with open_raw(path) as f:
        magic = f.read(16)
    if magic.startswith(_SQLITE_MAGIC) or (magic.startswith(_GZIP_MAGIC) and read_head(path, 16) == _SQLITE_MAGIC):
        return _sqlite_format(path)
    if magic.startswith(_NCU_MAGIC):
        return "ncu-rep"
    head = read_head(path)
    for fmt, pred in SIGNATURES:
        if pred(head):
            return fmt
    # `nsys profile --stats=true` and a training script print their tables after the program's own output
    tail = read_tail(path)
    return next((fmt for fmt, pred in _TEXT_TABLES if pred(tail)), None)
