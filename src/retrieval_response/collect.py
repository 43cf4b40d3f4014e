"""Gather graded samples into the one table the analysis reads (workflow or published files)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import polars as pl

from .measures import positives_in_top_2k
from .published import read_graded, read_ranked


def with_top_2k_positives(graded: pl.DataFrame, ranked: pl.DataFrame | None) -> pl.DataFrame:
    """``graded`` plus ``np_2K`` (positives in ranked.rank[:min(2K, Nc)]) when rankings are given.

    The ``subset`` column is dropped so that the analysis applies the paper's rule
    (subset = ``id.split('-')[0]``; the full id prefix stays available as the finer key ``level``).
    """
    graded = graded.drop("subset", strict=False)
    if ranked is None:
        return graded
    return graded.with_columns(np_2K=positives_in_top_2k(graded, ranked))


def collect_workflow(graded_paths: Sequence[str | os.PathLike], ranked_paths: Sequence[str | os.PathLike]) -> pl.DataFrame:
    """The workflow's graded Parquet files as one table, with ``np_2K`` from its ranked files."""
    graded = pl.concat([pl.read_parquet(p) for p in graded_paths], how="diagonal_relaxed")
    ranked = pl.concat([pl.read_parquet(p, columns=["id", "E", "Nc", "Np", "rank"]) for p in ranked_paths])
    return with_top_2k_positives(graded, ranked)


def collect_published(graded_path: str | os.PathLike, ranked_path: str | os.PathLike | None) -> pl.DataFrame:
    """A published ``samples_graded.json`` as the analysis table (``np_2K`` if ``samples_ranked.json`` is given)."""
    ranked = read_ranked(ranked_path) if ranked_path else None
    return with_top_2k_positives(read_graded(graded_path), ranked)
