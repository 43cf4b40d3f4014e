"""The feature columns the measures are computed from, added to a graded table by one loop over
the registry (:data:`.registry.MEASURES`): each measure computes the counts it reads and, for a
measure that is a column of its own (nDCG, RR@K, the judgment measures ...), its value.
"""

from __future__ import annotations

import polars as pl

from retrieval_response.measures.counts import positives_in_top_2k
from retrieval_response.measures.judgments import JUDGMENT_COLUMNS, aligned_judgments
from retrieval_response.measures.registry import MEASURES


def add_features(graded: pl.DataFrame, ranked: pl.DataFrame | None = None) -> pl.DataFrame:
    """``graded`` with the feature columns of every measure of the registry (:meth:`.registry.Measure.compute`).

    n_p (i64); nDCG, nDCG@K, RR@K, AP@K (f64; null where undefined: Np = 0; nDCG@K with graded
    gains when ``grades`` and ``ideal_grades`` are given, :func:`.formulas.graded_ndcg_at_k`);
    np_partner (nullable i64); np_2K (nullable i64) when ``ranked`` is given (counted from it,
    :func:`.counts.positives_in_top_2k`) or a column ``np_2K`` already exists. With judgment
    columns (:data:`.judgments.JUDGMENT_COLUMNS`): eRAG_P and eRAG_success (from ``erag_utility``;
    eRAG_MRR and eRAG_nDCG too, null unless the utilities are 0/1), UDCG (``udcg_utility``),
    n_p_umbrela (i64) and nDCG_umbrela (``umbrela_label``), each null where a judgment of the top
    K is missing. A column is computed once, by the first measure that reads it, in registry order.
    """
    if ranked is not None:
        graded = graded.with_columns(np_2K=positives_in_top_2k(graded, ranked))
    lists = graded.with_columns(aligned_judgments(c) for c in JUDGMENT_COLUMNS if c in graded.columns)
    columns: dict[str, pl.Series] = {}
    for measure in MEASURES.values():
        columns |= measure.compute(lists, skip=frozenset(columns))
    return graded.with_columns(**columns)
