"""The feature columns the measures are computed from, added to a graded table: the positives in
the top K, top 2K and of the 2K partner row, the list measures, and the judgment measures.
"""

from __future__ import annotations

import polars as pl

from retrieval_response.analysis import judgment_measures as judged
from retrieval_response.analysis.formulas import (
    average_precision_at_k,
    graded_ndcg_at_k,
    ndcg_at_k,
    ndcg_paper,
    reciprocal_rank_at_k,
)


def positives_in_top_2k(graded: pl.DataFrame, ranked: pl.DataFrame) -> pl.Series:
    """np_2K per graded row: the count of rank indexes < Np among ranked.rank[:min(2K, Nc)], which
    is the whole of ``rank`` when it is shorter (a corpus-level ranking lists the retrieved
    documents only, so an unretrieved positive never counts).

    ``ranked`` has id, E, Nc, Np, rank (the full ranking); rows are matched on (id, E, Nc, Np).
    Null where the graded row has no ranked sample.
    """
    keys = ["id", "E", "Nc", "Np"]
    positions = (
        ranked.select(*keys, "rank")
        .unique(keys, keep="first", maintain_order=True)
        .with_columns(pl.col("Nc").cast(pl.Int32), pl.col("Np").cast(pl.Int32))
        .explode("rank")
        .with_columns(
            depth=pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over(keys),
            np_2K=(pl.col("rank") < pl.col("Np")).cast(pl.Int32).cum_sum().over(keys),
        )
        .drop("rank")
    )
    lengths = ranked.select(*keys, retrieved=pl.col("rank").list.len().cast(pl.Int32)).unique(
        keys, keep="first").with_columns(pl.col("Nc").cast(pl.Int32), pl.col("Np").cast(pl.Int32))
    queries = (
        graded.select(*keys, "K").with_columns(pl.col("Nc").cast(pl.Int32), pl.col("Np").cast(pl.Int32))
        .join(lengths, on=keys, how="left", maintain_order="left")
        .select(*keys, depth=pl.min_horizontal(2 * pl.col("K"), pl.col("Nc"), pl.col("retrieved")).cast(pl.Int32))
    )
    return queries.join(positions, on=[*keys, "depth"], how="left", maintain_order="left")["np_2K"]


def partner_positives(graded: pl.DataFrame) -> pl.Series:
    """np_partner per graded row: n_p of the row of the same (id, E, Nc, Np) with K' = round(2K).

    K is an integer, so round(2K) = 2K. Null where no such row exists (the paper drops these).
    """
    keys = ["id", "E", "Nc", "Np"]
    partners = graded.select(
        *keys, K=pl.col("K").cast(pl.Int64), np_partner=pl.col("inK").list.sum().cast(pl.Int64)
    ).unique([*keys, "K"], keep="first", maintain_order=True)
    queries = graded.select(*keys, K=2 * pl.col("K").cast(pl.Int64))
    return queries.join(partners, on=[*keys, "K"], how="left", maintain_order="left")["np_partner"]


def add_features(graded: pl.DataFrame, ranked: pl.DataFrame | None = None) -> pl.DataFrame:
    """``graded`` with the feature columns every measure needs.

    Adds n_p (i64), nDCG, nDCG@K, RR@K, AP@K (f64; null where undefined: Np = 0; nDCG@K with
    graded gains when ``grades`` and ``ideal_grades`` are given, :func:`graded_ndcg_at_k`),
    np_partner (nullable i64) and, when ``ranked`` is given
    or a column ``np_2K`` already exists, np_2K (nullable i64; counted from ``ranked`` wins).
    With judgment columns (:data:`.judgment_measures.JUDGMENT_COLUMNS`): eRAG_P and eRAG_success (from
    ``erag_utility``; eRAG_MRR and eRAG_nDCG too, null unless the utilities are 0/1), UDCG
    (``udcg_utility``), n_p_umbrela (i64) and nDCG_umbrela (``umbrela_label``), each null where a
    judgment of the top K is missing.
    """
    inK = graded["inK"]
    out = graded.with_columns(
        n_p=inK.list.sum().cast(pl.Int64),
        nDCG=pl.Series(ndcg_paper(inK), dtype=pl.Float64),
        **{
            name: pl.Series(function(inK, graded["Np"].to_numpy()), dtype=pl.Float64).fill_nan(None)
            for name, function in (("RR@K", reciprocal_rank_at_k), ("AP@K", average_precision_at_k))
        },
        **{"nDCG@K": pl.Series(ndcg_at_k(inK, graded["Np"].to_numpy(), graded["K"].to_numpy()),
                               dtype=pl.Float64).fill_nan(None)},
        np_partner=partner_positives(graded),
    )
    if "grades" in graded.columns:
        out = out.with_columns(pl.Series("nDCG@K", graded_ndcg_at_k(graded["grades"], graded["ideal_grades"],
                                                                          graded["K"].to_numpy()),
                                         dtype=pl.Float64).fill_nan(None))
    present = [c for c in judged.JUDGMENT_COLUMNS if c in graded.columns]
    if present:
        lists = graded.select("inK", *(judged.aligned_judgments(c) for c in present))
        values = {}
        if "erag_utility" in present:
            utility = lists["erag_utility"]
            values |= {"eRAG_P": judged.erag_precision(utility), "eRAG_success": judged.erag_success(utility),
                       "eRAG_MRR": judged.erag_mrr(utility), "eRAG_nDCG": judged.erag_ndcg(utility)}
        if "udcg_utility" in present:
            values["UDCG"] = judged.udcg(lists["udcg_utility"], lists["inK"])
        if "umbrela_label" in present:
            values |= {"n_p_umbrela": judged.umbrela_positives(lists["umbrela_label"]),
                       "nDCG_umbrela": judged.umbrela_ndcg(lists["umbrela_label"])}
        out = out.with_columns(pl.Series(name, value, dtype=pl.Float64).fill_nan(None) for name, value in values.items())
        if "n_p_umbrela" in values:
            out = out.with_columns(pl.col("n_p_umbrela").cast(pl.Int64))
    if ranked is not None:
        out = out.with_columns(np_2K=positives_in_top_2k(graded, ranked).cast(pl.Int64))
    elif "np_2K" in out.columns:
        out = out.with_columns(pl.col("np_2K").cast(pl.Int64))
    return out
