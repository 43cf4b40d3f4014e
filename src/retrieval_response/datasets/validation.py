"""Checks on source records and on the texts table; each failure is one InputError.

Record checks run while an adapter reads JSON objects, before anything reaches polars (whose
JSON readers silently coerce 5 to "5" and ["a", 3] to ["a", "3"]); the duplicate-id check is
vectorised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import polars as pl

from retrieval_response.datasets.records import read_records
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import Record, json_type
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

TEXTS_COLUMNS = tuple(TEXTS_SCHEMA)
"""Names of the columns every texts table starts with, in order."""


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


def split_candidates(candidates: Iterable[tuple[bool, str]]) -> tuple[list[str], list[str], int]:
    """(positives, negatives, dropped) of ``(is_positive, text)`` candidates in source order: an empty
    text is dropped and counted, the others go to the positives or the negatives by their flag."""
    candidates = list(candidates)
    kept = [(positive, text) for positive, text in candidates if text]
    positives = [text for positive, text in kept if positive]
    negatives = [text for positive, text in kept if not positive]
    return positives, negatives, len(candidates) - len(kept)


def identified_rows(
    path: Path, id_key: str, id_what: str, row_of: Callable[[int, Record, str], tuple[tuple, int]]
) -> tuple[list[tuple], int]:
    """One texts-table row per record of ``path`` (file order) and the number of texts dropped.

    Each record's id is ``required_id(id_key)``; the record is relabelled with it (``with_id``) and
    ``row_of(position, record, id)`` returns its row (id last) and its dropped texts. A repeated id is
    an InputError naming both records (``check_unique`` with ``id_what``).
    """
    rows, labels, dropped = [], [], 0
    for position, raw in enumerate(read_records(path)):
        source_id = required_id(path, raw, id_key)
        record = with_id(raw, source_id)
        row, row_dropped = row_of(position, record, source_id)
        rows.append(row)
        labels.append(record.label)
        dropped += row_dropped
    check_unique(path, [row[-1] for row in rows], labels, id_what)
    return rows, dropped


def texts_frame(rows: list[tuple], columns: tuple[str, ...]) -> pl.DataFrame:
    """The texts table of row tuples named by ``columns``: TEXTS_SCHEMA types, extras as strings."""
    schema = {name: TEXTS_SCHEMA.get(name, pl.String) for name in columns}
    return pl.DataFrame(rows, schema=schema, orient="row")


def drop_repeated_negatives(texts: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """``texts`` with each query's repeated negatives removed (first occurrence kept, order kept)
    and the number of negatives removed. Repeated positives are not touched: they make a query
    unusable (``sampling.DUPLICATE_TEXT``). An ``n_doc`` column (document ids of ``n``) loses
    the same positions."""
    if "n_doc" not in texts.columns:
        deduplicated = texts.with_columns(pl.col("n").list.unique(maintain_order=True))
    else:
        rows = texts.select("n", "n_doc").with_row_index("row")
        kept = (
            rows.explode("n", "n_doc")
            .filter(pl.col("n").is_not_null() & pl.struct("row", "n").is_first_distinct())
            .group_by("row", maintain_order=True).agg("n", "n_doc")
        )
        kept = rows.select("row").join(kept, on="row", how="left", maintain_order="left")
        empty = pl.lit([], dtype=texts.schema["n"])
        deduplicated = texts.with_columns(n=kept["n"].fill_null(empty), n_doc=kept["n_doc"].fill_null(empty))
    removed = texts["n"].list.len().sum() - deduplicated["n"].list.len().sum()
    return deduplicated, int(removed)
