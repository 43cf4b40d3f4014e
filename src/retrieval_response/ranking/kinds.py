"""The ranker kinds, one entry each: how each ranks a design's pools (the rank rule) and retrieves
from a whole corpus (the retrieve rule).

A ranker is ``dense`` (an entry of the ``rankers`` registry with an embedding backend: cosine
over the embed rule's vectors), ``lexical`` (a registry entry with backend ``bm25``: BM25 over the
texts) or ``run`` (the dataset's run file: its order, its documents checked against the corpus).
``workflow_config.plan.ranker_kind`` tells a unit's kind; :data:`RANKER_KINDS` is the one table
from a kind to what it does, so a new kind is one entry here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import polars as pl

from retrieval_response.ranking.cosine_ranking import RankingReport


@dataclass(frozen=True)
class RankerKind:
    """What one kind of ranker does.

    ``rank_pools(texts, ranker, inputs, *, ranker_code, Nc, Np, Ks)`` -> (ranked samples, report)
    of a design's pools; ``retrieve(texts, corpus, ranker, inputs, depth)`` -> (``id, docids``: each
    query's first ``depth`` documents of the corpus, the number of queries it does not rank: None
    for a kind that ranks every query).
    ``ranker``: the kind's ``spec`` (registry entry, null for a run), the dataset's ``layout`` and
    ``source``, ``allow_downloads``; ``inputs``: the files the kind reads (``vectors``, ``run``)."""

    rank_pools: Callable[..., tuple[pl.DataFrame, RankingReport]]
    retrieve: Callable[..., tuple[pl.DataFrame, int | None]]


def _dense_pools(texts: pl.DataFrame, ranker: Mapping, inputs: Mapping, **design) -> tuple[pl.DataFrame, RankingReport]:
    """Cosine ranking over the vectors of ``inputs["vectors"]`` (``cosine_ranking.rank_samples``)."""
    from retrieval_response.embedding.dataset import vector_lookup
    from retrieval_response.ranking.cosine_ranking import rank_samples

    return rank_samples(texts, vector_lookup(pl.read_parquet(inputs["vectors"])), **design)


def _dense_corpus(texts: pl.DataFrame, corpus: pl.DataFrame, ranker: Mapping, inputs: Mapping,
                  depth: int) -> tuple[pl.DataFrame, None]:
    """The cosine top ``depth`` of the corpus per query, over the vectors of ``inputs["vectors"]``."""
    from retrieval_response.embedding.dataset import vector_lookup
    from retrieval_response.ranking.corpus_retrieval import dense_retrieval, retrieved_from_indexes

    encode = vector_lookup(pl.read_parquet(inputs["vectors"]))
    indexes = dense_retrieval(encode(texts["q"].to_list(), "query"), encode(corpus["text"].to_list(), "passage"), depth)
    return retrieved_from_indexes(texts, corpus, indexes), None


def _lexical_pools(texts: pl.DataFrame, ranker: Mapping, inputs: Mapping, **design) -> tuple[pl.DataFrame, RankingReport]:
    """BM25 over the texts with the registry entry ``ranker["spec"]`` (``lexical.bm25_rank_samples``)."""
    from retrieval_response.ranking.lexical import bm25_rank_samples

    return bm25_rank_samples(texts, ranker["spec"], source=str(ranker["source"]), **design)


def _lexical_corpus(texts: pl.DataFrame, corpus: pl.DataFrame, ranker: Mapping, inputs: Mapping,
                    depth: int) -> tuple[pl.DataFrame, None]:
    """The BM25 top ``depth`` of the corpus per query, with the registry entry ``ranker["spec"]``."""
    from retrieval_response.ranking.corpus_retrieval import bm25_retrieval, retrieved_from_indexes
    from retrieval_response.ranking.lexical import bm25_settings

    settings = bm25_settings(ranker["code"], ranker["spec"])
    indexes = bm25_retrieval(texts["q"].to_list(), corpus["text"].to_list(), settings, depth,
                             str(ranker.get("source") or "the corpus"))
    return retrieved_from_indexes(texts, corpus, indexes), None


def _run_pools(texts: pl.DataFrame, ranker: Mapping, inputs: Mapping, **design) -> tuple[pl.DataFrame, RankingReport]:
    """The order of the run file ``inputs["run"]``, its documents and queries checked against the
    dataset's source (``ranker["layout"]``, ``ranker["source"]``, downloaded when
    ``ranker["allow_downloads"]``; ``run_file.rank_from_run``)."""
    from retrieval_response.datasets.layouts import corpus_ids
    from retrieval_response.ranking.run_file import rank_from_run

    documents, queries = corpus_ids(ranker["layout"], ranker["source"], allow_downloads=ranker["allow_downloads"])
    return rank_from_run(texts, inputs["run"], documents=documents, queries=queries, **design)


def _run_corpus(texts: pl.DataFrame, corpus: pl.DataFrame, ranker: Mapping, inputs: Mapping,
                depth: int) -> tuple[pl.DataFrame, int]:
    """The first ``depth`` documents of the run file ``inputs["run"]`` per query, its documents
    checked against the corpus and its queries by ``run_file.check_run_matches``."""
    from retrieval_response.ranking.corpus_retrieval import retrieved_from_run
    from retrieval_response.ranking.run_file import check_run_matches, read_run

    run = read_run(inputs["run"], documents=corpus["doc_id"])
    check_run_matches(run, texts["source_id"], inputs["run"])
    return retrieved_from_run(texts, run, depth)


RANKER_KINDS: dict[str, RankerKind] = {
    "dense": RankerKind(_dense_pools, _dense_corpus),
    "lexical": RankerKind(_lexical_pools, _lexical_corpus),
    "run": RankerKind(_run_pools, _run_corpus),
}
"""Ranker kind -> what it does (:class:`RankerKind`)."""


def ranker_kind(ranker: Mapping) -> RankerKind:
    """The entry of :data:`RANKER_KINDS` of ``ranker["kind"]``; ValueError naming the kinds for an unknown kind."""
    try:
        return RANKER_KINDS[ranker["kind"]]
    except KeyError:
        raise ValueError(f"unknown ranker kind {ranker['kind']!r}: one of {', '.join(RANKER_KINDS)}") from None


def rank_pools(texts: pl.DataFrame, ranker: Mapping, inputs: Mapping, *, allow_downloads: bool, ranker_code: str,
               Nc: int, Np: int, Ks: list[int]) -> tuple[pl.DataFrame, RankingReport]:
    """Ranked samples of design (Nc, Np) with cut-offs ``Ks`` of every serving query of ``texts``,
    and the skip report, by the ranker of kind ``ranker["kind"]`` (:data:`RANKER_KINDS`).
    ``ranker``: its ``kind``, registry ``spec``, and the dataset's ``layout`` and ``source``;
    ``inputs``: the files its kind reads (``vectors``, ``run``); ``allow_downloads``: whether a run's
    ir_datasets corpus may be downloaded."""
    return ranker_kind(ranker).rank_pools(texts, {**ranker, "allow_downloads": allow_downloads}, inputs,
                                          ranker_code=ranker_code, Nc=Nc, Np=Np, Ks=Ks)
