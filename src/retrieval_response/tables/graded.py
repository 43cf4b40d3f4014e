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


def validate_graded(graded: pl.DataFrame, path: str | os.PathLike) -> None:
    """Check the graded-sample invariants (docs/METHODS.md#graded-table), raising InputError(path, "id X",
    rule) on the first breach: all columns present; unique (id, E, Nc, Np, K);
    len(rank) == len(inK) <= K (fewer than K only where a corpus-level ranker retrieved fewer);
    sum(inK) <= Np; grade in 1..5 exactly when status is "graded";
    a non-null status on every row."""
    missing = [c for c in GRADED_COLUMNS if c not in graded.columns]
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
    for rule, bad in checks.items():
        offenders = graded.filter(bad)
        if offenders.height:
            raise InputError(path, f"id {offenders['id'][0]}", rule)


def export_published_json(graded: pl.DataFrame, path: str | os.PathLike) -> None:
    """Write ``graded`` atomically in the published ``samples_graded.json`` layout: a JSON array
    of records {id, E, Nc, Np, K, rank, inK, answer_ideal, answer_topK, grade, grade_expected, P, R,
    status} (inK as 0/1 integers, grade null for ungraded samples, grade_expected null where the
    grader gave no log-probabilities); the published reader takes the last two as optional fields."""
    table = graded.select(*PUBLISHED_COLUMNS).with_columns(
        pl.col("inK").list.eval(pl.element().cast(pl.Int64)), pl.col("grade").cast(pl.Int64))
    with atomic_path(path) as tmp:
        table.write_json(tmp)
