"""The ranker kinds, one entry each: how each ranks a design's pools (the rank rule,
:func:`rank_pools`) and retrieves from a whole corpus (the retrieve rule, :func:`retrieve_from_corpus`).

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

from retrieval_response.infra.errors import InputError
from retrieval_response.ranking.corpus_retrieval import (
    NOT_IN_RUN,
    bm25_retrieval,
    corpus_candidates,
    dense_retrieval,
    means_at_k,
    retrieval_depth,
    retrieved_from_indexes,
    retrieved_from_run,
)
from retrieval_response.ranking.cosine_ranking import RankingReport


@dataclass(frozen=True)
class RankerKind:
    """What one kind of ranker does.

    ``rank_pools(texts, ranker, inputs, *, ranker_code, Nc, Np, Ks)`` -> (ranked samples, report)
    of a design's pools; ``retrieve(texts, corpus, ranker, inputs, depth)`` -> (``id, docids``: each
    query's first ``depth`` documents of the corpus, the number of queries it does not rank: None
    for a kind that ranks every query).
    ``ranker``: the kind's ``spec`` (registry entry, null for a run) and the dataset's ``source``
    (named in messages); ``inputs``: the files the kind reads (``vectors``, ``run``)."""

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
    from retrieval_response.ranking.lexical import bm25_settings

    settings = bm25_settings(ranker["code"], ranker["spec"])
    indexes = bm25_retrieval(texts["q"].to_list(), corpus["text"].to_list(), settings, depth,
                             str(ranker.get("source") or "the corpus"))
    return retrieved_from_indexes(texts, corpus, indexes), None


def _run_pools(texts: pl.DataFrame, ranker: Mapping, inputs: Mapping, **design) -> tuple[pl.DataFrame, RankingReport]:
    """The order of the run file ``inputs["run"]``, its documents and queries checked against the
    dataset's ids, ``ranker["source_ids"]()`` (``run_file.rank_from_run``)."""
    from retrieval_response.ranking.run_file import rank_from_run

    documents, queries = ranker["source_ids"]()
    return rank_from_run(texts, inputs["run"], documents=documents, queries=queries, **design)


def _run_corpus(texts: pl.DataFrame, corpus: pl.DataFrame, ranker: Mapping, inputs: Mapping,
                depth: int) -> tuple[pl.DataFrame, int]:
    """The first ``depth`` documents of the run file ``inputs["run"]`` per query, its documents
    checked against the corpus, its query ids against ``ranker["queries"]`` (the dataset's, as on
    the pool path, when given) and its queries by ``run_file.check_run_matches``."""
    from retrieval_response.ranking.run_file import checked_run

    run = checked_run(texts, inputs["run"], documents=corpus["doc_id"], queries=ranker.get("queries"))
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


def rank_pools(texts: pl.DataFrame, ranker: Mapping, inputs: Mapping, *,
               source_ids: Callable[[], tuple[pl.Series, pl.Series]], ranker_code: str, Nc: int, Np: int,
               Ks: list[int]) -> tuple[pl.DataFrame, RankingReport]:
    """Ranked samples of design (Nc, Np) with cut-offs ``Ks`` of every serving query of ``texts``,
    and the skip report, by the ranker of kind ``ranker["kind"]`` (:data:`RANKER_KINDS`).
    ``ranker``: its ``kind``, registry ``spec`` and the dataset's ``source``; ``inputs``: the files
    its kind reads (``vectors``, ``run``); ``source_ids()``: the dataset's document and query ids
    (``datasets.layouts.corpus_ids``), called by a run only."""
    return ranker_kind(ranker).rank_pools(texts, {**ranker, "source_ids": source_ids}, inputs,
                                          ranker_code=ranker_code, Nc=Nc, Np=Np, Ks=Ks)


def retrieve_from_corpus(
    texts: pl.DataFrame, corpus: pl.DataFrame, ranker: Mapping, *, ranker_code: str, Ks: list[int],
    vectors: str | None = None, run_path: str | None = None, queries: pl.Series | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, RankingReport]:
    """``corpus_candidates`` of the retrievals of one ranker (``ranker``: ``kind`` dense, lexical or
    run, and its registry ``spec``; :data:`RANKER_KINDS` retrieves): dense from ``vectors`` (the
    path of the embed rule's table of queries and corpus texts), lexical by BM25 over the corpus,
    run from the run file ``run_path`` (its documents checked against the corpus, its query ids
    against ``queries``, the dataset's, as on the pool path (``run_file.read_run``), and by
    ``run_file.check_run_matches``). The report counts the queries a run does not rank.
    InputError naming the ranker's source for a corpus of fewer than max(K) documents."""
    if Ks and corpus.height < max(Ks):  # checked at start-up for beir and trec; an ir_datasets corpus here
        raise InputError(str(ranker.get("source") or "the corpus"), "file",
                         f"the corpus holds {corpus.height} documents, fewer than K = {max(Ks)}: a query retrieves "
                         "at least max(K) documents")
    inputs = {"vectors": vectors, "run": run_path}
    ranker = {**ranker, "code": ranker_code, "queries": queries}
    retrieved, not_in_run = ranker_kind(ranker).retrieve(texts, corpus, ranker, inputs, retrieval_depth(Ks, corpus.height))
    candidates, ranked, report = corpus_candidates(texts, retrieved, corpus, ranker_code=ranker_code, Ks=Ks)
    if not_in_run is not None:
        report.skipped[NOT_IN_RUN] = not_in_run
    report.notes["mean_at_K"] = means_at_k(ranked)
    return candidates, ranked, report
