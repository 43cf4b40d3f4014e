"""Read a source file into records: JSON array, JSON lines, or Parquet, detected from the content.

Every record carries a label for error messages: ``line N`` (1-based line of a JSON-lines
file), ``item N`` (0-based index in a JSON array, as ``data[N]``) or ``row N`` (0-based
Parquet row). Unreadable files and malformed JSON raise ``InputError`` naming the file,
the line and the rule broken.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from retrieval_response.infra.errors import InputError

PARQUET_MAGIC = b"PAR1"


@dataclass(frozen=True)
class Record:
    """One source record: ``label`` locates it in the file, ``data`` is its JSON object."""

    label: str
    data: dict


JSON_TYPE_NAMES = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def json_type(value: object) -> str:
    """The JSON name of ``value``'s type (``null``, ``integer``, ``array`` ...) for error messages."""
    return JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def is_parquet(path: Path) -> bool:
    """True when ``path`` starts with the Parquet magic bytes ``PAR1``."""
    with path.open("rb") as handle:
        return handle.read(4) == PARQUET_MAGIC


def existing_file(path: str | Path) -> Path:
    """``path`` as a Path; InputError when it is missing or not a regular file."""
    source = Path(path)
    if not source.is_file():
        raise InputError(source, "file", "file not found (expected a readable regular file)")
    return source


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``; InputError when it cannot be read or decoded."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(path, "file", f"cannot read as UTF-8 text: {error}") from error


def parse_json_array(path: Path, text: str) -> list[Record]:
    """Records of a JSON array document; each item must be a JSON object."""
    try:
        items = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(path, f"line {error.lineno}", f"malformed JSON: {error.msg}, at column {error.colno}") from error
    if not isinstance(items, list):
        raise InputError(path, "line 1", "expected a JSON array of objects or JSON lines")
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise InputError(path, f"item {index}", f"expected a JSON object, found {json_type(item)}")
    return [Record(f"item {index}", item) for index, item in enumerate(items)]


def iter_json_lines(path: Path, lines: Iterable[str]) -> Iterator[Record]:
    """Records of JSON-lines text, one object per line (blank lines skipped), parsed lazily."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(path, f"line {number}", f"malformed JSON line: {error.msg}, at column {error.colno}") from error
        if not isinstance(item, dict):
            raise InputError(path, f"line {number}", f"expected a JSON object, found {json_type(item)}")
        yield Record(f"line {number}", item)


def parse_json_lines(path: Path, text: str) -> list[Record]:
    """Records of a JSON-lines document (one object per line; blank lines are skipped)."""
    return list(iter_json_lines(path, text.splitlines()))


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
        records = [Record(f"row {index}", row) for index, row in enumerate(frame.iter_rows(named=True))]
    else:
        text = read_text(source)
        parse = parse_json_array if text.lstrip().startswith("[") else parse_json_lines
        records = parse(source, text)
    if not records:
        raise InputError(source, "file", "no records (expected at least one JSON object or table row)")
    return records
