"""The persistent source index: kernel definitions and test references of repositories, in SQLite.

Keyed by repository root and commit; a re-run re-parses only files whose size or mtime changed (and
re-reads test files only when the set of indexed kernels changed). Parsing runs on every core.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

import msgspec

from kernelscope.cache import cache_path
from kernelscope.codeobj import amdgpu
from kernelscope.codeobj.tools import ELF_ERRORS
from kernelscope.errors import InputError
from kernelscope.sources import scan

SCHEMA_VERSION = 13  # 2: defs carry template arity; 3: namespace-opening macros; 4: FlyDSL and Helion kernels;
# 5: code objects read by their ELF symbol table (plain-named assembly kernels); 6: kernels test files define,
# declarations read through #if/#else lines; 7: Python files of vendored trees a Python package ships;
# 8: kernels declared through a *_KERNEL macro, __launch_bounds__ arguments and parenthesized template defaults read;
# 9: namespaces opened with an export macro (`namespace CUGRAPH_EXPORT cugraph {`); 10: kernel names a code
# generator's template spells with Jinja placeholders (FBGEMM); 11: kernel macros CCCL and rocPRIM spell;
# 12: object-like macros defined as __global__ mark kernels where used, not where defined; 13: and in the
# bodies of kernel-stamping macros
MAX_FILE_BYTES = 8 << 20  # larger sources are generated tables, not kernels
_SKIP_DIRS = {".git", "node_modules", "build", "dist", "__pycache__", ".venv"}
_STOP = frozenset(
    [
        "kernel",
        "kernels",
        "main",
        "forward",
        "backward",
        "launch",
        "impl",
        "apply",
        "test",
        "tests",
        "compute",
        "init",
        "run",
        "fill",
        "copy",
        "get",
        "set",
        "update",
        "reset",
        "call",
        "invoke",
        "operator",
        "params",
        "args",
        "config",
        "configs",
        "utils",
        "util",
        "common",
        "base",
        "type",
        "types",
        "data",
        "value",
        "values",
        "input",
        "output",
        "outputs",
        "inputs",
        "index",
        "size",
        "shape",
    ]
)
_CAMEL = re.compile(r"[a-z0-9][A-Z]")
_SUFFIXES = re.compile(r"(?:_kernel_impl|_kernel_cuda|_kernel|Kernel|_cuda|_impl|_fwd_kernel)$")

Progress = Callable[[str, int, int], None]  # (stage, done, total)

_DDL = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS repos(
  id INTEGER PRIMARY KEY, root TEXT UNIQUE, name TEXT, git_commit TEXT, remote TEXT,
  indexed_at REAL, link_hash TEXT);
CREATE TABLE IF NOT EXISTS files(
  repo_id INTEGER, path TEXT, size INTEGER, mtime_ns INTEGER, is_test INTEGER,
  PRIMARY KEY(repo_id, path));
CREATE TABLE IF NOT EXISTS defs(
  repo_id INTEGER, path TEXT, line INTEGER, symbol TEXT, kind TEXT, namespace TEXT, arity INTEGER,
  variadic INTEGER);
CREATE INDEX IF NOT EXISTS defs_symbol ON defs(symbol);
CREATE INDEX IF NOT EXISTS defs_file ON defs(repo_id, path);
CREATE TABLE IF NOT EXISTS test_refs(repo_id INTEGER, path TEXT, token TEXT, line INTEGER, test TEXT);
CREATE INDEX IF NOT EXISTS test_refs_token ON test_refs(repo_id, token);
CREATE INDEX IF NOT EXISTS test_refs_file ON test_refs(repo_id, path);
CREATE TABLE IF NOT EXISTS test_targets(repo_id INTEGER, path TEXT, target TEXT);
CREATE INDEX IF NOT EXISTS test_targets_path ON test_targets(repo_id, path);
"""


@dataclass(frozen=True)
class RepoSummary:
    root: str
    name: str
    commit: str | None
    remote: str | None
    files: int
    parsed: int  # files (re)parsed in this run
    definitions: int
    test_files: int
    seconds: float


class RepoIndex(msgspec.Struct, kw_only=True):
    """``kscope index --json``: the repositories indexed."""

    schema: str = "kernelscope.index.v1"
    repos: list[RepoSummary]


def default_db() -> Path:
    return cache_path("sources.sqlite", "KSCOPE_INDEX")


