"""Corpus-level retrieval: each query's top documents of the whole corpus, written as candidates in
the layout every later stage reads (docs/CORPUS.md#pools-or-a-corpus).

A ranker retrieves, per query, the first ``depth`` = min(2 max(K), D) documents of the corpus
(D documents): by cosine (:func:`dense_retrieval`), by BM25 (:func:`bm25_retrieval`) or in the
order of a run file (:func:`run_retrieval`), as ``kinds.retrieve_from_corpus`` picks by the
ranker's kind. :func:`corpus_candidates` then writes, per query,

- the candidate texts table (the texts layout): ``p`` = the query's judged positives (grade > 0,
  highest first), so Np = the number of judged positives; ``n`` = the retrieved documents that
  are not judged positives, in retrieval order, with ``n_doc`` their ids and ``n_judged``
  whether the qrels judge them (grade <= 0) or not (unjudged); Nc = Np + len(n);
- the ranked table: ``rank`` = the retrieved documents in retrieval order (positive i -> index
  i, the j-th other document -> Np + j), and nothing else: a positive not retrieved has no
  position, so P@K, R@K and the positives at 2K (F_e) count retrieved documents only. A short
  retrieval (fewer than K documents, as a run may give) keeps every K: its top K is what was
  retrieved, P@K still divides by K (trec_eval), and ``len(rank)`` may be below Nc and below K.
  ``P``, ``R`` and ``judged`` at each K are the ranked-list evaluator's ``P@K``, ``R@K`` and
  ``judged@K`` (:mod:`retrieval_response.measures.ranked`): an unjudged document counts as not
  relevant, and ``judged`` = judged documents among the top K / documents in the top K.

A query without a judged positive never reaches this stage (preparation leaves it out); a query
whose retrieved documents are all judged positives is a sample like any other, with no candidate
beyond them (``n`` empty, Nc = Np): P = 1 at every K it fills, R = n_p/Np, RR@K = 1, and every
measure is defined (each needs Np >= 1 only); a query a run does not rank is skipped as
``not_in_run``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from retrieval_response.measures.ranked import evaluate_run, run_order
from retrieval_response.ranking.corpus_search import exact_top_k, top_k_of_scores
from retrieval_response.ranking.cosine_ranking import RANKED_SCHEMA, RankingReport
from retrieval_response.ranking.lexical import BM25Index

NOT_IN_RUN = "not_in_run"
CORPUS_RANKED_SCHEMA = {**RANKED_SCHEMA, "judged": pl.List(pl.Float64)}
"""The ranked layout of a corpus-level ranker: the pool layout plus ``judged`` per K."""
CORPUS_SCHEMA = {"doc_id": pl.String, "text": pl.String}
"""The corpus table: one row per document, in the corpus file's order."""
QUERY_BLOCK = 64
"""Queries scored against the whole corpus at once by BM25 (64 x D float32 scores)."""


def retrieval_depth(Ks: list[int], corpus_size: int) -> int:
    """min(2 max(K), D): deep enough for the positives at 2K of every K (F_e); ValueError when the
    corpus holds fewer than max(K) documents or the K list is empty."""
    if not Ks:
        raise ValueError("the K list is empty")
    if corpus_size < max(Ks):
        raise ValueError(f"the corpus holds {corpus_size} documents, fewer than K = {max(Ks)}")
    return min(2 * max(Ks), corpus_size)


def dense_retrieval(query_vectors: np.ndarray, corpus_vectors: np.ndarray, depth: int) -> np.ndarray:
    """int64 (Q, depth): corpus indexes by descending cosine (``corpus_search.exact_top_k``)."""
    return exact_top_k(query_vectors, corpus_vectors, depth)[0]


def bm25_retrieval(queries: list[str], corpus_texts: list[str], settings: Mapping, depth: int,
                   source: str = "the corpus") -> np.ndarray:
    """int64 (Q, depth): corpus indexes by descending BM25 score over the corpus (``settings``:
    k1, b, method), ties by ascending index (:func:`bm25_top_k` of a fresh index). InputError
    naming ``source`` for a corpus without an indexed word (``lexical.BM25Index``)."""
    return bm25_top_k(BM25Index(corpus_texts, settings, source), queries, depth)


