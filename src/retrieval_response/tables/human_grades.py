"""Human grades of graded samples, read and checked (docs/METHODS.md#human-and-llm-graders).

They come in the published ``samples_human.json`` layout (graded-sample fields
``id, E, Nc, Np, K, grade`` plus ``grade_human_1..3``; a JSON array or JSON lines) or as a
CSV with columns ``id, E, Nc, Np, K, grade_human_*`` (``grade`` optional);
:mod:`retrieval_response.agreement.human_llm` compares them with the LLM's.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import polars as pl

from retrieval_response.agreement.human_llm import GRADE_RANGE, HUMAN_COLUMN, SAMPLE_KEY
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import read_json_records


def _json_int(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError
    return value


def _csv_int(value: object) -> int | None:
    if value is None or str(value).strip() == "":
        return None
    return int(str(value).strip())


def _validated_record(
    record: dict, path: Path, where: str, parse_int: Callable[[object], int | None],
    human_columns: list[str],
) -> dict:
    missing = [key for key in SAMPLE_KEY if key not in record or record[key] in (None, "")]
    if missing:
        raise InputError(path, where, f"missing field(s) {', '.join(missing)}")
    if not isinstance(record["id"], str) or not isinstance(record["E"], str):
        raise InputError(path, where, "id and E must be strings")
    where = f"id {record['id']}" if where.startswith("record") else where
    row: dict = {"id": record["id"], "E": record["E"]}
    for key in ("Nc", "Np", "K"):
        try:
            row[key] = parse_int(record[key])
        except (TypeError, ValueError):
            raise InputError(path, where, f"{key} = {record[key]!r}: must be an integer") from None
    for key in ("grade", *human_columns):
        try:
            grade = parse_int(record.get(key))
        except (TypeError, ValueError):
            raise InputError(path, where, f"{key} = {record.get(key)!r}: must be an integer grade or null") from None
        if grade is not None and not GRADE_RANGE[0] <= grade <= GRADE_RANGE[1]:
            raise InputError(path, where, f"{key} = {grade}: grades run from {GRADE_RANGE[0]} to {GRADE_RANGE[1]}")
        row[key] = grade
    return row


def _csv_records(path: Path) -> list[tuple[str, dict]]:
    try:
        table = pl.read_csv(path, infer_schema=False)
    except pl.exceptions.PolarsError as error:
        raise InputError(path, "line 1", f"unreadable CSV: {error}") from None
    return [(f"line {i + 2}", row) for i, row in enumerate(table.iter_rows(named=True))]


def read_human_grades(path: str | os.PathLike) -> pl.DataFrame:
    """Read human grades: one row per graded sample, key (id, E, Nc, Np, K).

    ``.csv`` files are read as CSV (``grade`` column optional); anything else as a JSON
    array or JSON lines. Returns columns id, E (str), Nc, Np, K (i32), grade and
    grade_human_1..h (i8, null where missing), human columns sorted by number.
    Raises InputError naming the file and the record for a malformed record, a grade
    outside 1..5, a duplicate key, or a file without any grade_human_* field.
    """
    path = Path(path)
    is_csv = path.suffix.lower() == ".csv"
    records = _csv_records(path) if is_csv else [(record.label, record.data) for record in read_json_records(path)]
    fields = {key for _, record in records for key in record}
    human_columns = sorted((f for f in fields if HUMAN_COLUMN.match(f)),
                           key=lambda f: int(HUMAN_COLUMN.match(f).group(1)))
    if not human_columns:
        raise InputError(path, "line 1", "no grade_human_<n> field: nothing to compare")
    parse_int = _csv_int if is_csv else _json_int
    rows = [_validated_record(record, path, where, parse_int, human_columns) for where, record in records]
    schema = {"id": pl.String, "E": pl.String, "Nc": pl.Int32, "Np": pl.Int32, "K": pl.Int32,
              "grade": pl.Int8} | {column: pl.Int8 for column in human_columns}
    table = pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)
    duplicated = table.filter(pl.struct(SAMPLE_KEY).is_duplicated())
    if duplicated.height:
        first = duplicated.row(0, named=True)
        raise InputError(path, f"id {first['id']}",
                         f"sample (E={first['E']}, Nc={first['Nc']}, Np={first['Np']}, K={first['K']}) "
                         "appears more than once")
    return table
