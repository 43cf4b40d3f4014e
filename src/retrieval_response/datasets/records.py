"""Read a source file into records: JSON array, JSON lines, or Parquet, detected from the content.

JSON files go through the package's one JSON reader (:mod:`retrieval_response.infra.json_records`).
Every record carries a 1-based label for error messages: ``line N`` (line of a JSON-lines file),
``record N`` (N-th object of a JSON array) or ``row N`` (Parquet row). Unreadable files and
malformed JSON raise ``InputError`` naming the file, the line and the rule broken.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import Record, existing_file, parse_json_records, read_text

PARQUET_MAGIC = b"PAR1"


def is_parquet(path: Path) -> bool:
    """True when ``path`` starts with the Parquet magic bytes ``PAR1``."""
    with path.open("rb") as handle:
        return handle.read(4) == PARQUET_MAGIC


def read_parquet_frame(path: Path) -> pl.DataFrame:
    """The table of a Parquet file; InputError when it cannot be decoded."""
    try:
        return pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as error:
        raise InputError(path, "file", f"cannot read as Parquet: {error}") from error


def read_records(path: str | Path) -> list[Record]:
    """All records of ``path``: Parquet (by magic bytes), a JSON array (first character ``[``) or JSON lines.

    Raises InputError for a missing or unreadable file, malformed JSON, a non-object record,
    or a file without any record.
    """
    source = existing_file(path)
    if is_parquet(source):
        frame = read_parquet_frame(source)
        records = [Record(f"row {number}", row) for number, row in enumerate(frame.iter_rows(named=True), start=1)]
    else:
        records = parse_json_records(source, read_text(source))
    if not records:
        raise InputError(source, "file", "no records (expected at least one JSON object or table row)")
    return records
