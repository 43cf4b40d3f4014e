"""Readers for the published primer-ai/retrieval-response files (docs/METHODS.md#published-graded-and-ranked-files).

Each file is a JSON array of records or JSON lines (one record per line). Field names are the
published dataset's. Bad records raise :class:`InputError` with one line per broken record
(at most ``InputErrors.MAX_LINES``), each naming the file, the record (``line N`` for JSON
lines, ``record N`` for an array, both 1-based, with its id when it has one) and the rule it
breaks. Ids and embedder labels ``E`` may end up in output file names, so both must be safe
names (:mod:`retrieval_response.infra.paths`). Counts are bounded before any cast (Nc at most
:data:`MAX_NC`), so no value overflows a column.

The rules are the relations the paper's samples obey: a ranking orders distinct candidates
``0..Nc-1`` (the first Np are the positives), ``inK`` marks the positives of its top K, the
graded samples of one (id, E, Nc, Np) at several K are prefixes of one ranking, and a ranked
sample's ranking gives its graded samples' ``rank`` and ``inK`` (so the top 2K never holds
fewer positives than the top K, and F_e never divides by zero).

- :func:`read_graded` (``samples_graded.json``) -> id, subset, E, Nc, Np, K, rank, inK, grade,
  and, when present, P, R, answer_ideal, answer_topK, grade_expected, status, grade_gold,
  grade_gold_expected, status_gold.
  subset = id.split('-')[0].
- :func:`read_ranked` (``samples_ranked.json``) -> id, subset, E, Nc, Np, K, P, R, rank.
- :func:`read_published` reads both and checks each graded sample against its ranked sample.

``samples_human.json`` is read by :func:`retrieval_response.tables.human_grades.read_human_grades`.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import polars as pl

from retrieval_response.infra.errors import InputError, raise_all
from retrieval_response.infra.json_records import Record, json_type, read_json_records
from retrieval_response.infra.paths import UnsafeNameError, is_safe_name, safe_name

Check = Callable[[dict], str | None]

MAX_NC = 1_000_000
"""The largest number of candidates per query a published sample may have."""

SAMPLE_KEY = ("id", "E", "Nc", "Np")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    """A JSON number that a Float64 column holds (an integer beyond 2**63 is refused, not cast)."""
    return isinstance(value, float) or (_is_int(value) and abs(value) < 2**63)


def _is_int_list(value) -> bool:
    return isinstance(value, list) and all(_is_int(v) for v in value)


def _is_number_list(value) -> bool:
    return isinstance(value, list) and all(_is_number(v) for v in value)


def _located(record: Record) -> str:
    """The record's label, with its id when the id is a safe name: ``record 3 (id A-1)``."""
    return f"{record.label} (id {record.data['id']})" if is_safe_name(record.data.get("id")) else record.label


def _validate(path, records: list[Record], checks: list[Check]) -> None:
    """One InputError per record that breaks a check (its first broken rule), all raised together."""
    errors = []
    for record in records:
        for check in checks:
            problem = check(record.data)
            if problem:
                errors.append(InputError(path, _located(record), problem))
                break
    raise_all(errors)


def _require(fields: dict[str, tuple[Callable[[object], bool], str]], optional: bool = False) -> Check:
    """Each field present (unless ``optional``) and valid: ``fields[name] = (is_valid, what it must be)``."""

    def check(record: dict) -> str | None:
        for name, (is_valid, expected) in fields.items():
            if name not in record:
                if optional:
                    continue
                return f"missing field {name!r}"
            if not is_valid(record[name]):
                return f"field {name!r} must be {expected}, got {json_type(record[name])} {_short(record[name])}"
        return None

    return check


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _count_bounds(record: dict) -> str | None:
    """Nc, Np (and K, when an integer) within their bounds, before anything is cast or built from them."""
    nc, np_ = record["Nc"], record["Np"]
    if not 2 <= nc <= MAX_NC:
        return f"Nc must be an integer in 2..{MAX_NC}, got {nc}"
    if not 1 <= np_ < nc:
        return f"need 1 <= Np < Nc, got Np={np_}, Nc={nc}"
    return None


