"""Gather graded samples into the one table the analysis reads (workflow or published files).

The table gains the answers' scores against the gold answers of the texts tables
(:mod:`retrieval_response.analysis.answer_scores`): ``answer_f1, answer_em, answer_recall,
answer_contains`` (top-K answer) and ``ideal_f1, ideal_em, ideal_recall, ideal_contains`` (ideal
answer), null when the query has no gold answer, the answer is
missing, or (published files) no ``samples_texts.json`` is given.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import polars as pl

from retrieval_response.analysis.answer_scores import SCORES, best_scores
from retrieval_response.analysis.measures import positives_in_top_2k
from retrieval_response.datasets import published_texts
from retrieval_response.infra.errors import InputError
from retrieval_response.tables.published import read_published
from retrieval_response.tables.workflow_tables import read_graded_table, read_ranked_table, read_texts_table


def with_top_2k_positives(graded: pl.DataFrame, ranked: pl.DataFrame | None) -> pl.DataFrame:
    """``graded`` plus ``np_2K`` (positives in ranked.rank[:min(2K, Nc)]) when rankings are given."""
    if ranked is None:
        return graded
    return graded.with_columns(np_2K=positives_in_top_2k(graded, ranked))


SCORED_ANSWERS = (("answer_topK", "answer"), ("answer_ideal", "ideal"))
"""(answer column, prefix of its score columns)."""


def column_or_nulls(frame: pl.DataFrame, name: str, dtype: pl.DataType) -> pl.Series:
    """``frame[name]``, or a null Series of ``dtype`` as long as ``frame`` when there is no such column."""
    return frame[name] if name in frame.columns else pl.Series(name, [None] * frame.height, dtype=dtype)


def with_answer_scores(graded: pl.DataFrame) -> pl.DataFrame:
    """``graded`` (with a gold ``answers: list[str]`` column, or without: no gold) with the answer scores instead.

    ``answer_f1, answer_em, answer_recall, answer_contains`` score ``answer_topK``, and
    ``ideal_f1, ideal_em, ideal_recall, ideal_contains`` score ``answer_ideal``, against the row's
    gold answers (token F1, exact match, token recall, containment; maxima over the gold answers).
    """
    gold = column_or_nulls(graded, "answers", pl.List(pl.String))
    scored = [
        best_scores(column_or_nulls(graded, column, pl.String), gold).rename({score: f"{prefix}_{score}" for score in SCORES})
        for column, prefix in SCORED_ANSWERS
    ]
    return pl.concat([graded.drop("answers", strict=False), *scored], how="horizontal")


def gold_answers(texts_path: str | os.PathLike) -> pl.DataFrame:
    """``id, answers`` of a texts table; ``answers`` empty for every id when the table predates the column."""
    texts = read_texts_table(texts_path, ["id"])
    if "answers" not in pl.read_parquet_schema(texts_path):
        return texts.select("id", pl.lit([], dtype=pl.List(pl.String)).alias("answers"))
    return read_texts_table(texts_path, ["id", "answers"])


def analysis_subsets(graded: pl.DataFrame, subset: str | None) -> pl.DataFrame:
    """``graded`` with the analysis' ``subset``: the configured ``subset`` of its dataset when
    there is one (it wins over the ids), else the paper's ``id.split('-')[0]`` (``Hp-e``, ``Hp-m``
    and ``Hp-h`` fall into ``Hp``; the full id prefix stays available as the finer key ``level``)."""
    return graded.with_columns(
        subset=pl.lit(subset, pl.String) if subset is not None else pl.col("id").str.split("-").list.first())


def collect_workflow(
    graded_paths: Sequence[str | os.PathLike],
    ranked_paths: Sequence[str | os.PathLike],
    texts_paths: Sequence[str | os.PathLike] | None = None,
    subsets: Sequence[str | None] | None = None,
) -> pl.DataFrame:
    """The workflow's graded Parquet files as one table, with ``np_2K`` from its ranked files.

    ``subsets[i]`` is the configured ``subset`` of ``graded_paths[i]``'s dataset (None: none), the
    ``subset`` of its rows in the analysis (``analysis_subsets``).

    ``texts_paths[i]`` is the texts table of ``graded_paths[i]``'s dataset (ids are unique
    only within a dataset); its gold answers give the answer scores (``with_answer_scores``),
    all null when ``texts_paths`` is None.
    """
    texts_paths = texts_paths if texts_paths is not None else [None] * len(graded_paths)
    subsets = subsets if subsets is not None else [None] * len(graded_paths)
    if not len(texts_paths) == len(subsets) == len(graded_paths):
        raise ValueError(f"{len(texts_paths)} texts tables and {len(subsets)} subsets for {len(graded_paths)} graded files: "
                         "expected one per graded file")
    gold = {path: gold_answers(path) for path in dict.fromkeys(texts_paths) if path is not None}
    graded = pl.concat(
        [
            analysis_subsets(read_graded_table(g) if t is None else
                             read_graded_table(g).join(gold[t], on="id", how="left", maintain_order="left"), s)
            for g, t, s in zip(graded_paths, texts_paths, subsets, strict=True)
        ],
        how="diagonal_relaxed",
    )
    check_unique_samples(graded, graded_paths)
    ranked = pl.concat([read_ranked_table(p, ["id", "E", "Nc", "Np", "rank"]) for p in ranked_paths])
    return with_answer_scores(with_top_2k_positives(graded, ranked))


def check_unique_samples(graded: pl.DataFrame, graded_paths: Sequence[str | os.PathLike]) -> None:
    """InputError when two rows share (id, E, Nc, Np, K): ids are unique within a dataset only,
    so two datasets whose ids overlap (two files of one layout) cannot be analysed together."""
    repeated = graded.filter(pl.struct("id", "E", "Nc", "Np", "K").is_duplicated())
    if repeated.height:
        first = repeated.row(0, named=True)
        raise InputError(", ".join(map(str, graded_paths)), f"id {first['id']}",
                         "the same query id in two datasets (ids are unique within a dataset only): "
                         "give one of them ids of its own")


def published_gold_answers(texts_path: str | os.PathLike, graded: pl.DataFrame) -> pl.DataFrame:
    """``id, answers`` of a published ``samples_texts.json`` for the ids of ``graded``.

    The file is read and validated as the ``published_texts`` layout (its optional ``answer``: a
    string or a list of strings). InputError naming the texts file and the first graded id it
    lacks: every graded query must be in the texts file.
    """
    texts, _ = published_texts.read(texts_path, None)
    missing = graded.select("id").unique(maintain_order=True).join(texts.select("id"), on="id", how="anti")
    if missing.height:
        raise InputError(texts_path, f"id {missing['id'][0]}", "a graded query id is missing from the texts file")
    return texts.select("id", "answers")


def collect_published(
    graded_path: str | os.PathLike,
    ranked_path: str | os.PathLike | None,
    texts_path: str | os.PathLike | None = None,
) -> pl.DataFrame:
    """A published ``samples_graded.json`` as the analysis table (``np_2K`` if ``samples_ranked.json`` is given).

    Each file is checked record by record and each graded sample against its ranked sample
    (``tables.published.read_published``). The optional fields ``grade_expected`` and ``status``
    are kept when the file has them. The answer scores use the gold answers of ``texts_path`` (a
    published ``samples_texts.json``, joined by id, :func:`published_gold_answers`); without it
    they are null.
    """
    graded, ranked = read_published(graded_path, ranked_path or None)
    if texts_path:
        graded = graded.join(published_gold_answers(texts_path, graded), on="id", how="left", maintain_order="left")
    return with_answer_scores(with_top_2k_positives(graded, ranked))
