"""Whole-corpus BM25 retrieval: the project's ``bm25s`` path against ``rank_bm25`` (BM25Okapi).

Both rank the shipped BEIR corpus (``resources/data/hotpotqa_beir``: its paragraphs, title and
text joined, and its questions) from the same tokens, ``bm25s.tokenize``'s (lower-cased, English
stop words removed), with k1 = 1.5 and b = 0.75; the project's ranker keeps its default method
(``lucene``), BM25Okapi its own idf (Robertson's, negative values floored at 0.25 x the mean idf),
so the two orders may differ. Measured, on one core (this process is pinned to one CPU and its
BLAS/OpenMP pools to one thread), best of the repeats, the two interleaved:

- index seconds: tokenising the corpus and building the index (``lexical.BM25Index`` against
  ``BM25Okapi``);
- queries/s: tokenising every question and scoring it against the whole corpus, keeping its
  top ``--depth`` (``corpus_retrieval.bm25_top_k``, as the workflow retrieves, against
  ``BM25Okapi.get_scores`` with the same top-K selection: ties by ascending index);
- agreement: the share of questions whose first document is the same, and the mean share of
  documents the two top-10 lists have in common;
- recall@10 of each against the corpus's qrels (``R@K`` of ``measures.evaluate_run``), so that a
  disagreement can be read as better or worse.

``rank_bm25`` is this benchmark's baseline only (requirements.txt pins it; the project does not
import it).

Usage: python benchmarks/bm25.py [--depth 20] [--queries N] [--repeats 3] [--json PATH] [--smoke]
(``--smoke``: 10 questions, one repeat: checks that it runs). Last line:
``bm25_ratio=<x>`` (queries/s of bm25s / queries/s of rank_bm25).
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from importlib.metadata import version  # noqa: E402
from pathlib import Path  # noqa: E402

import bm25s  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from retrieval_response.datasets.judged_corpus import beir_judgements, judged_texts  # noqa: E402
from retrieval_response.datasets.layouts import corpus_table  # noqa: E402
from retrieval_response.measures import evaluate_run  # noqa: E402
from retrieval_response.ranking.corpus_retrieval import QUERY_BLOCK, bm25_top_k  # noqa: E402
from retrieval_response.ranking.corpus_search import top_k_of_scores  # noqa: E402
from retrieval_response.ranking.lexical import DEFAULTS, BM25Index  # noqa: E402
from retrieval_response.reports.benchmark_record import write_benchmark_json  # noqa: E402

QRELS = ROOT / "resources/data/hotpotqa_beir/qrels/test.tsv"
TOP = 10
"""The cutoff of the top-K agreement and of recall."""


def tokens(texts: list[str]) -> list[list[str]]:
    """The token strings ``lexical.BM25Index`` indexes and queries with."""
    return bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)


def okapi_index(documents: list[str]):
    """rank_bm25's BM25Okapi over the tokens of ``documents`` (k1 1.5, b 0.75)."""
    from rank_bm25 import BM25Okapi

    return BM25Okapi(tokens(documents), k1=DEFAULTS["k1"], b=DEFAULTS["b"])


def okapi_top_k(index, queries: list[str], depth: int) -> np.ndarray:
    """int64 (Q, depth): the documents by descending BM25Okapi score for each query, ties by
    ascending index, scored ``QUERY_BLOCK`` queries at a time as ``bm25_top_k``."""
    query_tokens = tokens(queries)
    out = np.zeros((len(queries), depth), dtype=np.int64)
    for start in range(0, len(queries), QUERY_BLOCK):
        block = query_tokens[start : start + QUERY_BLOCK]
        out[start : start + len(block)] = top_k_of_scores(np.vstack([index.get_scores(q) for q in block]), depth)
    return out