def link_tokens(symbol: str, path: str) -> set[str]:
    """Identifiers a test would use to reach this kernel: the symbol, its op name, its module.

    An op name that is one short generic word (``reduce`` from ``reduce_kernel``, ``where`` from
    ``where_kernel_impl``) is left out: tests that say it are not tests of this kernel.
    """
    bare = symbol.strip("_")
    op = _SUFFIXES.sub("", bare)
    toks = {symbol, bare}
    if op != bare and (len(op) >= 8 or "_" in op or _CAMEL.search(op)):
        toks.add(op)
    p = PurePosixPath(path)
    if p.suffix == ".py":
        toks.update({p.stem, p.stem.lstrip("_")})
    return {t for t in toks if len(t) >= 4 and t.lower() not in _STOP}


def _git(root: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return proc.stdout


def github_url(remote: str | None) -> str | None:
    """``git@github.com:o/r.git`` / ``https://github.com/o/r(.git)`` -> ``https://github.com/o/r``."""
    if not remote:
        return None
    m = re.match(r"^(?:https?://|git@|ssh://git@)([^/:]+)[/:]([^/]+)/([^/]+?)(?:\.git)?/?$", remote.strip())
    return f"https://{m.group(1)}/{m.group(2)}/{m.group(3)}" if m else None


def _wanted(path: str, packages: set[PurePosixPath]) -> bool:
    """Sources, tables and code objects outside skipped folders. A vendored tree (``third_party/``) is read
    only for its Python, and only inside a Python package (``packages``: folders holding an ``__init__.py``):
    vLLM ships and runs flash-linear-attention's Triton kernels from ``vllm/third_party/``, while a root-level
    ``3rdparty/cutlass`` is a build dependency whose library kernels no name should resolve to."""
    p = PurePosixPath(path)
    dirs = p.parts[:-1]
    if any(part in _SKIP_DIRS or part.startswith(".") for part in dirs):
        return False
    vendored = [i for i, part in enumerate(dirs) if part in scan.VENDOR_DIRS]
    if vendored:
        return p.suffix == ".py" and all(PurePosixPath(*dirs[:i]) in packages for i in vendored)
    return p.name == scan.CMAKE or p.suffix in scan.PY_EXT | scan.CXX_EXT | scan.DATA_EXT


def list_files(root: Path) -> list[str]:
    """Repository-relative paths of the files the index reads: git's view (tracked and untracked, less what
    it ignores) when ``root`` is a work tree's top level and git lists something; otherwise the folder walked.
    A plain folder inside another work tree (a vendored copy, a download that tree ignores) is not git's to
    describe: ``git ls-files`` there lists nothing, and the folder was indexed as empty."""
    top = (_git(root, "rev-parse", "--show-toplevel") or "").strip()
    out = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard") if top else None
    paths = [p for p in (out or "").split("\0") if p]
    if not paths or Path(top).resolve() != root.resolve():
        paths = []
        for dirpath, dirnames, filenames in os.walk(root):
            rel = Path(dirpath).relative_to(root)
            # a vendored tree is walked only inside a Python package (see _wanted)
            dirnames[:] = [
                d
                for d in dirnames
                if d not in _SKIP_DIRS
                and not d.startswith(".")
                and (d not in scan.VENDOR_DIRS or "__init__.py" in filenames)
            ]
            paths.extend(str(PurePosixPath(*rel.parts, f)) for f in filenames)
    packages = {PurePosixPath(p).parent for p in paths if PurePosixPath(p).name == "__init__.py"}
    return [p for p in paths if _wanted(p, packages)]


def _parse_file(job: tuple[str, str]) -> tuple[str, list[scan.Definition], list[tuple[str, list[str]]]]:
    """Worker: one file's definitions (and, for CMakeLists.txt, its test targets)."""
    root, path = job
    full = Path(root, path)
    try:
        raw = full.read_bytes()
    except OSError:
        return path, [], []
    if len(raw) > MAX_FILE_BYTES:
        return path, [], []
    suffix = PurePosixPath(path).suffix
    if suffix in scan.CODE_OBJECT_EXT:  # its symbol table names the kernels (no meaningful line)
        return path, _code_object_definitions(raw), []
    text = raw.decode("utf-8", errors="replace")
    if PurePosixPath(path).name == scan.CMAKE:
        return path, [], scan.cmake_targets(text)
    defs: list[scan.Definition] = []
    if suffix == ".py":
        defs = scan.python_definitions(text)
    elif suffix in scan.CXX_EXT:
        defs = scan.cxx_definitions(text, path)
    if "_ZN5aiter" in text:
        defs.extend(scan.asm_definitions(text))
    return path, defs, []


def _code_object_definitions(raw: bytes) -> list[scan.Definition]:
    """A code object's kernels by its ELF symbol table; bytes that are no readable AMDGPU ELF by the aiter
    symbols they spell (a launcher's table, a damaged object)."""
    if amdgpu.is_amdgpu_elf(raw):
        try:
            return scan.symbol_definitions(amdgpu.kernel_symbols(raw))
        except ELF_ERRORS:
            pass
    return [replace(d, line=1) for d in scan.asm_definitions(raw.decode("latin-1"))]


_WANTED: frozenset[str] = frozenset()


def _set_wanted(wanted: frozenset[str]) -> None:
    global _WANTED  # noqa: PLW0603 — set once per worker process, so the set is not pickled per file
    _WANTED = wanted


def _scan_tests(job: tuple[str, str]) -> tuple[str, list[scan.TestRef]]:
    root, path = job
    try:
        text = Path(root, path).read_text(errors="replace")
    except OSError:
        return path, []
    if path.endswith(".py"):
        return path, scan.python_test_refs(text, _WANTED)
    return path, scan.cxx_test_refs(text, _WANTED)


class SourceIndex:
    """``SourceIndex(db).index([repo, ...])`` builds or refreshes; ``kernelscope.sources.find`` reads."""

    def __init__(self, db: Path | None = None) -> None:
        self._workers = os.cpu_count() or 1
        self.path = Path(db) if db is not None else default_db()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(self.path)
            self.db.executescript(_DDL)
            version = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if version is not None and version[0] != str(SCHEMA_VERSION):  # an older kscope's: a cache, rebuilt
                tables = [r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
                self.db.executescript("".join(f"DROP TABLE {t};" for t in tables) + _DDL)
                version = None
        except sqlite3.DatabaseError as exc:
            raise InputError(f"{self.path}: not a kernelscope source index ({exc})") from None
        if version is None:
            self.db.execute("INSERT INTO meta VALUES('schema', ?)", (str(SCHEMA_VERSION),))
            self.db.commit()

    def close(self) -> None:
        self.db.close()

    def repos(self) -> list[tuple[int, str, str, str | None, str | None]]:
        """(id, root, name, commit, remote) of every indexed repository."""
        return list(self.db.execute("SELECT id, root, name, git_commit, remote FROM repos ORDER BY id"))

    def index(
        self, roots: list[Path], progress: Progress | None = None, workers: int | None = None
    ) -> list[RepoSummary]:
        out = []
        self._workers = workers or os.cpu_count() or 1
        with ProcessPoolExecutor(max_workers=self._workers) as pool:
            for root in roots:
                out.append(self._index_repo(Path(root).resolve(), pool, progress))
        return out

    def _repo_id(self, root: Path) -> tuple[int, str | None]:
        if not root.is_dir():
            raise InputError(f"{root}: not a directory (pass a source checkout)")
        commit = (_git(root, "rev-parse", "HEAD") or "").strip() or None
        remote = (_git(root, "remote", "get-url", "origin") or "").strip() or None
        row = self.db.execute("SELECT id, link_hash FROM repos WHERE root=?", (str(root),)).fetchone()
        if row is None:
            cur = self.db.execute(
                "INSERT INTO repos(root, name, git_commit, remote, indexed_at) VALUES(?,?,?,?,?)",
                (str(root), root.name, commit, remote, time.time()),
            )
            return int(cur.lastrowid or 0), None
        self.db.execute(
            "UPDATE repos SET git_commit=?, remote=?, indexed_at=? WHERE id=?", (commit, remote, time.time(), row[0])
        )
        return int(row[0]), row[1]

    def _index_repo(self, root: Path, pool: ProcessPoolExecutor, progress: Progress | None) -> RepoSummary:
        t0 = time.perf_counter()
        rid, old_hash = self._repo_id(root)
        paths = list_files(root)
        known = {
            p: (s, m) for p, s, m in self.db.execute("SELECT path, size, mtime_ns FROM files WHERE repo_id=?", (rid,))
        }
        stats: dict[str, tuple[int, int]] = {}
        for p in paths:
            try:
                st = os.stat(root / p)
            except OSError:
                continue
            stats[p] = (st.st_size, st.st_mtime_ns)
        changed = [p for p, st in stats.items() if known.get(p) != st]
        gone = [p for p in known if p not in stats]
        for p in gone + changed:
            self._forget(rid, p)
        for i, (path, defs, targets) in enumerate(_chunked_map(pool, _parse_file, [(str(root), p) for p in changed])):
            size, mtime = stats[path]
            self.db.execute(
                "INSERT INTO files VALUES(?,?,?,?,?)", (rid, path, size, mtime, int(scan.is_test_path(path)))
            )
            self.db.executemany(
                "INSERT INTO defs VALUES(?,?,?,?,?,?,?,?)",
                [(rid, path, d.line, d.symbol, d.kind, d.namespace, d.arity, int(d.variadic)) for d in defs],
            )
            cmake_dir = str(PurePosixPath(path).parent)
            self.db.executemany(
                "INSERT INTO test_targets VALUES(?,?,?)",
                [
                    (rid, str(PurePosixPath(cmake_dir, s)) if cmake_dir != "." else s, t)
                    for t, srcs in targets
                    for s in srcs
                ],
            )
            if progress and i % 256 == 0:
                progress(f"parsing {root.name}", i, len(changed))
        self._index_tests(root, rid, old_hash, set(changed), progress)
        self.db.commit()
        n_defs = self.db.execute("SELECT COUNT(*) FROM defs WHERE repo_id=?", (rid,)).fetchone()[0]
        n_tests = self.db.execute("SELECT COUNT(*) FROM files WHERE repo_id=? AND is_test=1", (rid,)).fetchone()[0]
        commit, remote = self.db.execute("SELECT git_commit, remote FROM repos WHERE id=?", (rid,)).fetchone()
        return RepoSummary(
            str(root), root.name, commit, remote, len(stats), len(changed), n_defs, n_tests, time.perf_counter() - t0
        )

    def _forget(self, rid: int, path: str) -> None:
        for table in ("files", "defs", "test_refs", "test_targets"):
            self.db.execute(f"DELETE FROM {table} WHERE repo_id=? AND path=?", (rid, path))

    def _index_tests(
        self, root: Path, rid: int, old_hash: str | None, changed: set[str], progress: Progress | None
    ) -> None:
        """Test references to this repository's kernels; all test files again when the kernels changed."""
        wanted: set[str] = set()
        for symbol, path in self.db.execute("SELECT DISTINCT symbol, path FROM defs WHERE repo_id=?", (rid,)):
            wanted |= link_tokens(symbol, path)
        digest = hashlib.sha1("\n".join(sorted(wanted)).encode()).hexdigest()
        tests = [p for (p,) in self.db.execute("SELECT path FROM files WHERE repo_id=? AND is_test=1", (rid,))]
        redo = tests if digest != old_hash else [p for p in tests if p in changed]
        redo = [p for p in redo if PurePosixPath(p).suffix in scan.PY_EXT | scan.CXX_EXT]
        self.db.executemany("DELETE FROM test_refs WHERE repo_id=? AND path=?", [(rid, p) for p in redo])
        _set_wanted(frozenset(wanted))  # for the in-process path of small jobs
        workers = self._workers
        with ProcessPoolExecutor(max_workers=workers, initializer=_set_wanted, initargs=(_WANTED,)) as pool:
            for i, (path, refs) in enumerate(_chunked_map(pool, _scan_tests, [(str(root), p) for p in redo])):
                self.db.executemany(
                    "INSERT INTO test_refs VALUES(?,?,?,?,?)", [(rid, path, r.token, r.line, r.test) for r in refs]
                )
                if progress and i % 256 == 0:
                    progress(f"tests of {root.name}", i, len(redo))
        self.db.execute("UPDATE repos SET link_hash=? WHERE id=?", (digest, rid))


def _chunked_map(pool: ProcessPoolExecutor, fn: Callable, jobs: list) -> Iterator:  # type: ignore[type-arg]
    """``pool.map`` with chunks big enough to amortize pickling, small enough to balance two cores."""
    if len(jobs) < 64:
        yield from map(fn, jobs)
        return
    yield from pool.map(fn, jobs, chunksize=max(16, len(jobs) // 64))
