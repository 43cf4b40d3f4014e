"""The graded-sample table: invariant checks and export to the published JSON layout."""

from __future__ import annotations

import os

import polars as pl

from retrieval_response.infra.atomic import atomic_path
from retrieval_response.infra.errors import InputError

GRADED_COLUMNS = ("id", "subset", "E", "Nc", "Np", "K", "rank", "inK", "answer_ideal", "answer_topK",
                  "grade", "grade_expected", "P", "R", "status", "grade_raw")
PUBLISHED_COLUMNS = ("id", "E", "Nc", "Np", "K", "rank", "inK", "answer_ideal", "answer_topK",
                     "grade", "grade_expected", "P", "R", "status")
GOLD_COLUMNS = ("grade_gold", "grade_gold_expected", "status_gold", "grade_gold_raw")
"""The grade against the gold answers (``llm.grade_reference: both``): all four or none."""
PUBLISHED_GOLD_COLUMNS = ("grade_gold", "grade_gold_expected", "status_gold")


def validate_graded(graded: pl.DataFrame, path: str | os.PathLike) -> None:
    """Check the graded-sample invariants (docs/METHODS.md#graded-table), raising InputError(path, "id X",
    rule) on the first breach: all columns present; unique (id, E, Nc, Np, K);
    len(rank) == len(inK) <= K (fewer than K only where a corpus-level ranker retrieved fewer);
    sum(inK) <= Np; grade in 1..5 exactly when status is "graded";
    a non-null status on every row; with any of :data:`GOLD_COLUMNS`, all of them, and the same
    two rules for ``grade_gold`` and ``status_gold``."""
    gold = [c for c in GOLD_COLUMNS if c in graded.columns]
    missing = [c for c in (*GRADED_COLUMNS, *(GOLD_COLUMNS if gold else ())) if c not in graded.columns]
    if missing:
        raise InputError(path, "columns", f"missing column {missing[0]!r}")
    checks = {
        "status is null": pl.col("status").is_null(),
        "len(rank) > K": pl.col("rank").list.len() > pl.col("K"),
        "len(inK) != len(rank)": pl.col("inK").list.len() != pl.col("rank").list.len(),
        "sum(inK) > Np": pl.col("inK").list.sum() > pl.col("Np"),
        "grade outside 1..5": pl.col("grade").is_not_null() & ~pl.col("grade").is_between(1, 5),
        "grade present exactly when status is 'graded'":
            pl.col("grade").is_not_null() != (pl.col("status") == "graded"),
        "duplicate (id, E, Nc, Np, K)": pl.struct("id", "E", "Nc", "Np", "K").is_duplicated(),
    }
    if gold:
        checks |= {
            "status_gold is null": pl.col("status_gold").is_null(),
            "grade_gold outside 1..5": pl.col("grade_gold").is_not_null() & ~pl.col("grade_gold").is_between(1, 5),
            "grade_gold present exactly when status_gold is 'graded'":
                pl.col("grade_gold").is_not_null() != (pl.col("status_gold") == "graded"),
        }
    for rule, bad in checks.items():
        offenders = graded.filter(bad)
        if offenders.height:
            raise InputError(path, f"id {offenders['id'][0]}", rule)


def export_published_json(graded: pl.DataFrame, path: str | os.PathLike) -> None:
    """Write ``graded`` atomically in the published ``samples_graded.json`` layout: a JSON array
    of records {id, E, Nc, Np, K, rank, inK, answer_ideal, answer_topK, grade, grade_expected, P, R,
    status} (inK as 0/1 integers, grade null for ungraded samples, grade_expected null where the
    grader gave no log-probabilities), plus grade_gold, grade_gold_expected, status_gold when the
    table has the gold-reference grade; the published reader takes grade_expected, status and
    the gold fields as optional fields."""
    gold = PUBLISHED_GOLD_COLUMNS if "grade_gold" in graded.columns else ()
    table = graded.select(*PUBLISHED_COLUMNS, *gold).with_columns(
        pl.col("inK").list.eval(pl.element().cast(pl.Int64)),
        *(pl.col(c).cast(pl.Int64) for c in ("grade", *gold[:1])))
    with atomic_path(path) as tmp:
        table.write_json(tmp)