def bm25_top_k(index: BM25Index, queries: list[str], depth: int) -> np.ndarray:
    """int64 (Q, depth): the documents of ``index`` by descending BM25 score for each query, ties by
    ascending index; scored ``QUERY_BLOCK`` queries at a time."""
    out = np.zeros((len(queries), depth), dtype=np.int64)
    for start in range(0, len(queries), QUERY_BLOCK):
        block = queries[start : start + QUERY_BLOCK]
        out[start : start + len(block)] = top_k_of_scores(index.scores(block), depth)
    return out


def run_retrieval(run: pl.DataFrame, depth: int) -> pl.DataFrame:
    """``qid, docids``: each query's first ``depth`` documents of a run (``run_file.read_run``), by
    descending score, ties by the run's rank column (lower first), then by line
    (``measures.ranked.run_order``)."""
    return run_order(run).group_by("qid", maintain_order=True).agg(docids=pl.col("docid").head(depth))


def retrieved_from_indexes(texts: pl.DataFrame, corpus: pl.DataFrame, indexes: np.ndarray) -> pl.DataFrame:
    """``id, docids``: the corpus document ids at ``indexes`` (row q for query q of ``texts``)."""
    doc_ids = corpus["doc_id"].to_numpy()[indexes]
    return pl.DataFrame({"id": texts["id"], "docids": pl.Series(doc_ids.tolist(), dtype=pl.List(pl.String))})


def retrieved_from_run(texts: pl.DataFrame, run: pl.DataFrame, depth: int) -> tuple[pl.DataFrame, int]:
    """``id, docids`` of the queries of ``texts`` that the run ranks (matched by ``source_id``), and
    the number of queries it does not rank."""
    ranked = run_retrieval(run, depth)
    retrieved = texts.select("id", "source_id").join(ranked, left_on="source_id", right_on="qid", how="inner")
    return retrieved.select("id", "docids"), texts.height - retrieved.height


def corpus_candidates(
    texts: pl.DataFrame, retrieved: pl.DataFrame, corpus: pl.DataFrame, *, ranker_code: str, Ks: list[int]
) -> tuple[pl.DataFrame, pl.DataFrame, RankingReport]:
    """(candidate texts table, ranked table, report) of the retrievals ``retrieved`` (``id, docids``:
    distinct document ids, best first, any number >= 1 each) of the queries of ``texts`` (a judged
    layout's texts table: ``p``, ``p_doc``, ``n_doc``...) over ``corpus`` (``CORPUS_SCHEMA``).
    Module docstring for the layout."""
    Ks = sorted(set(int(k) for k in Ks))
    judged_docs = texts.select("id", doc=pl.concat_list("p_doc", "n_doc")).explode("doc").drop_nulls()
    positive_index = (texts.select("id", doc=pl.col("p_doc")).explode("doc").drop_nulls()
                      .with_columns(index=pl.int_range(pl.len()).over("id").cast(pl.Int32)))
    n_positives = texts.select("id", Np=pl.col("p_doc").list.len().cast(pl.Int32))
    hits = (
        retrieved.join(texts.select("id"), on="id", how="semi").explode("docids").rename({"docids": "doc"})
        .with_columns(position=pl.int_range(1, pl.len() + 1).over("id"))
        .join(positive_index, on=["id", "doc"], how="left", maintain_order="left")
        .join(judged_docs.with_columns(judged=pl.lit(True)), on=["id", "doc"], how="left", maintain_order="left")
        .join(n_positives, on="id", how="left", maintain_order="left")
        .with_columns(judged=pl.col("judged").fill_null(False),
                      other=pl.col("index").is_null().cast(pl.Int32).cum_sum().over("id") - 1)
        .with_columns(index=pl.coalesce("index", pl.col("Np") + pl.col("other")))
    )
    others = (hits.filter(pl.col("index") >= pl.col("Np"))
              .join(corpus.rename({"doc_id": "doc"}), on="doc", how="left", maintain_order="left")
              .group_by("id", maintain_order=True)
              .agg(n=pl.col("text"), n_doc=pl.col("doc"), n_judged=pl.col("judged")))
    per_query = hits.group_by("id", maintain_order=True).agg(rank=pl.col("index"))
    serving = (texts.drop("n", "n_doc").join(per_query.select("id"), on="id", how="semi")
               .join(others, on="id", how="left", maintain_order="left")
               .with_columns(pl.col(c).fill_null(pl.lit([], pl.List(dtype)))
                             for c, dtype in (("n", pl.String), ("n_doc", pl.String), ("n_judged", pl.Boolean))))
    candidates = serving.select(*texts.columns, "n_judged").cast({**texts.schema, "n_judged": pl.List(pl.Boolean)})
    measures = _measures_at_k(texts.join(candidates.select("id"), on="id", how="semi"), retrieved, Ks)
    ranked = _ranked_table(candidates.join(per_query, on="id", how="left", maintain_order="left")
                           .join(measures, on="id", how="left", maintain_order="left"), ranker_code, Ks)
    report = RankingReport(queries=texts.height, ranked=candidates.height, skipped={})
    return candidates, ranked, report


