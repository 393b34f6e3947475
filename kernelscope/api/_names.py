"""Kernel names and their sources: ``kscope classify``, ``kscope index``, ``kscope find``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

from kernelscope.errors import FormatError, InputError
from kernelscope.identity import classify
from kernelscope.model.identity import KernelIdentity
from kernelscope.model.launches import TritonLaunch
from kernelscope.model.source import SourceMatch
from kernelscope.readers._sniff import sniff
from kernelscope.sources.find import Finder
from kernelscope.sources.index import Progress as IndexProgress
from kernelscope.sources.index import RepoSummary, SourceIndex


def read_names(path: Path) -> list[str]:
    """Kernel names from a file: one per line, or JSON lines with a ``name`` key; ``-`` is stdin; a profiler
    output (any format ``kscope gap`` reads) gives its kernels' names, the most GPU time first."""
    if str(path) != "-" and Path(path).is_file() and sniff(Path(path)) is not None:
        from kernelscope.api._gap import gap_report  # it imports this module

        return [r.name for r in gap_report([path]).kernels]
    text = sys.stdin.read() if str(path) == "-" else Path(path).read_text(errors="replace")
    names = []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("{"):
            try:
                obj = msgspec.json.decode(line)
            except msgspec.DecodeError as exc:
                raise FormatError(f"{path}:{i}", "a JSON object with a name", f"bad JSON ({exc})") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
                raise FormatError(f"{path}:{i}", "a JSON object with a string name", "no name key")
            line = obj["name"]
        names.append(line)
    return names


def classify_names(names: Sequence[str] = (), file: Path | None = None) -> list[KernelIdentity]:
    """``kscope classify``: what each kernel name says (kind, category, dtype, tile, function, ...)."""
    all_names = [*names, *(read_names(file) if file is not None else [])]
    if not all_names:
        raise InputError("no kernel names: pass NAME... or --file FILE")
    return classify(all_names)


def index_sources(
    repos: Sequence[str | Path], db: Path | None = None, progress: IndexProgress | None = None
) -> list[RepoSummary]:
    """``kscope index``: build or refresh the source index of ``repos`` (incremental)."""
    if not repos:
        raise InputError("no repositories: pass one or more source checkouts")
    index = SourceIndex(db)
    try:
        return index.index([Path(r) for r in repos], progress=progress)
    finally:
        index.close()


def locate_sources(
    names: Sequence[str] = (),
    *,
    file: Path | None = None,
    repos: Sequence[str | Path] = (),
    db: Path | None = None,
    progress: IndexProgress | None = None,
    arch: str | None = None,
    launches: Sequence[TritonLaunch] = (),
    modules: Sequence[str] = (),
) -> list[SourceMatch]:
    """``kscope find``: definition, upstream URL and tests of each kernel name.

    ``repos`` limits the search to those checkouts; one not yet in the index is indexed first. ``arch`` (the
    GPU the names ran on) picks among per-target definitions; ``launches`` (a launch ledger) name the module
    and parameters of each Triton kernel, which pick among copies of it in several projects; so do ``modules``
    (Python packages or modules the workload ran: ``sglang``, ``vllm.v1.attention.ops.triton_decode_attention``).
    """
    all_names = [*names, *(read_names(file) if file is not None else [])]
    if not all_names:
        raise InputError("no kernel names: pass NAME... or --file FILE")
    index = SourceIndex(db)
    try:
        known = {root for _, root, *_ in index.repos()}
        new = [Path(r) for r in repos if str(Path(r).resolve()) not in known]
        if new:
            index.index(new, progress=progress)
        return Finder(index, [Path(r) for r in repos], arch=arch, modules=modules).find(all_names, launches)
    finally:
        index.close()