def best_of(calls: dict, repeats: int) -> dict[str, tuple[float, object]]:
    """{name: (best seconds over ``repeats``, last result)} of each ``calls[name]()``, interleaved
    (one round runs each once) so that a change of the machine's load hits both alike."""
    best = {name: (float("inf"), None) for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            result = call()
            best[name] = (min(best[name][0], time.perf_counter() - start), result)
    return best


def recall(top: np.ndarray, doc_ids: np.ndarray, query_ids: list[str], qrels: pl.DataFrame) -> float:
    """Mean recall@TOP of the rankings ``top`` (corpus indexes, a row per query of ``query_ids``)
    against their judgments in ``qrels``."""
    depth = top[:, :TOP].shape[1]
    run = pl.DataFrame({"qid": np.repeat(query_ids, depth), "docid": doc_ids[top[:, :TOP]].ravel(),
                        "rank": np.tile(np.arange(1, depth + 1), len(query_ids))})
    aggregate = evaluate_run(run, qrels.filter(pl.col("qid").is_in(query_ids)), TOP).aggregate
    return float(aggregate.filter(pl.col("measure") == "R@K")["mean"].item())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=20, help="documents retrieved per question")
    parser.add_argument("--queries", type=int, help="the first N questions only (default: all)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", metavar="PATH", help="also write the results, with their provenance, to this JSON file")
    parser.add_argument("--smoke", action="store_true", help="10 questions, one repeat: checks that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.queries, args.repeats = 10, 1
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    corpus = corpus_table("beir", QRELS)
    questions = dict(list(judged_texts("beir", QRELS, "queries").items())[: args.queries])
    documents, queries = corpus["text"].to_list(), list(questions.values())
    qrels = pl.DataFrame([j[:3] for j in beir_judgements(QRELS)], schema=["qid", "docid", "grade"], orient="row")

    built = best_of({"bm25s": lambda: BM25Index(documents, DEFAULTS), "rank_bm25": lambda: okapi_index(documents)},
                    args.repeats)
    (ours_index_s, ours_index), (base_index_s, base_index) = built["bm25s"], built["rank_bm25"]
    searched = best_of({"bm25s": lambda: bm25_top_k(ours_index, queries, args.depth),
                        "rank_bm25": lambda: okapi_top_k(base_index, queries, args.depth)}, args.repeats)
    (ours_s, ours), (base_s, base) = searched["bm25s"], searched["rank_bm25"]

    top1 = float(np.mean(ours[:, 0] == base[:, 0]))
    overlap = float(np.mean([len(set(a[:TOP]) & set(b[:TOP])) / TOP for a, b in zip(ours, base, strict=True)]))
    doc_ids = corpus["doc_id"].to_numpy()
    ours_recall, base_recall = (recall(top, doc_ids, list(questions), qrels) for top in (ours, base))
    ratio = base_s / ours_s
    print(f"corpus={len(documents)} queries={len(queries)} depth={args.depth} one core: "
          f"bm25s {version('bm25s')} index {ours_index_s:.3f} s, {len(queries) / ours_s:.0f} q/s, recall@{TOP} "
          f"{ours_recall:.3f}; rank_bm25 {version('rank_bm25')} index {base_index_s:.3f} s, "
          f"{len(queries) / base_s:.1f} q/s, recall@{TOP} {base_recall:.3f}; "
          f"top1_agreement={top1:.3f} top{TOP}_overlap={overlap:.3f}")
    print(f"bm25_ratio={ratio:.3f}")
    if args.json:
        write_benchmark_json(args.json, {
            "bm25_ratio": ratio, "corpus": len(documents), "queries": len(queries), "depth": args.depth,
            "cutoff": TOP, "top1_agreement": top1, "top10_overlap": overlap,
            "bm25s": {"version": version("bm25s"), "method": DEFAULTS["method"], "index_seconds": ours_index_s,
                      "queries_per_second": len(queries) / ours_s, "recall_at_10": ours_recall},
            "rank_bm25": {"version": version("rank_bm25"), "index_seconds": base_index_s,
                          "queries_per_second": len(queries) / base_s, "recall_at_10": base_recall}})


if __name__ == "__main__":
    main()
