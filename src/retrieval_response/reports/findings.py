"""Findings documents whose numbers come from result tables, never typed by hand.

A placeholder ``{{table: key=value, key=value | column:format}}`` stands for one number:
``table`` names a Parquet file of the findings folder (``correlations_fit`` ->
``correlations_fit.parquet``), the filters select exactly one row (each ``key=value`` compares the
column as text), and ``column:format`` is printed with Python's ``format`` (``value:.2f``,
``n_samples:d``). Selecting no row or several rows is an error naming the placeholder, and so is a null.
A table placeholder ``{{rows table: key=value, ... | column:format, column, ...}}`` prints every
row that matches the filters (none: every row) as a Markdown table, one column per listed column
(header = the column name, a null printed as ``n/a``), rows in the table's order; selecting no row
is an error. Table and column names may hold ``.``, ``/`` and ``-`` (a file path such as
``docs/benchmarks/dag.json``, a dotted key such as ``stages.grade.seconds``: see
:mod:`retrieval_response.reports.doc_pages`, whose pages hold each placeholder in a marker beside
its rendered text). ``render`` replaces every placeholder of a text.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_./-]+)\s*:(.*?)\|\s*([A-Za-z0-9_.-]+)\s*:?([^}]*)\}\}")
ROWS_PLACEHOLDER = re.compile(r"\{\{\s*rows\s+([A-Za-z0-9_./-]+)\s*:(.*?)\|([^}]*)\}\}")
NULL_CELL = "n/a"


class FindingsError(ValueError):
    """A placeholder that does not select exactly one non-null value."""


def _filters(text: str) -> dict[str, str]:
    pairs = [part.split("=", 1) for part in text.split(",") if part.strip()]
    if any(len(pair) != 2 for pair in pairs):
        raise FindingsError(f"filters must be key=value pairs: {text.strip()!r}")
    return {key.strip(): value.strip() for key, value in pairs}


def lookup(tables: dict[str, pl.DataFrame], table: str, filters: dict[str, str], column: str) -> object:
    """The one value of ``column`` in the row of ``tables[table]`` that matches ``filters``
    (columns compared as text); FindingsError unless exactly one row matches and it is not null."""
    if table not in tables:
        raise FindingsError(f"unknown table {table!r}; known: {', '.join(sorted(tables))}")
    frame = tables[table]
    for key in [*filters, column]:
        if key not in frame.columns:
            raise FindingsError(f"table {table}: no column {key!r}")
    rows = frame.filter(*[pl.col(k).cast(pl.String) == v for k, v in filters.items()]) if filters else frame
    if rows.height != 1:
        raise FindingsError(f"table {table} {filters}: {rows.height} rows match, expected 1")
    value = rows[column][0]
    if value is None:
        raise FindingsError(f"table {table} {filters}: {column} is null")
    return value


def markdown_rows(tables: dict[str, pl.DataFrame], table: str, filters: dict[str, str], columns: str) -> str:
    """The rows of ``tables[table]`` matching ``filters`` as a Markdown table of ``columns``
    ("name:format, name, ..."; nulls as :data:`NULL_CELL`); FindingsError when no row matches."""
    if table not in tables:
        raise FindingsError(f"unknown table {table!r}; known: {', '.join(sorted(tables))}")
    specs = [part.strip().split(":", 1) for part in columns.split(",") if part.strip()]
    specs = [(spec[0].strip(), spec[1].strip() if len(spec) > 1 else "") for spec in specs]
    frame = tables[table]
    for key in [*filters, *(name for name, _ in specs)]:
        if key not in frame.columns:
            raise FindingsError(f"table {table}: no column {key!r}")
    rows = frame.filter(*[pl.col(k).cast(pl.String) == v for k, v in filters.items()]) if filters else frame
    if rows.height == 0:
        raise FindingsError(f"table {table} {filters}: 0 rows match, expected at least 1")
    lines = ["| " + " | ".join(name for name, _ in specs) + " |", "|" + "---|" * len(specs)]
    for row in rows.select([name for name, _ in specs]).iter_rows():
        cells = [NULL_CELL if v is None else format(v, spec) for v, (_, spec) in zip(row, specs, strict=True)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render(text: str, tables: dict[str, pl.DataFrame]) -> str:
    """``text`` with every placeholder replaced by its formatted value or table (module docstring)."""
    def value(match: re.Match) -> str:
        table, filters, column, spec = match.groups()
        return format(lookup(tables, table, _filters(filters), column), spec.strip())

    def rows(match: re.Match) -> str:
        table, filters, columns = match.groups()
        return markdown_rows(tables, table, _filters(filters), columns)

    return PLACEHOLDER.sub(value, ROWS_PLACEHOLDER.sub(rows, text))


def read_tables(folder: str | Path) -> dict[str, pl.DataFrame]:
    """Every ``*.parquet`` of ``folder`` by file stem."""
    return {path.stem: pl.read_parquet(path) for path in sorted(Path(folder).glob("*.parquet"))}

