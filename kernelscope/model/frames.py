"""Results as DataFrames and notebook tables: ``to_pandas()``, ``to_arrow()``, ``_repr_html_()``.

Each tabular result names its rows (``Tabular._rows``); a row is the JSON form of one record (``msgspec.to_builtins``)
with nested objects flattened one level (``headline.duration_ns``, ``mix.salu``), so column names are the
``--json`` field names (docs/frames.md). pandas and pyarrow are optional and imported only when asked for.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import msgspec

from kernelscope.errors import MissingToolError

HTML_ROWS = 50  # a notebook shows the first rows; to_pandas() has them all


def flat(record: Any, **extra: Any) -> dict[str, Any]:
    """One record's JSON form, nested objects flattened one level, after the ``extra`` columns."""
    row = dict(extra)
    for key, value in msgspec.to_builtins(record).items():
        if isinstance(value, dict):
            row.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            row[key] = value
    return row


def uniform(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with one set of columns: the union of every row's keys, first-seen order (a mix class that only
    some kernels have is null in the others)."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    return [{c: row.get(c) for c in columns} for row in rows]


def records(rows: Sequence[Any], **extra: Any) -> list[dict[str, Any]]:
    return uniform([flat(r, **extra) for r in rows])


class Tabular:
    """Mixin for results people tabulate: the rows come from ``_rows`` (flat dicts, see ``records``)."""

    __slots__ = ()

    def _rows(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def to_pandas(self) -> Any:
        """The rows as a ``pandas.DataFrame`` with pandas' nullable dtypes (Int64, Float64, string, boolean);
        lists stay Python objects."""
        return to_pandas(self._rows())

    def to_arrow(self) -> Any:
        """The rows as a ``pyarrow.Table`` (lists become list columns)."""
        return to_arrow(self._rows())

    def _repr_html_(self) -> str:
        return html_table(type(self).__name__, self._rows())


def _rows_of(obj: Tabular | Sequence[Any]) -> list[dict[str, Any]]:
    if isinstance(obj, Tabular):
        return obj._rows()
    if all(isinstance(o, Tabular) for o in obj):  # kscope isa's code objects: their kernels, one table
        return uniform([row for o in obj for row in o._rows()])
    return records(obj)


def to_pandas(obj: Tabular | Sequence[Any]) -> Any:
    """A result, or a list of records (``kscope classify``, ``isa``, ``find`` answers), as a DataFrame."""
    try:
        import pandas as pd
    except ImportError:
        raise MissingToolError("pandas", "pip install 'kernelscope[frames]' (or pandas) for to_pandas()") from None
    rows = _rows_of(obj)
    return pd.DataFrame.from_records(rows, columns=list(rows[0]) if rows else None).convert_dtypes()


def to_arrow(obj: Tabular | Sequence[Any]) -> Any:
    """A result, or a list of records, as a ``pyarrow.Table``."""
    try:
        import pyarrow as pa
    except ImportError:
        raise MissingToolError("pyarrow", "pip install 'kernelscope[parquet]' (or pyarrow) for to_arrow()") from None
    return pa.Table.from_pylist(_rows_of(obj))


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:,.3f}" if abs(v) >= 1000 else f"{v:.4g}"
    return html.escape(str(v))


def html_table(title: str, rows: Sequence[dict[str, Any]]) -> str:
    """A plain HTML table (no pandas needed); every cell escaped, so kernel names cannot inject markup."""
    if not rows:
        return f"<p><b>{html.escape(title)}</b>: no rows</p>"
    cols = list(rows[0])
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{_cell(r.get(c))}</td>" for c in cols) + "</tr>" for r in rows[:HTML_ROWS])
    more = f"<p>{len(rows) - HTML_ROWS} more rows: .to_pandas() has all</p>" if len(rows) > HTML_ROWS else ""
    return f"<p><b>{html.escape(title)}</b> ({len(rows)} rows)</p><table><tr>{head}</tr>{body}</table>{more}"
