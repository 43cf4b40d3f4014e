"""The counts of one graded sample that the measures are evaluated from, besides K and Np
(docs/METHODS.md#measures): n_p, np_2K, np_partner and n_p_umbrela, each a function of a graded
table (:data:`COUNTS`).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from retrieval_response.measures.judgments import umbrela_positives


def positives(graded: pl.DataFrame) -> pl.Series:
    """n_p per graded row: sum(inK), the positives in the top K (i64)."""
    return graded["inK"].list.sum().cast(pl.Int64).alias("n_p")


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


def given_positives_in_top_2k(graded: pl.DataFrame) -> pl.Series | None:
    """np_2K as the graded table gives it (i64; :func:`positives_in_top_2k` when the ranked table is
    at hand), None when it has no such column."""
    return graded["np_2K"].cast(pl.Int64) if "np_2K" in graded.columns else None


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


def umbrela_positive_count(graded: pl.DataFrame) -> pl.Series:
    """n_p_umbrela per graded row (i64, :func:`~.judgments.umbrela_positives`; null where a label of
    the top K is missing), from ``umbrela_label`` aligned with ``inK`` (:func:`~.judgments.aligned_judgments`)."""
    counts = pl.Series("n_p_umbrela", umbrela_positives(graded["umbrela_label"]), dtype=pl.Float64)
    return counts.fill_nan(None).cast(pl.Int64)


COUNTS: dict[str, Callable[[pl.DataFrame], pl.Series | None]] = {
    "n_p": positives,
    "np_2K": given_positives_in_top_2k,
    "np_partner": partner_positives,
    "n_p_umbrela": umbrela_positive_count,
}
"""The count columns by name, each computed from a graded table (None where the table cannot give it)."""
