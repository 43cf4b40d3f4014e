"""Readers for the published primer-ai/retrieval-response files (docs/METHODS.md#published-graded-and-ranked-files).

Each file is a JSON array of records or JSON lines (one record per line). Field names are the
published dataset's. The records become a polars frame, one column per field, and pass the rules
of every sample table (:mod:`.sample_rules`: the workflow's tables pass the same), plus the one of
the published layout: an id ``<subset>-<number>``, the subset being read from it. A record that
cannot become a row (a required field missing, a field of the wrong JSON type, an integer beyond
64 bits) is refused while the frame is built. Either way bad records raise :class:`InputError`
with one line per broken record (at most ``InputErrors.MAX_LINES``), each naming the file, the
record (``line N`` for JSON lines, ``record N`` for an array, both 1-based, with its id when it is
a safe name) and the rule it breaks.

- :func:`read_graded` (``samples_graded.json``) -> id, subset, E, Nc, Np, K, rank, inK, grade,
  and, when present, P, R, answer_ideal, answer_topK, grade_expected, status, grade_gold,
  grade_gold_expected, status_gold.
  subset = id.split('-')[0].
- :func:`read_ranked` (``samples_ranked.json``) -> id, subset, E, Nc, Np, K, P, R, rank.
- :func:`read_published` reads both and checks each graded sample against its ranked sample.

``samples_human.json`` is read by :func:`retrieval_response.tables.human_grades.read_human_grades`.
"""

from __future__ import annotations

import operator
import os
from dataclasses import dataclass
from itertools import chain, compress, repeat

import numpy as np
import polars as pl

from retrieval_response.infra.errors import InputError, raise_all
from retrieval_response.infra.json_records import Record, json_type, read_json_records
from retrieval_response.infra.paths import is_safe_name, shown_value
from retrieval_response.tables.sample_rules import (
    RECORD,
    check_graded_against_ranked,
    check_rules,
    graded_rules,
    id_subset_rules,
    ranked_rules,
)

_INT_TYPES = frozenset({int})
_NUMBER_TYPES = frozenset({int, float})
_NONE = type(None)
_ABSENT = object()
"""The value of a required field a record lacks."""


def _fits(value: object, dtype: pl.DataType) -> bool:
    """``value`` (of an accepted JSON type) is held by ``dtype`` without loss: an integer, a number."""
    if dtype == pl.Int64:
        return -(2**63) <= value < 2**63
    if dtype == pl.Float64:
        return isinstance(value, float) or abs(value) < 2**127
    return True


@dataclass(frozen=True)
class Field:
    """A field of a published record: its JSON types (``types``, or of a list's items ``items``),
    the polars type of its column, whether a record must have it and whether it may be null."""

    what: str
    dtype: pl.DataType
    types: frozenset[type]
    items: frozenset[type] | None = None
    required: bool = True
    nullable: bool = False

    def typed(self, value: object) -> bool:
        """True when ``value`` has a JSON type of this field (null where it may be null or absent)."""
        if value is None:
            return self.nullable or not self.required
        if self.items is None:
            return type(value) in self.types
        return type(value) is list and all(type(v) in self.items for v in value)

    def fits(self, value: object) -> bool:
        """True when ``value`` (of a JSON type of this field) fits its column: 64-bit integers, numbers
        within a float's range."""
        if value is None:
            return True
        if self.items is None:
            return _fits(value, self.dtype)
        return all(_fits(v, self.dtype.inner) for v in value)

    def problem(self, name: str, value: object) -> str | None:
        """Why ``value`` cannot stand in field ``name`` (one record: the slow path); None when it can."""
        if value is _ABSENT:
            return f"missing field {name!r}"
        shown = shown_value(value)
        if not self.typed(value):
            return f"field {name!r} must be {self.what}, got {json_type(value)} {shown}"
        if not self.fits(value):
            return f"field {name!r} must be {self.what} that fits a 64-bit column, got {shown}"
        return None


