"""Findings documents whose numbers come from result tables, never typed by hand.

A template is Markdown with placeholders ``{{table: key=value, key=value | column:format}}``:
``table`` names a Parquet file of the findings folder (``correlations_fit`` ->
``correlations_fit.parquet``), the filters select exactly one row (each ``key=value`` compares the
column as text), and ``column:format`` is printed with Python's ``format`` (``value:.2f``,
``n:d``). Selecting no row or several rows is an error naming the placeholder, and so is a null.
``render`` fills a template; ``python -m retrieval_response.reports.findings TEMPLATE FOLDER OUTPUT``
writes the document.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import polars as pl

from retrieval_response.infra.atomic import write_text

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*:(.*?)\|\s*([A-Za-z0-9_]+)\s*:?([^}]*)\}\}")


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


def render(template: str, tables: dict[str, pl.DataFrame]) -> str:
    """``template`` with every placeholder replaced by its formatted value (module docstring)."""
    def value(match: re.Match) -> str:
        table, filters, column, spec = match.groups()
        return format(lookup(tables, table, _filters(filters), column), spec.strip())

    return PLACEHOLDER.sub(value, template)


def read_tables(folder: str | Path) -> dict[str, pl.DataFrame]:
    """Every ``*.parquet`` of ``folder`` by file stem."""
    return {path.stem: pl.read_parquet(path) for path in sorted(Path(folder).glob("*.parquet"))}


def main(argv: list[str]) -> None:
    template, folder, output = argv
    write_text(render(Path(template).read_text(encoding="utf-8"), read_tables(folder)), output)


if __name__ == "__main__":
    main(sys.argv[1:])