def _measures_at_k(texts: pl.DataFrame, retrieved: pl.DataFrame, Ks: list[int]) -> pl.DataFrame:
    """``id, P, R, judged`` (lists over ``Ks``): the evaluator's P@K, R@K and judged@K of the
    retrievals ``retrieved`` (``id, docids``) of the queries of ``texts`` against their judgments
    (``p_doc`` relevant, ``n_doc`` judged not relevant; the grades above 1 change none of the three)."""
    run = (retrieved.join(texts.select("id"), on="id", how="semi").explode("docids")
           .select(qid="id", docid="docids", rank=pl.int_range(1, pl.len() + 1).over("id")))
    qrels = pl.concat([
        texts.select(qid="id", docid="p_doc", grade=pl.lit(1, pl.Int64)).explode("docid"),
        texts.select(qid="id", docid="n_doc", grade=pl.lit(0, pl.Int64)).explode("docid"),
    ]).drop_nulls("docid").sort("qid", maintain_order=True)
    per_query = evaluate_run(run, qrels, Ks).per_query
    return per_query.group_by("qid", maintain_order=True).agg(
        P=pl.col("P@K"), R=pl.col("R@K"), judged=pl.col("judged@K")).rename({"qid": "id"})


def _ranked_table(frame: pl.DataFrame, ranker_code: str, Ks: list[int]) -> pl.DataFrame:
    """The ranked layout (``CORPUS_RANKED_SCHEMA``) of ``frame`` (id, subset, p, n, rank, and P, R,
    judged over ``Ks`` from :func:`_measures_at_k`): Np = len(p), Nc = Np + len(n)."""
    return (
        frame.with_columns(Np=pl.col("p").list.len().cast(pl.Int32))
        .with_columns(Nc=pl.col("Np") + pl.col("n").list.len().cast(pl.Int32),
                      K=pl.lit(Ks, dtype=pl.List(pl.Int32)), E=pl.lit(ranker_code, dtype=pl.String))
        .select(list(CORPUS_RANKED_SCHEMA))
        .cast(CORPUS_RANKED_SCHEMA)
    )


def means_at_k(ranked: pl.DataFrame) -> dict[str, dict[str, float]]:
    """{K: {"P", "R", "judged"}}: the means over the ranked samples at each K (the retrieval's
    report: how much a ranker finds, and how much of what it finds is judged)."""
    rows = (ranked.select("K", "P", "R", "judged").explode("K", "P", "R", "judged")
            .group_by("K").agg(pl.col("P", "R", "judged").mean()).sort("K"))
    return {str(row["K"]): {name: row[name] for name in ("P", "R", "judged")} for row in rows.iter_rows(named=True)}