GRADED_FIELDS = {
    "id": Field("a string", pl.String, frozenset({str})),
    "E": Field("a string", pl.String, frozenset({str})),
    "Nc": Field("an integer", pl.Int64, _INT_TYPES),
    "Np": Field("an integer", pl.Int64, _INT_TYPES),
    "K": Field("an integer", pl.Int64, _INT_TYPES),
    "rank": Field("a list of integers or null", pl.List(pl.Int64), frozenset({list}), _INT_TYPES, required=False),
    "inK": Field("a list of integers", pl.List(pl.Int64), frozenset({list}), _INT_TYPES),
    "grade": Field("an integer or null", pl.Int64, _INT_TYPES, nullable=True),
    "P": Field("a number or null", pl.Float64, _NUMBER_TYPES, required=False),
    "R": Field("a number or null", pl.Float64, _NUMBER_TYPES, required=False),
    "answer_ideal": Field("a string or null", pl.String, frozenset({str}), required=False),
    "answer_topK": Field("a string or null", pl.String, frozenset({str}), required=False),
    "grade_expected": Field("a number or null", pl.Float64, _NUMBER_TYPES, required=False),
    "status": Field("a string or null", pl.String, frozenset({str}), required=False),
    "grade_gold": Field("an integer or null", pl.Int64, _INT_TYPES, required=False),
    "grade_gold_expected": Field("a number or null", pl.Float64, _NUMBER_TYPES, required=False),
    "status_gold": Field("a string or null", pl.String, frozenset({str}), required=False),
}
"""The fields of a graded record as read; required: id, E, Nc, Np, K, inK, grade (which may be null)."""

RANKED_FIELDS = {
    "id": GRADED_FIELDS["id"],
    "E": GRADED_FIELDS["E"],
    "Nc": GRADED_FIELDS["Nc"],
    "Np": GRADED_FIELDS["Np"],
    "K": Field("a list of integers", pl.List(pl.Int64), frozenset({list}), _INT_TYPES),
    "P": Field("a list of numbers", pl.List(pl.Float64), frozenset({list}), _NUMBER_TYPES),
    "R": Field("a list of numbers", pl.List(pl.Float64), frozenset({list}), _NUMBER_TYPES),
    "rank": Field("a list of integers", pl.List(pl.Int64), frozenset({list}), _INT_TYPES),
}
"""The fields of a ranked record as read, all required."""

GRADED_SCHEMA = {
    "id": pl.String, "E": pl.String, "Nc": pl.Int32, "Np": pl.Int32, "K": pl.Int32,
    "rank": pl.List(pl.Int32), "inK": pl.List(pl.Int8), "grade": pl.Int8, "P": pl.Float64, "R": pl.Float64,
    "answer_ideal": pl.String, "answer_topK": pl.String, "grade_expected": pl.Float64, "status": pl.String,
    "grade_gold": pl.Int8, "grade_gold_expected": pl.Float64, "status_gold": pl.String,
}
"""The graded columns as returned (bounded by the rules, so the casts are exact)."""

RANKED_SCHEMA = {
    "id": pl.String, "E": pl.String, "Nc": pl.Int32, "Np": pl.Int32, "K": pl.List(pl.Int32),
    "P": pl.List(pl.Float64), "R": pl.List(pl.Float64), "rank": pl.List(pl.Int32),
}
"""The ranked columns as returned."""


def _column(name: str, field: Field, data: list[dict]) -> pl.Series | None:
    """The column ``name`` of the records ``data``; None when a value is not accepted (fast path:
    the set of the values' types, then polars' strict construction, which refuses what does not fit)."""
    values = list(map(dict.get, data, repeat(name), repeat(_ABSENT if field.required else None)))
    allowed = field.types | ({_NONE} if field.nullable or not field.required else set())
    if not set(map(type, values)) <= allowed:
        return None
    try:
        if field.items is None:
            return pl.Series(name, values, dtype=field.dtype, strict=True)
        return _list_column(name, values, field)
    except (TypeError, OverflowError, pl.exceptions.PolarsError):
        return None


def _list_column(name: str, values: list[list | None], field: Field) -> pl.Series | None:
    """The list column of ``values`` (lists or None), built from its items in one flat column and
    the row of each (polars builds a list column from Python lists one list at a time)."""
    given = np.fromiter(map(operator.is_not, values, repeat(None)), dtype=bool, count=len(values))
    lists = list(compress(values, given))
    items = list(chain.from_iterable(lists))
    if not set(map(type, items)) <= field.items:
        return None
    lengths = np.zeros(len(values), dtype=np.int64)
    lengths[given] = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    rows = pl.DataFrame({"row": np.arange(len(values))})
    grouped = pl.DataFrame({"row": np.repeat(np.arange(len(values)), lengths),
                            name: pl.Series(items, dtype=field.dtype.inner, strict=True)}
                           ).group_by("row", maintain_order=True).agg(pl.col(name))
    column = rows.join(grouped, on="row", how="left", maintain_order="left")[name]
    return pl.select(pl.when(pl.Series(given)).then(column.fill_null(pl.lit([], dtype=field.dtype)))).to_series().alias(name)


