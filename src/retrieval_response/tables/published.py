"""Readers for the published primer-ai/retrieval-response files (docs/METHODS.md#published-graded-and-ranked-files).

Each file is a JSON array of records or JSON lines (one record per line). Field names are the
published dataset's. A bad record raises :class:`InputError` naming the file, the record
(``line N`` for JSON lines, ``record N`` for an array, both 1-based, with its id when it has one)
and the rule it breaks. Ids and embedder labels ``E`` may end up in output file names, so both
must be safe names (:mod:`retrieval_response.infra.paths`).

- :func:`read_graded` (``samples_graded.json``) -> id, subset, E, Nc, Np, K, rank, inK, grade,
  and, when present, P, R, answer_ideal, answer_topK, grade_expected, status.
  subset = id.split('-')[0].
- :func:`read_ranked` (``samples_ranked.json``) -> id, subset, E, Nc, Np, K, P, R, rank.

``samples_human.json`` is read by :func:`retrieval_response.analysis.agreement.read_human_grades`.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import polars as pl

from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import Record, read_json_records
from retrieval_response.infra.paths import UnsafeNameError, is_safe_name, safe_name

Check = Callable[[dict], str | None]


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_int_list(value) -> bool:
    return isinstance(value, list) and all(_is_int(v) for v in value)


def _is_number_list(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)


def _located(record: Record) -> str:
    """The record's label, with its id when the id is a safe name: ``record 3 (id A-1)``."""
    return f"{record.label} (id {record.data['id']})" if is_safe_name(record.data.get("id")) else record.label


def _validate(path, records: list[Record], checks: list[Check]) -> None:
    for record in records:
        for check in checks:
            problem = check(record.data)
            if problem:
                raise InputError(path, _located(record), problem)


def _require(fields: dict[str, Callable[[object], bool]]) -> Check:
    def check(record: dict) -> str | None:
        for name, is_valid in fields.items():
            if name not in record:
                return f"missing field {name!r}"
            if not is_valid(record[name]):
                return f"field {name!r} has an invalid value {record[name]!r}"
        return None

    return check


def _sample_keys_valid(record: dict) -> str | None:
    for key, what in (("id", "id"), ("E", "embedder label E")):
        try:
            safe_name(record[key], what)
        except UnsafeNameError as error:
            return str(error)
    if "-" not in record["id"]:
        return "id must be '<subset>-<number>'"
    if not 1 <= record["Np"] < record["Nc"]:
        return f"need 1 <= Np < Nc, got Np={record['Np']}, Nc={record['Nc']}"
    return None


SAMPLE_KEYS = {"id": lambda v: isinstance(v, str), "E": lambda v: isinstance(v, str), "Nc": _is_int, "Np": _is_int}


def _graded_valid(record: dict) -> str | None:
    K, inK = record["K"], record["inK"]
    if K < 1:
        return f"K must be >= 1, got {K}"
    if len(inK) != K:
        return f"len(inK) = {len(inK)} must equal K = {K}"
    if any(v not in (0, 1) for v in inK):
        return "inK must hold only 0 and 1"
    if sum(inK) > record["Np"]:
        return f"sum(inK) = {sum(inK)} exceeds Np = {record['Np']}"
    if "rank" in record:
        rank = record["rank"]
        if not _is_int_list(rank) or len(rank) != K:
            return "rank must be a list of K integers"
        if [int(r < record["Np"]) for r in rank] != list(inK):
            return "inK must be 1 exactly where rank < Np"
    grade = record["grade"]
    if grade is not None and not (_is_int(grade) and 1 <= grade <= 5):
        return f"grade must be an integer 1..5 or null, got {grade!r}"
    return None


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _graded_optional_valid(record: dict) -> str | None:
    expected = record.get("grade_expected")
    if expected is not None and not (_is_number(expected) and 1 <= expected <= 5):
        return f"grade_expected must be a number in [1, 5] or null, got {expected!r}"
    if "status" not in record:
        return None
    status = record["status"]
    if not isinstance(status, str) or not status:
        return f"status must be a non-empty string, got {status!r}"
    if (record["grade"] is not None) != (status == "graded"):
        return f"grade must be given exactly when status is 'graded' (status {status!r}, grade {record['grade']!r})"
    return None


