"""The graded-sample table: its columns and its export to the published JSON layout (its rules:
:func:`retrieval_response.tables.sample_rules.validate_graded`)."""

from __future__ import annotations

import os

import polars as pl

from retrieval_response.infra.atomic import atomic_path

GRADED_COLUMNS = ("id", "subset", "E", "Nc", "Np", "K", "rank", "inK", "answer_ideal", "answer_topK",
                  "grade", "grade_expected", "P", "R", "status", "grade_raw")
PUBLISHED_COLUMNS = ("id", "E", "Nc", "Np", "K", "rank", "inK", "answer_ideal", "answer_topK",
                     "grade", "grade_expected", "P", "R", "status")
GOLD_COLUMNS = ("grade_gold", "grade_gold_expected", "status_gold", "grade_gold_raw")
"""The grade against the gold answers (``llm.grade_reference: both``): all four or none."""
PUBLISHED_GOLD_COLUMNS = ("grade_gold", "grade_gold_expected", "status_gold")


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