def _located(record: Record) -> str:
    """The record's label, with its id when the id is a safe name: ``record 3 (id A-1)``."""
    return f"{record.label} (id {record.data['id']})" if is_safe_name(record.data.get("id")) else record.label


def records_frame(path: str | os.PathLike, records: list[Record], fields: dict[str, Field]) -> pl.DataFrame:
    """The records as a frame: a column per field of ``fields`` that is required or that some record
    has (types as in ``fields``), and ``_record``, each row's label. InputError, one line per record
    that cannot become a row (its first field that is missing or of the wrong type)."""
    data = [record.data for record in records]
    present = [name for name, field in fields.items() if field.required or any(map(dict.__contains__, data, repeat(name)))]
    columns = [_column(name, fields[name], data) for name in present]
    if any(column is None for column in columns):
        errors = []
        for record in records:
            for name in present:
                problem = fields[name].problem(name, record.data.get(name, _ABSENT if fields[name].required else None))
                if problem:
                    errors.append(InputError(path, _located(record), problem))
                    break
        raise_all(errors or [InputError(path, "file", "a field cannot become a column (its values do not fit one type)")])
    return pl.DataFrame([*columns, pl.Series(RECORD, [record.label for record in records], dtype=pl.String)])


def _published_table(frame: pl.DataFrame, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """A checked frame in the published columns: ``id``, ``subset`` (id.split('-')[0]), the others, cast to ``schema``."""
    columns = [c for c in schema if c in frame.columns]
    return frame.select(*(pl.col(c).cast(schema[c]) for c in columns)).with_columns(
        subset=pl.col("id").str.split("-").list.first()).select("id", "subset", *columns[1:])


def _checked_graded(path: str | os.PathLike) -> pl.DataFrame:
    """The graded file as a frame (with ``_record``), checked (see :func:`read_graded`)."""
    frame = records_frame(path, read_json_records(path), GRADED_FIELDS)
    check_rules(frame, path, {**graded_rules(frame.columns, optional_status=True), **id_subset_rules()})
    return frame


def _checked_ranked(path: str | os.PathLike) -> pl.DataFrame:
    """The ranked file as a frame (with ``_record``), checked (see :func:`read_ranked`)."""
    frame = records_frame(path, read_json_records(path), RANKED_FIELDS)
    check_rules(frame, path, {**ranked_rules(frame.columns, corpus=False), **id_subset_rules()})
    return frame


def read_graded(path: str | os.PathLike) -> pl.DataFrame:
    """Graded samples: one row per (id, E, Nc, Np, K), in the DESIGN.md graded columns found.

    Each record has id, E (strings), Nc, Np, K (integers), inK (a list of integers) and grade (an
    integer or null); rank (a list of integers), P, R, grade_expected, grade_gold_expected
    (numbers), answer_ideal, answer_topK, status, status_gold (strings) and grade_gold (an integer)
    where given, each of them null or absent. The rules are the graded-table rules
    (:func:`~retrieval_response.tables.sample_rules.graded_rules`), ``status`` and ``status_gold``
    optional in each record (``status_gold`` null where a sample was not graded against gold
    answers: a dataset of the study graded with ``llm.grade_reference: ideal``), and the id
    ``<subset>-<number>``.
    """
    return _published_table(_checked_graded(path), GRADED_SCHEMA)


def read_ranked(path: str | os.PathLike) -> pl.DataFrame:
    """Ranked samples: one row per (id, E, Nc, Np) with the full ranking.

    Each record has id, E (strings), Nc, Np (integers), K, rank (lists of integers), P, R (lists
    of numbers). The rules are the ranked-table rules
    (:func:`~retrieval_response.tables.sample_rules.ranked_rules`: rank a permutation of 0..Nc-1,
    K increasing in 1..Nc, P and R n_p/K and n_p/Np at each K, ...) and the id ``<subset>-<number>``.
    """
    return _published_table(_checked_ranked(path), RANKED_SCHEMA)


def read_published(
    graded_path: str | os.PathLike, ranked_path: str | os.PathLike | None
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """``read_graded(graded_path)`` and ``read_ranked(ranked_path)`` (None without one), each
    graded sample checked against its ranked sample
    (:func:`~retrieval_response.tables.sample_rules.check_graded_against_ranked`)."""
    graded = _checked_graded(graded_path)
    if ranked_path is None:
        return _published_table(graded, GRADED_SCHEMA), None
    ranked = _checked_ranked(ranked_path)
    check_graded_against_ranked(graded, graded_path, ranked, ranked_path)
    return _published_table(graded, GRADED_SCHEMA), _published_table(ranked, RANKED_SCHEMA)