def _sample_keys_valid(record: dict) -> str | None:
    for key, what in (("id", "id"), ("E", "embedder label E")):
        try:
            safe_name(record[key], what)
        except UnsafeNameError as error:
            return str(error)
    if "-" not in record["id"]:
        return "id must be '<subset>-<number>'"
    return _count_bounds(record)


SAMPLE_KEYS = {
    "id": (lambda v: isinstance(v, str), "a string"),
    "E": (lambda v: isinstance(v, str), "a string"),
    "Nc": (_is_int, "an integer"),
    "Np": (_is_int, "an integer"),
}
OPTIONAL_FIELDS = {
    "P": (lambda v: v is None or _is_number(v), "a number or null"),
    "R": (lambda v: v is None or _is_number(v), "a number or null"),
    "answer_ideal": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "answer_topK": (lambda v: v is None or isinstance(v, str), "a string or null"),
}


def _ranking_problem(rank: list[int], nc: int) -> str | None:
    """Why ``rank`` is no ranking of distinct candidates 0..Nc-1 (None when it is one)."""
    rule = f"rank must list distinct candidates in 0..Nc-1 = 0..{nc - 1}"
    outside = [r for r in rank if not 0 <= r < nc]
    if outside:
        return f"{rule}: {outside[0]} is outside"
    seen = set()
    for r in rank:
        if r in seen:
            return f"{rule}: {r} appears twice"
        seen.add(r)
    return None


def _graded_valid(record: dict) -> str | None:
    K, inK, nc, np_ = record["K"], record["inK"], record["Nc"], record["Np"]
    if not 1 <= K <= nc:
        return f"K must be in 1..Nc, got K={K}, Nc={nc}"
    if len(inK) != K:
        return f"len(inK) = {len(inK)} must equal K = {K}"
    if any(v not in (0, 1) for v in inK):
        return "inK must hold only 0 and 1"
    if sum(inK) > np_:
        return f"sum(inK) = {sum(inK)} exceeds Np = {np_}"
    if "rank" in record:
        rank = record["rank"]
        if not _is_int_list(rank) or len(rank) != K:
            return "rank must be a list of K integers"
        problem = _ranking_problem(rank, nc)
        if problem:
            return problem
        if [int(r < np_) for r in rank] != list(inK):
            return "inK must be 1 exactly where rank < Np"
    grade = record["grade"]
    if grade is not None and not (_is_int(grade) and 1 <= grade <= 5):
        return f"grade must be an integer 1..5 or null, got {grade!r}"
    return None


def _grade_fields_valid(record: dict, grade: str, expected: str, status: str, *, nullable: bool = False) -> str | None:
    """The optional ``expected`` (a number in [1, 5] or null) and ``status`` (a non-empty string,
    ``"graded"`` exactly when ``grade`` is given; with ``nullable``, null for a grade not asked,
    ``grade`` null too) of one grade of ``record``."""
    value = record.get(expected)
    if value is not None and not (_is_number(value) and 1 <= value <= 5):
        return f"{expected} must be a number in [1, 5] or null, got {value!r}"
    if status not in record:
        return None
    state = record[status]
    if nullable and state is None:
        return None if record.get(grade) is None else f"{grade} must be null when {status} is null (not asked)"
    if not isinstance(state, str) or not state:
        return f"{status} must be a non-empty string, got {state!r}"
    if (record.get(grade) is not None) != (state == "graded"):
        return (f"{grade} must be given exactly when {status} is 'graded' "
                f"({status} {state!r}, {grade} {record.get(grade)!r})")
    return None


