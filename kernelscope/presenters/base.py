"""The presenter contract and the generic tabular writers every result uses."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table as RichTable
from rich.text import Text

from kernelscope.errors import InputError, MissingToolError, json_text, one_line
from kernelscope.identity.demangle import demangle_all


@dataclass(frozen=True)
class Column:
    """One output column: the row key, the header, and how many decimals a float gets in text."""

    key: str
    header: str
    decimals: int | None = None
    justify: str = "right"
    short: str | None = None  # terminal header, where width is scarce

    @property
    def label(self) -> str:
        return self.short or self.header


def fmt(value: Any, decimals: int | None) -> str:
    """A cell as text for people (tables, CSV, Markdown, HTML): numbers rounded, lists joined, and control
    characters escaped (``one_line``): a kernel name is the profiled program's to choose, and one holding
    ``ESC[2J`` or a newline must not clear the terminal or forge a line. JSON and Parquet keep the raw text."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and decimals is not None:
        return f"{value:,.{decimals}f}" if abs(value) >= 1000 else f"{value:.{decimals}f}"
    if isinstance(value, list):
        return one_line(",".join(str(v) for v in value))
    if isinstance(value, tuple):  # a multi-line cell (a hotspot's disassembly context): each line escaped
        return "\n".join(one_line(str(v)) for v in value)
    return one_line(str(value))


@dataclass(frozen=True)
class Table:
    """A result as rows, plus the lines (totals, notes) that go above and below it."""

    title: str
    columns: Sequence[Column]
    rows: Sequence[dict[str, Any]]
    summary: Sequence[tuple[str, str]] = ()
    notes: Sequence[str] = ()


@dataclass(frozen=True)
class Presenter:
    name: str
    extension: str
    binary: bool
    render: Callable[[Any], str | bytes]


def short_name(name: str, function: str | None, width: int = 100) -> str:
    """What a reader scans for: the classified function name, else the name cut at ``width``; the full
    names stay in the machine-readable outputs."""
    text = function or name
    return text if len(text) <= width else text[: width - 3] + "..."


def display_names(names: Collection[str], params: bool = True) -> dict[str, str]:
    """Kernels as a reader scans a table for them: a mangled symbol demangled (one c++filt batch for all) and
    cut at 100 characters, control characters escaped; ``params=False`` also drops the return type and the
    parameter list of every name (``void f<64>(float*, int)`` is ``f<64>``). The machine-readable outputs keep
    the symbol whole."""
    dm = demangle_all(names)
    shown = {n: dm[n].text.removeprefix("void ") if dm[n].mangled else n for n in dm}
    if not params:
        shown = {n: without_params(text.removeprefix("void ")) for n, text in shown.items()}
    return {n: one_line(short_name(text, None)) for n, text in shown.items()}


def without_params(name: str) -> str:
    """A demangled name less its parameter list (``f<64>(float*, int)`` is ``f<64>``; a cut name, without its
    closing parenthesis, stays as it is)."""
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0 and name[i] == "(":
            return name[:i] if i else name
    return name


def shown_text(text: str, style: str = "") -> Text:
    """Text an input wrote (kernel names, disassembly, paths, notes quoting them) as the terminal shows it:
    control characters escaped, and not rich markup."""
    return Text(one_line(text), style=style)


def note_text(note: str) -> Text:
    """A note under a human table (notes quote names and paths)."""
    return shown_text(f"note: {note}", "yellow")


def render_json(result: Any) -> str:
    return json_text(msgspec.json.format(msgspec.json.encode(result), indent=2)) + "\n"


_SHORT = 12  # where long text's longer words (a path, an operand list) fold
_RULE = 3  # what rich's default box adds to a column: one space each side and one rule
_MIN_FLEX = 24  # a name cut shorter than this no longer says which kernel it is: columns go before that
_LEAST_FLEX = 8  # and what a name keeps when even the kept columns leave it less


def rich_table(t: Table, hidden: Collection[str] = ()) -> FittedTable:
    """A ``Table`` as rich renders it (cells as ``Text``: kernel names hold ``[brackets]``, not markup)."""
    return FittedTable(t, frozenset(hidden))


@dataclass(frozen=True)
class FittedTable:
    """A table that fits the terminal it is printed on: columns no row fills are left out, long text wraps
    between words and headers break between words, but a number or a word (a kind, a stall class) never breaks
    (rich alone folds every column alike, a register count into ``11`` / ``0``); where even that is wider than
    the terminal, each row is printed as ``field value`` lines."""

    table: Table
    hidden: frozenset[str] = frozenset()

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        t = self.table
        cols = [c for c in t.columns if c.key not in self.hidden]
        cells = {c.key: [fmt(r.get(c.key), c.decimals) for r in t.rows] for c in cols}
        cols = [c for c in cols if any(cells[c.key]) or not t.rows]  # a column no row fills says nothing
        text = {c.key for c in cols if not _whole(c, cells[c.key])}
        least = {c.key: _least_width(c, cells[c.key], c.key in text) for c in cols}
        room = options.max_width - 1 - _RULE * len(cols)
        if sum(least.values()) <= room:
            widths = {c.key: max([len(c.label), *map(_span, cells[c.key])]) for c in cols}
            while sum(widths.values()) > room:  # break headers first (once), then wrap long text (on every row)
                key = max((k for k in widths if widths[k] > least[k]), key=lambda k: (k not in text, widths[k]))
                widths[key] -= 1
            tab = RichTable(title=Text(one_line(t.title)), title_justify="left", header_style="bold")  # not markup
            for c in cols:
                side: Literal["left", "right"] = "left" if c.justify == "left" else "right"
                tab.add_column(c.label, justify=side, overflow="fold", width=widths[c.key])
            for i, _ in enumerate(t.rows):
                tab.add_row(*(Text(cells[c.key][i]) for c in cols))
            yield tab
            return
        yield Text(one_line(t.title), style="table.title")
        for i, _ in enumerate(t.rows):
            grid = RichTable.grid(padding=(0, 1))
            grid.add_column(style="bold", no_wrap=True)
            grid.add_column(overflow="fold")
            for c in cols:
                if cells[c.key][i]:
                    grid.add_row(c.label, Text(cells[c.key][i]))
            yield grid
            yield Text("")


def _span(cell: str) -> int:
    """How wide a cell is: its longest line."""
    return max(map(len, cell.split("\n")))


def _whole(c: Column, cells: Sequence[str]) -> bool:
    """Whether a column's cells are never broken: numbers, and single words up to 24 characters."""
    return c.justify != "left" or all(_span(x) <= _MIN_FLEX and len(x.split()) <= 1 for x in cells)


def _least_width(c: Column, cells: Sequence[str], text: bool) -> int:
    """The narrowest a column may get: its header down to the header's longest word; a whole column (above) as
    wide as its widest cell; long text down to its longest word, where a longer word (a path) folds at 12."""
    header = max(map(len, c.label.split()), default=0)
    if not text:
        return max([header, *map(_span, cells)])
    return max(header, min(_SHORT, max((len(w) for x in cells for w in x.split()), default=0)))


def fitted_table(
    t: Table, width: int, flexible: Collection[str] = ("name",), drop: Sequence[str] = (), numbered: bool = False
) -> RichTable:
    """``t`` as a rich table at most ``width`` wide that never cuts a number or a short word: columns every row
    leaves empty are not shown, the ``drop`` columns go (in that order) while the rest would not fit with each
    ``flexible`` column (names) at least 24 wide, and the flexible columns share what is left (8 at the least),
    cut with an ellipsis. Rich alone squeezes every column alike (a ``%`` column read ``9.…``)."""
    cols = [c for c in t.columns if any(r.get(c.key) is not None for r in t.rows)]
    cells = {c.key: [fmt(r.get(c.key), c.decimals) for r in t.rows] for c in cols}
    natural = {c.key: max([len(c.label), *map(len, cells[c.key])]) for c in cols}
    index = len(str(len(t.rows))) + _RULE if numbered else 0

    def fixed(shown: list[Column]) -> int:
        least = sum(min(natural[c.key], _MIN_FLEX) for c in shown if c.key in flexible)
        return 1 + index + sum(_RULE + (0 if c.key in flexible else natural[c.key]) for c in shown) + least

    for key in drop:
        if fixed(cols) <= width:
            break
        cols = [c for c in cols if c.key != key]
    room = width - fixed(cols) + sum(min(natural[c.key], _MIN_FLEX) for c in cols if c.key in flexible)
    widths = {c.key: natural[c.key] for c in cols}
    flex = sorted((c.key for c in cols if c.key in flexible), key=lambda k: natural[k])
    for i, key in enumerate(flex):  # the shortest first: what it leaves goes to the longer ones
        widths[key] = max(min(natural[key], room // (len(flex) - i)), min(natural[key], _LEAST_FLEX))
        room -= widths[key]
    tab = RichTable(title=Text(one_line(t.title)), title_justify="left", header_style="bold")  # not markup
    if numbered:
        tab.add_column("#", justify="right", no_wrap=True)
    for c in cols:
        side: Literal["left", "right"] = "left" if c.justify == "left" else "right"
        tab.add_column(c.label, justify=side, width=widths[c.key], overflow="ellipsis", no_wrap=True)
    for i, _ in enumerate(t.rows):
        tab.add_row(*([str(i + 1)] if numbered else []), *(Text(cells[c.key][i]) for c in cols))  # not markup
    return tab


def render_csv(tables: Sequence[Table]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([c.header for c in tables[0].columns])
    for t in tables:
        for r in t.rows:
            w.writerow(["" if r.get(c.key) is None else fmt(r[c.key], None) for c in t.columns])
    return buf.getvalue()


def _md_cell(v: str) -> str:
    return v.replace("|", "\\|").replace("\n", " ")


def render_markdown(tables: Sequence[Table]) -> str:
    out: list[str] = []
    for t in tables:
        out.append(f"## {one_line(t.title)}\n")
        for k, v in t.summary:
            out.append(f"- **{k}**: {one_line(v)}")
        if t.summary:
            out.append("")
        out.append("| " + " | ".join(c.header for c in t.columns) + " |")
        out.append("|" + "|".join("---:" if c.justify == "right" else "---" for c in t.columns) + "|")
        for r in t.rows:
            out.append("| " + " | ".join(_md_cell(fmt(r.get(c.key), c.decimals)) for c in t.columns) + " |")
        out.extend(f"\n> {one_line(n)}" for n in t.notes)
        out.append("")
    return "\n".join(out)


def render_parquet(tables: Sequence[Table]) -> bytes:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingToolError("pyarrow", "pip install 'kernelscope[parquet]' to write Parquet") from None
    cols = tables[0].columns
    data = {c.header: [r.get(c.key) for t in tables for r in t.rows] for c in cols}
    for c in cols:  # lists (ranks) become text so each column has one type
        if any(isinstance(v, list) for v in data[c.header]):
            data[c.header] = [None if v is None else ",".join(map(str, v)) for v in data[c.header]]
    buf = io.BytesIO()
    pq.write_table(pa.table(data), buf)
    return buf.getvalue()


def get(name: str, registry: dict[str, Presenter]) -> Presenter:
    if name not in registry:
        raise InputError(f"unknown output format {name!r}; choose one of {', '.join(registry)}")
    return registry[name]


def by_extension(path: str, registry: dict[str, Presenter]) -> Presenter | None:
    for p in registry.values():
        if path.endswith(p.extension):
            return p
    return None
