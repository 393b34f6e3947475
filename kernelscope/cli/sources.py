"""``kscope index`` and ``kscope find``: the kernel source index and lookups in it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope import api
from kernelscope.cli._common import ArchOption, ModuleOption, Parquet, emit, guarded, out, pick, progress_bar
from kernelscope.presenters.sources import FIND_PRESENTERS, INDEX_PRESENTERS, find_renderable, index_renderable
from kernelscope.sources.index import Progress as IndexProgress

DbOption = Annotated[
    Optional[Path], typer.Option("--db", help="Index file (default: $KSCOPE_INDEX or ~/.cache/kernelscope).")
]


@contextmanager
def _indexing_bar(first: str) -> Iterator[IndexProgress]:
    """A progress bar for index builds; yields the callback the index reports its stages to."""
    with progress_bar() as bar:
        task = bar.add_task(first, total=None)
        yield lambda stage, done, total: bar.update(task, description=stage, completed=done, total=total)


@guarded
def index(
    repos: Annotated[list[Path], typer.Argument(help="Source checkouts (git or plain directories).")],
    db: DbOption = None,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.index.v1.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE.")] = None,
) -> None:
    """Index kernel definitions and tests of source repositories (incremental on re-run)."""
    presenter = pick({"json": json}, output, INDEX_PRESENTERS)
    with _indexing_bar("listing files") as progress:
        summaries = api.index_sources(repos, db=db, progress=progress)
    if presenter is None:
        out.print(index_renderable(summaries))
    else:
        emit(presenter, summaries, output)


@guarded
def find(
    names: Annotated[Optional[list[str]], typer.Argument(help="Kernel names as profilers print them.")] = None,
    file: Annotated[Optional[Path], typer.Option("--file", "-F", help="Names, one per line; - = stdin.")] = None,
    repo: Annotated[
        Optional[list[Path]], typer.Option(help="Search only these checkouts (repeat); unindexed ones are indexed.")
    ] = None,
    db: DbOption = None,
    arch: ArchOption = None,
    module: ModuleOption = None,
    json: Annotated[bool, typer.Option("--json", help="JSON, schema kernelscope.find.v1.")] = False,
    csv: Annotated[bool, typer.Option("--csv", help="CSV.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Markdown.")] = False,
    parquet: Parquet = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE.")] = None,
) -> None:
    """Find each kernel's source: resolved | ambiguous | no_source | not_found, URL, tests to run."""
    presenter = pick({"json": json, "csv": csv, "markdown": markdown, "parquet": parquet}, output, FIND_PRESENTERS)
    with _indexing_bar("indexing") as progress:
        matches = api.locate_sources(
            names or [], file=file, repos=repo or (), db=db, progress=progress, arch=arch, modules=module or ()
        )
    if presenter is None:
        out.print(find_renderable(matches))
    else:
        emit(presenter, matches, output)