def _graded_optional_valid(record: dict) -> str | None:
    gold = record.get("grade_gold")
    if gold is not None and not (_is_int(gold) and 1 <= gold <= 5):
        return f"grade_gold must be an integer 1..5 or null, got {gold!r}"
    return (_grade_fields_valid(record, "grade", "grade_expected", "status")
            or _grade_fields_valid(record, "grade_gold", "grade_gold_expected", "status_gold", nullable=True))


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
    "grade_gold": pl.Int8, "grade_gold_expected": pl.Float64, "status_gold": pl.String,
}


def _key(record: Record, keys: tuple[str, ...]) -> tuple:
    return tuple(record.data[k] for k in keys)


def _check_unique(path, records: list[Record], keys: tuple[str, ...]) -> None:
    """One InputError per record whose ``keys`` repeat an earlier record's."""
    first: dict[tuple, Record] = {}
    errors = []
    for record in records:
        earlier = first.setdefault(_key(record, keys), record)
        if earlier is not record:
            errors.append(InputError(path, _located(record), f"duplicate key ({', '.join(keys)}) of {earlier.label}"))
    raise_all(errors)


def _check_prefixes(path, records: list[Record]) -> None:
    """The graded samples of one (id, E, Nc, Np) at several K are prefixes of one ranking: each
    record's ``inK`` (and ``rank``) extends those of the same sample at a smaller K."""
    samples: dict[tuple, list[Record]] = {}
    for record in records:
        samples.setdefault(_key(record, SAMPLE_KEY), []).append(record)
    errors = []
    for group in samples.values():
        group = sorted(group, key=lambda r: r.data["K"])
        for shorter, longer in zip(group, group[1:], strict=False):
            k = shorter.data["K"]
            for field in ("rank", "inK"):
                if field in shorter.data and field in longer.data and longer.data[field][:k] != shorter.data[field]:
                    errors.append(InputError(path, _located(longer), (
                        f"{field}[:{k}] = {_short(longer.data[field][:k])} differs from {field} = "
                        f"{_short(shorter.data[field])} of {shorter.label} (K={k}): the samples of one "
                        "(id, E, Nc, Np) at several K must be prefixes of one ranking")))
                    break
    raise_all(errors)


def graded_records(path: str | os.PathLike) -> list[Record]:
    """The records of a published graded file, each checked (see :func:`read_graded`)."""
    records = read_json_records(path)
    checks = [
        _require({**SAMPLE_KEYS, "K": (_is_int, "an integer"), "inK": (_is_int_list, "a list of integers"),
                  "grade": (lambda v: v is None or _is_int(v), "an integer or null")}),
        _require({**OPTIONAL_FIELDS, "rank": (_is_int_list, "a list of integers")}, optional=True),
        _sample_keys_valid,
        _graded_valid,
        _graded_optional_valid,
    ]
    _validate(path, records, checks)
    _check_unique(path, records, (*SAMPLE_KEY, "K"))
    _check_prefixes(path, records)
    return records


def read_graded(path: str | os.PathLike) -> pl.DataFrame:
    """Graded samples: one row per (id, E, Nc, Np, K), in the DESIGN.md graded columns found.

    Rules: id, E safe names; Nc, Np, K integers with 2 <= Nc <= MAX_NC, 1 <= Np < Nc and
    1 <= K <= Nc; inK a list of K 0/1 values with sum(inK) <= Np; rank (optional) K distinct
    integers in 0..Nc-1 with inK = (rank < Np); grade an integer 1..5 or null (ungraded); P, R
    numbers, answers strings (or null); grade_expected (optional) a number in [1, 5] or null;
    status (optional) a non-empty string, ``"graded"`` exactly when grade is not null; the
    gold-reference grade (optional) by the same rules: grade_gold an integer 1..5 or null,
    grade_gold_expected a number in [1, 5] or null, status_gold ``"graded"`` exactly when
    grade_gold is not null, or null where the sample was not graded against gold answers (a
    dataset of the study graded with ``llm.grade_reference: ideal``);
    (id, E, Nc, Np, K) unique; the records of one
    (id, E, Nc, Np) are prefixes of one another (inK, rank).
    """
    return _frame(graded_records(path), GRADED_SCHEMA)