def _frame(records: list[Record], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    present = [c for c in schema if any(c in r.data for r in records)]
    columns = {c: [r.data.get(c) for r in records] for c in present}
    frame = pl.DataFrame(columns, schema={c: schema[c] for c in present})
    return frame.with_columns(subset=pl.col("id").str.split("-").list.first()).select(
        "id", "subset", *[c for c in present if c != "id"]
    )


GRADED_SCHEMA = {
    "id": pl.String, "E": pl.String, "Nc": pl.Int32, "Np": pl.Int32, "K": pl.Int32,
    "rank": pl.List(pl.Int32), "inK": pl.List(pl.Int8), "grade": pl.Int8, "P": pl.Float64, "R": pl.Float64,
    "answer_ideal": pl.String, "answer_topK": pl.String, "grade_expected": pl.Float64, "status": pl.String,
}


def read_graded(path: str | os.PathLike) -> pl.DataFrame:
    """Graded samples: one row per (id, E, Nc, Np, K), in the DESIGN.md graded columns found.

    Rules: id, E safe names; Nc, Np, K integers with 1 <= Np < Nc and K >= 1; inK a list of K 0/1
    values with sum(inK) <= Np; rank (optional) K integers with inK = (rank < Np); grade an
    integer 1..5 or null (ungraded); grade_expected (optional) a number in [1, 5] or null;
    status (optional) a non-empty string, ``"graded"`` exactly when grade is not null;
    (id, E, Nc, Np, K) unique.
    """
    records = read_json_records(path)
    checks = [
        _require({**SAMPLE_KEYS, "K": _is_int, "inK": _is_int_list, "grade": lambda v: v is None or _is_int(v)}),
        _sample_keys_valid,
        _graded_valid,
        _graded_optional_valid,
    ]
    _validate(path, records, checks)
    frame = _frame(records, GRADED_SCHEMA)
    _check_unique(path, frame, records, ["id", "E", "Nc", "Np", "K"])
    return frame


def _ranked_valid(record: dict) -> str | None:
    K, P, R, rank = record["K"], record["P"], record["R"], record["rank"]
    if not len(P) == len(R) == len(K):
        return "K, P and R must have the same length"
    if sorted(rank) != list(range(record["Nc"])):
        return "rank must be a permutation of 0..Nc-1"
    if K != sorted(K) or any(k < 1 or k > record["Nc"] for k in K):
        return "K must be sorted values in 1..Nc"
    return None


RANKED_SCHEMA = {
    "id": pl.String, "E": pl.String, "Nc": pl.Int32, "Np": pl.Int32, "K": pl.List(pl.Int32),
    "P": pl.List(pl.Float64), "R": pl.List(pl.Float64), "rank": pl.List(pl.Int32),
}


def read_ranked(path: str | os.PathLike) -> pl.DataFrame:
    """Ranked samples: one row per (id, E, Nc, Np) with the full ranking.

    Rules: id, E safe names; Nc, Np integers with 1 <= Np < Nc; K sorted integers in 1..Nc; P, R
    number lists as long as K; rank a permutation of 0..Nc-1; (id, E, Nc, Np) unique.
    """
    records = read_json_records(path)
    checks = [
        _require({**SAMPLE_KEYS, "K": _is_int_list, "P": _is_number_list, "R": _is_number_list, "rank": _is_int_list}),
        _sample_keys_valid,
        _ranked_valid,
    ]
    _validate(path, records, checks)
    frame = _frame(records, RANKED_SCHEMA)
    _check_unique(path, frame, records, ["id", "E", "Nc", "Np"])
    return frame


def _check_unique(path, frame: pl.DataFrame, records: list[Record], keys: list[str]) -> None:
    """InputError at the first record (row of ``frame``) whose ``keys`` repeat an earlier record's."""
    repeated = frame.with_row_index("row").filter(~pl.struct(keys).is_first_distinct())
    if len(repeated):
        record = records[repeated["row"][0]]
        raise InputError(path, _located(record), f"duplicate key ({', '.join(keys)})")
