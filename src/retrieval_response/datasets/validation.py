"""Checks on source records and on the texts table; each failure is one InputError.

Record checks run while an adapter reads JSON objects, before anything reaches polars (whose
JSON readers silently coerce 5 to "5" and ["a", 3] to ["a", "3"]); the duplicate-id check is
vectorised.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from retrieval_response.datasets.records import Record, json_type
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.paths import UnsafeNameError, safe_name

TEXTS_SCHEMA = {
    "id": pl.String,
    "subset": pl.String,
    "q": pl.String,
    "p": pl.List(pl.String),
    "n": pl.List(pl.String),
    "answers": pl.List(pl.String),
}
"""Columns every texts table starts with; extras (level, source_id, c1, c2, q2) are strings.

``answers`` holds the source's gold answers of the query (empty when it has none).
"""


def required(path: Path, record: Record, key: str) -> object:
    """``record.data[key]``; InputError ``missing key`` when absent or null."""
    value = record.data.get(key)
    if value is None:
        raise InputError(path, record.label, f"missing key {key!r} (required, not null)")
    return value


def required_string(path: Path, record: Record, key: str) -> str:
    """``record.data[key]`` as a string with non-blank content; InputError otherwise."""
    value = required(path, record, key)
    if not isinstance(value, str):
        raise InputError(path, record.label, f"{key!r} must be a string, found {json_type(value)}")
    if not value.strip():
        raise InputError(path, record.label, f"{key!r} is empty (a non-blank string is required)")
    return value


def required_id(path: Path, record: Record, key: str) -> str:
    """``record.data[key]`` as an id string: a non-blank string or an integer (converted)."""
    value = required(path, record, key)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return required_string(path, record, key)


def text_list(path: Path, record: Record, key: str) -> list[str]:
    """``record.data[key]`` as a list of non-blank strings.

    InputError names the list and the 0-based index of the first bad element, e.g.
    ``p[3] is empty`` or ``n[0] must be a string, found integer``. An empty list is allowed.
    """
    value = required(path, record, key)
    if not isinstance(value, list):
        raise InputError(path, record.label, f"{key!r} must be a list of strings, found {json_type(value)}")
    for index, text in enumerate(value):
        if not isinstance(text, str):
            raise InputError(path, record.label, f"{key}[{index}] must be a string, found {json_type(text)}")
        if not text.strip():
            raise InputError(path, record.label, f"{key}[{index}] is empty (texts must be non-blank strings)")
    return value


def distinct_answers(answers: list[str]) -> list[str]:
    """Gold answers as kept in the texts table: each stripped, blanks dropped, repeats dropped (first kept)."""
    return list(dict.fromkeys(text.strip() for text in answers if text.strip()))


def optional_answers(path: Path, record: Record, key: str) -> list[str]:
    """``record.data[key]`` as gold answers: absent or null -> [], a string -> [it], a list of strings -> it.

    Passed through ``distinct_answers``. InputError for any other type, naming the key or,
    in a list, the 0-based index of the first non-string (``answer[1] must be a string``).
    """
    value = record.data.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise InputError(path, record.label, f"{key!r} must be a string or a list of strings, found {json_type(value)}")
    for index, text in enumerate(value):
        if not isinstance(text, str):
            raise InputError(path, record.label, f"{key}[{index}] must be a string, found {json_type(text)}")
    return distinct_answers(value)


def path_name(path: Path, record_label: str, value: str, what: str) -> str:
    """``value`` when it is a safe path name (``retrieval_response.infra.paths.safe_name``); InputError otherwise.

    Ids and subsets taken from the data end up in output file names, so they must be safe.
    """
    try:
        return safe_name(value, what)
    except UnsafeNameError as error:
        raise InputError(path, record_label, str(error)) from None


def with_id(record: Record, record_id: str) -> Record:
    """``record`` relabelled as ``<label> (id <record_id>)`` for later messages."""
    return Record(f"{record.label} (id {record_id})", record.data)


def check_unique(path: Path, values: list[str], labels: list[str], what: str) -> None:
    """InputError at the earliest repeat of any value of ``values``, naming its first occurrence."""
    frame = pl.DataFrame({"value": values, "label": labels}, schema={"value": pl.String, "label": pl.String})
    repeats = frame.filter(~pl.col("value").is_first_distinct())
    if repeats.height:
        repeat = repeats.row(0, named=True)
        first = frame.filter(pl.col("value") == repeat["value"]).row(0, named=True)
        raise InputError(path, repeat["label"], f"duplicate {what} {repeat['value']!r} (first at {first['label']})")


def texts_frame(rows: list[tuple], columns: tuple[str, ...]) -> pl.DataFrame:
    """The texts table of row tuples named by ``columns``: TEXTS_SCHEMA types, extras as strings."""
    schema = {name: TEXTS_SCHEMA.get(name, pl.String) for name in columns}
    return pl.DataFrame(rows, schema=schema, orient="row")


def drop_repeated_negatives(texts: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """``texts`` with each query's repeated negatives removed (first occurrence kept, order kept)
    and the number of negatives removed. Repeated positives are not touched: they make a query
    unusable (``sampling.DUPLICATE_TEXT``)."""
    deduplicated = texts.with_columns(pl.col("n").list.unique(maintain_order=True))
    removed = texts["n"].list.len().sum() - deduplicated["n"].list.len().sum()
    return deduplicated, int(removed)