def _ranked_valid(record: dict) -> str | None:
    K, P, R, rank, nc = record["K"], record["P"], record["R"], record["rank"], record["Nc"]
    if not len(P) == len(R) == len(K):
        return "K, P and R must have the same length"
    if any(k < 1 or k > nc for k in K) or any(a >= b for a, b in zip(K, K[1:], strict=False)):
        return f"K must be increasing values in 1..Nc = 1..{nc}, got {_short(K)}"
    if len(rank) != nc:
        return f"rank must be a permutation of 0..Nc-1 (all Nc = {nc} candidates), got {len(rank)} values"
    return _ranking_problem(rank, nc)


RANKED_SCHEMA = {
    "id": pl.String, "E": pl.String, "Nc": pl.Int32, "Np": pl.Int32, "K": pl.List(pl.Int32),
    "P": pl.List(pl.Float64), "R": pl.List(pl.Float64), "rank": pl.List(pl.Int32),
}


def ranked_records(path: str | os.PathLike) -> list[Record]:
    """The records of a published ranked file, each checked (see :func:`read_ranked`)."""
    records = read_json_records(path)
    checks = [
        _require({**SAMPLE_KEYS, "K": (_is_int_list, "a list of integers"), "P": (_is_number_list, "a list of numbers"),
                  "R": (_is_number_list, "a list of numbers"), "rank": (_is_int_list, "a list of integers")}),
        _sample_keys_valid,
        _ranked_valid,
    ]
    _validate(path, records, checks)
    _check_unique(path, records, SAMPLE_KEY)
    return records


def read_ranked(path: str | os.PathLike) -> pl.DataFrame:
    """Ranked samples: one row per (id, E, Nc, Np) with the full ranking.

    Rules: id, E safe names; Nc, Np integers with 2 <= Nc <= MAX_NC and 1 <= Np < Nc; K
    increasing integers in 1..Nc; P, R number lists as long as K; rank a permutation of
    0..Nc-1; (id, E, Nc, Np) unique.
    """
    return _frame(ranked_records(path), RANKED_SCHEMA)


def check_graded_against_ranked(graded_path, graded: list[Record], ranked_path, ranked: list[Record]) -> None:
    """Each graded sample that has a ranked sample agrees with its ranking: ``rank`` (when given)
    is ranked ``rank[:K]`` and ``inK`` is ``rank[:K] < Np``; one InputError per graded record that
    does not, naming the ranked record."""
    rankings = {_key(record, SAMPLE_KEY): record for record in ranked}
    errors = []
    for record in graded:
        ranked_record = rankings.get(_key(record, SAMPLE_KEY))
        if ranked_record is None:
            continue
        data, k = record.data, record.data["K"]
        top = ranked_record.data["rank"][:k]
        where = f"{ranked_path} {_located(ranked_record)}"
        if "rank" in data and data["rank"] != top:
            problem = f"rank = {_short(data['rank'])} differs from rank[:K] = {_short(top)} of {where}"
        elif data["inK"] != [int(r < data["Np"]) for r in top]:
            problem = (f"inK = {_short(data['inK'])} differs from rank[:K] < Np = "
                       f"{_short([int(r < data['Np']) for r in top])} of {where}")
        else:
            continue
        errors.append(InputError(graded_path, _located(record), problem))
    raise_all(errors)


def read_published(
    graded_path: str | os.PathLike, ranked_path: str | os.PathLike | None
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """``read_graded(graded_path)`` and ``read_ranked(ranked_path)`` (None without one), each
    graded sample checked against its ranked sample (``check_graded_against_ranked``)."""
    graded = graded_records(graded_path)
    if ranked_path is None:
        return _frame(graded, GRADED_SCHEMA), None
    ranked = ranked_records(ranked_path)
    check_graded_against_ranked(graded_path, graded, ranked_path, ranked)
    return _frame(graded, GRADED_SCHEMA), _frame(ranked, RANKED_SCHEMA)
