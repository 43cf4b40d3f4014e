"""The ranker kinds, one entry each, and how each ranks a design's pools (the rank rule).

A ranker is ``dense`` (an entry of the ``rankers`` registry with an embedding backend: cosine
over the embed rule's vectors), ``lexical`` (a registry entry with backend ``bm25``: BM25 over the
dataset's texts) or ``run`` (the dataset's run file: its order, its documents checked against
the corpus). ``workflow_config.plan.ranker_kind`` tells a unit's kind; :data:`POOL_RANKERS` is
the one table from a kind to its ranking, so a new kind is one entry here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import polars as pl

from retrieval_response.ranking.cosine_ranking import RankingReport

PoolRanker = Callable[..., tuple[pl.DataFrame, RankingReport]]


def _dense(texts: pl.DataFrame, ranker: Mapping, inputs: Mapping, **design) -> tuple[pl.DataFrame, RankingReport]:
    """Cosine ranking over the vectors of ``inputs["vectors"]`` (``cosine_ranking.rank_samples``)."""
    from retrieval_response.embedding.dataset import vector_lookup
    from retrieval_response.ranking.cosine_ranking import rank_samples

    return rank_samples(texts, vector_lookup(pl.read_parquet(inputs["vectors"])), **design)


def _lexical(texts: pl.DataFrame, ranker: Mapping, inputs: Mapping, **design) -> tuple[pl.DataFrame, RankingReport]:
    """BM25 over the texts with the registry entry ``ranker["spec"]`` (``lexical.bm25_rank_samples``)."""
    from retrieval_response.ranking.lexical import bm25_rank_samples

    return bm25_rank_samples(texts, ranker["spec"], source=str(ranker["source"]), **design)


def _run(texts: pl.DataFrame, ranker: Mapping, inputs: Mapping, **design) -> tuple[pl.DataFrame, RankingReport]:
    """The order of the run file ``inputs["run"]``, its documents and queries checked against the
    dataset's source (``ranker["layout"]``, ``ranker["source"]``, downloaded when
    ``ranker["allow_downloads"]``; ``run_file.rank_from_run``)."""
    from retrieval_response.datasets.layouts import corpus_ids
    from retrieval_response.ranking.run_file import rank_from_run

    documents, queries = corpus_ids(ranker["layout"], ranker["source"], allow_downloads=ranker["allow_downloads"])
    return rank_from_run(texts, inputs["run"], documents=documents, queries=queries, **design)


POOL_RANKERS: dict[str, PoolRanker] = {"dense": _dense, "lexical": _lexical, "run": _run}
"""Ranker kind -> how it ranks a design's pools."""


def rank_pools(texts: pl.DataFrame, ranker: Mapping, inputs: Mapping, *, allow_downloads: bool, ranker_code: str,
               Nc: int, Np: int, Ks: list[int]) -> tuple[pl.DataFrame, RankingReport]:
    """Ranked samples of design (Nc, Np) with cut-offs ``Ks`` of every serving query of ``texts``,
    and the skip report, by the ranker of kind ``ranker["kind"]`` (:data:`POOL_RANKERS`).
    ``ranker``: its ``kind``, registry ``spec``, and the dataset's ``layout`` and ``source``;
    ``inputs``: the files its kind reads (``vectors``, ``run``); ``allow_downloads``: whether a run's
    ir_datasets corpus may be downloaded. ValueError naming the kinds for an unknown kind."""
    try:
        rank = POOL_RANKERS[ranker["kind"]]
    except KeyError:
        raise ValueError(f"unknown ranker kind {ranker['kind']!r}: one of {', '.join(POOL_RANKERS)}") from None
    return rank(texts, {**ranker, "allow_downloads": allow_downloads}, inputs, ranker_code=ranker_code, Nc=Nc, Np=Np,
                Ks=Ks)
