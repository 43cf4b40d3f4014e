"""Corpus search throughput: ``ranking.corpus_search.exact_top_k`` against plain numpy exact search,
and against the vector-search libraries faiss-cpu and usearch when they are installed.

All search the same float32 vectors (dimension 384, the shipped embedders' size) for the same
queries and K, in the same run, at two corpus sizes: the shipped corpus's (4,858 distinct
HotpotQA IRCoT paragraphs; random vectors of that count, since embedding the corpus is not
what is measured) and a synthetic 200,000. The numpy baseline normalises both sides, computes
the whole (Q, D) score matrix, takes ``argpartition`` and sorts the K best. Equal top-K is
checked for every exact search against ``exact_top_k``: the same document at every rank, except
where the two score orders swap documents whose cosines differ by less than 1e-6 (rounding of
differently computed products).

The libraries index the L2-normalised vectors and search by inner product (= cosine):

- ``faiss_flat``: faiss ``IndexFlatIP``, exact;
- ``usearch_exact``: ``usearch.index.search(..., exact=True)`` over the normalised vectors, exact;
- ``faiss_hnsw`` and ``usearch_hnsw``: HNSW graphs, approximate, with the same parameters
  (``HNSW``); recall@K = the share of ``exact_top_k``'s top K they return. Random vectors have no
  cluster structure, the hardest case for a graph index: recall on real embeddings is higher.

A library that is not installed is reported as skipped. Per library: build seconds (normalising
and indexing the corpus, once), index size (its serialised form: the copy of the normalised
vectors it keeps, and the graph; ``exact_top_k`` and numpy keep none), queries/s, peak memory,
``speed_ratio`` (its queries/s / exact_top_k's) and equal top-K or recall@K. Every search runs
on the machine's cores as the library or BLAS chooses by default.

Peak memory of a search is the larger of the peak of Python and numpy allocations (tracemalloc)
and the growth of the process's peak resident memory (VmHWM, reset before the search), which
counts the libraries' own allocations.

Usage: python benchmarks/retrieval.py [--queries 256] [--k 10] [--repeats 5] [--synthetic 200000]
(best of the repeats, interleaved; ``--smoke``: 8 queries, one repeat, a synthetic corpus of 5,000:
checks that it runs). Last line:
``search_ratio=<x>`` (queries/s of exact_top_k / queries/s of numpy at the synthetic size).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import re
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from retrieval_response.embedding.backends import l2_normalise  # noqa: E402
from retrieval_response.ranking.corpus_search import exact_top_k  # noqa: E402
from retrieval_response.reports.benchmark_record import write_benchmark_json  # noqa: E402

SHIPPED_CORPUS = 4858
SYNTHETIC_CORPUS = 200_000
DIMENSION = 384
HNSW = {"neighbours": 16, "build_breadth": 128, "search_breadth": 64}
"""HNSW parameters of both libraries: neighbours per node and layer (faiss ``M``, usearch
``connectivity``; twice as many on the bottom layer in both), candidate list while building
(``efConstruction``, ``expansion_add``) and while searching (``efSearch``, ``expansion_search``)."""
MIB = 2**20


def numpy_top_k(queries: np.ndarray, documents: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Plain exact search: the full score matrix, argpartition, then the K best sorted."""
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    d = documents / np.linalg.norm(documents, axis=1, keepdims=True)
    scores = q @ d.T
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    part_scores = np.take_along_axis(scores, part, 1)
    order = np.argsort(-part_scores, axis=1, kind="stable")
    return np.take_along_axis(part, order, 1), np.take_along_axis(part_scores, order, 1)


def faiss_flat(documents: np.ndarray):
    """faiss exact inner-product index over the normalised ``documents``."""
    import faiss

    index = faiss.IndexFlatIP(documents.shape[1])
    index.add(l2_normalise(documents))
    return index


def faiss_hnsw(documents: np.ndarray):
    """faiss HNSW inner-product index over the normalised ``documents`` (parameters ``HNSW``)."""
    import faiss

    index = faiss.IndexHNSWFlat(documents.shape[1], HNSW["neighbours"], faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = HNSW["build_breadth"]
    index.hnsw.efSearch = HNSW["search_breadth"]
    index.add(l2_normalise(documents))
    return index


def faiss_search(index, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(document indexes, cosines) of the K best of ``index`` for each normalised query."""
    scores, indexes = index.search(l2_normalise(queries), k)
    return indexes.astype(np.int64), scores


def usearch_exact_search(vectors: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(document indexes, cosines) of usearch's exact search over the normalised ``vectors``."""
    from usearch.index import search

    matches = search(vectors, l2_normalise(queries), k, "ip", exact=True)
    return matches.keys.astype(np.int64), 1 - matches.distances


def usearch_hnsw(documents: np.ndarray):
    """usearch HNSW inner-product index over the normalised ``documents`` (parameters ``HNSW``),
    keys the document indexes."""
    from usearch.index import Index

    index = Index(ndim=documents.shape[1], metric="ip", dtype="f32", connectivity=HNSW["neighbours"],
                  expansion_add=HNSW["build_breadth"], expansion_search=HNSW["search_breadth"])
    index.add(np.arange(len(documents)), l2_normalise(documents))
    return index


def usearch_search(index, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(document indexes, cosines) of the K best of the usearch ``index`` for each normalised query."""
    matches = index.search(l2_normalise(queries), k)
    return matches.keys.astype(np.int64), 1 - matches.distances


def faiss_bytes(index) -> int:
    """Size of a faiss index: its serialised form (the vectors it keeps, and the graph)."""
    import faiss

    return int(faiss.serialize_index(index).nbytes)


@dataclass(frozen=True)
class Library:
    """A search through a vector-search library: ``build(documents)`` makes an index,
    ``search(index, queries, k)`` returns (document indexes, cosines); ``size(index)`` in bytes."""

    module: str
    distribution: str
    exact: bool
    build: Callable
    search: Callable
    size: Callable


LIBRARIES = {
    "faiss_flat": Library("faiss", "faiss-cpu", True, faiss_flat, faiss_search, faiss_bytes),
    "usearch_exact": Library("usearch", "usearch", True, l2_normalise, usearch_exact_search, lambda v: v.nbytes),
    "faiss_hnsw": Library("faiss", "faiss-cpu", False, faiss_hnsw, faiss_search, faiss_bytes),
    "usearch_hnsw": Library("usearch", "usearch", False, usearch_hnsw, usearch_search,
                            lambda index: index.serialized_length),
}


def resident_kib(field: str) -> int:
    """``VmRSS`` (resident now) or ``VmHWM`` (peak resident) of this process, KiB."""
    status = Path("/proc/self/status").read_text(encoding="ascii")
    return int(re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE).group(1))


def measured(call) -> tuple[float, int, object]:
    """(seconds, peak bytes, result) of ``call()``; peak: the larger of the traced Python and numpy
    allocations' peak and the growth of the peak resident memory over the resident memory before."""
    Path("/proc/self/clear_refs").write_text("5", encoding="ascii")
    before = resident_kib("VmRSS")
    tracemalloc.start()
    start = time.perf_counter()
    result = call()
    seconds = time.perf_counter() - start
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return seconds, max(traced, (resident_kib("VmHWM") - before) * 1024), result


def built(library: Library, documents: np.ndarray) -> tuple[float, int, object]:
    """(build seconds, index bytes, index) of ``library`` over ``documents``."""
    start = time.perf_counter()
    index = library.build(documents)
    seconds = time.perf_counter() - start
    return seconds, library.size(index), index


def timed(searches: dict, repeats: int) -> dict[str, tuple[float, int, tuple]]:
    """{name: (best seconds over ``repeats``, largest peak bytes, result)} of each ``searches[name]()``,
    the searches interleaved (one round runs each once) so that a change of the machine's load
    hits all alike."""
    best = {name: (float("inf"), 0, None) for name in searches}
    for _ in range(repeats):
        for name, search in searches.items():
            seconds, peak, result = measured(search)
            best[name] = (min(best[name][0], seconds), max(best[name][1], peak), result)
    return best


def same_top_k(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> bool:
    """Equal documents at every rank, allowing swaps only between cosines closer than 1e-6."""
    (index_a, score_a), (index_b, score_b) = a, b
    if not np.allclose(score_a, score_b, atol=1e-6, rtol=0):
        return False
    differ = index_a != index_b
    return bool(np.all(~differ | (np.abs(score_a - score_b) < 1e-6)))


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    """Mean share of each row of ``exact`` that the same row of ``found`` holds."""
    return float(np.mean([len(set(f) & set(e)) / len(e) for f, e in zip(found, exact, strict=True)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=256)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--synthetic", type=int, default=SYNTHETIC_CORPUS, help="the synthetic corpus's size")
    parser.add_argument("--json", metavar="PATH", help="also write the results, with their provenance, to this JSON file")
    parser.add_argument("--smoke", action="store_true", help="a few queries, one repeat, a small corpus: checks that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.queries, args.repeats, args.synthetic = 8, 1, 5000
    available = {name: importlib.util.find_spec(library.module) is not None for name, library in LIBRARIES.items()}
    for name, library in LIBRARIES.items():
        if available[name]:
            importlib.import_module(library.module)
    versions = {library.distribution: version(library.distribution)
                for name, library in LIBRARIES.items() if available[name]}
    rng = np.random.default_rng(0)
    queries = rng.standard_normal((args.queries, DIMENSION), dtype=np.float32)
    ratio, corpora = None, {}
    for name, size in (("shipped", SHIPPED_CORPUS), ("synthetic", args.synthetic)):
        documents = rng.standard_normal((size, DIMENSION), dtype=np.float32)
        indexes = {name: built(library, documents) for name, library in LIBRARIES.items() if available[name]}
        searches = {"ours": lambda d=documents: exact_top_k(queries, d, args.k),
                    "numpy": lambda d=documents: numpy_top_k(queries, d, args.k),
                    **{library: lambda i=index, s=LIBRARIES[library].search: s(i, queries, args.k)
                       for library, (_, _, index) in indexes.items()}}
        results = timed(searches, args.repeats)
        (ours_s, ours_peak, ours), (base_s, base_peak, base) = results["ours"], results["numpy"]
        equal = same_top_k(ours, base)
        ratio = (args.queries / ours_s) / (args.queries / base_s)
        print(f"corpus={size} queries={args.queries} k={args.k} dimension={DIMENSION}: "
              f"exact_top_k {args.queries / ours_s:.0f} q/s peak {ours_peak / MIB:.1f} MiB; "
              f"numpy {args.queries / base_s:.0f} q/s peak {base_peak / MIB:.1f} MiB; "
              f"equal_top_k={equal} ratio={ratio:.3f}")
        if not equal:
            raise SystemExit("the two searches disagree")
        libraries = {}
        for library_name, library in LIBRARIES.items():
            if not available[library_name]:
                print(f"  {library_name}: skipped ({library.distribution} is not installed)")
                libraries[library_name] = {"skipped": f"{library.distribution} is not installed"}
                continue
            build_s, index_bytes, _ = indexes[library_name]
            seconds, peak, result = results[library_name]
            quality = ({"equal_top_k": same_top_k(result, ours)} if library.exact
                       else {"recall_at_k": recall(result[0], ours[0])})
            libraries[library_name] = {"exact": library.exact, "build_seconds": build_s, "index_mib": index_bytes / MIB,
                                       "queries_per_second": args.queries / seconds, "peak_mib": peak / MIB,
                                       "speed_ratio": ours_s / seconds, **quality}
            print(f"  {library_name} ({library.distribution} {versions[library.distribution]}): build {build_s:.2f} s, "
                  f"index {index_bytes / MIB:.1f} MiB, {args.queries / seconds:.0f} q/s peak {peak / MIB:.1f} MiB "
                  f"({ours_s / seconds:.2f} x exact_top_k), "
                  + " ".join(f"{key}={value:.3f}" if isinstance(value, float) else f"{key}={value}"
                             for key, value in quality.items()))
        corpora[name] = {"corpus": size, "search_ratio": ratio, "peak_mib": ours_peak / MIB,
                         "numpy_peak_mib": base_peak / MIB, "equal_top_k": equal,
                         "queries_per_second": args.queries / ours_s, "numpy_queries_per_second": args.queries / base_s,
                         "libraries": libraries}
        del indexes, searches, results
    print(f"search_ratio={ratio:.3f}")
    if args.json:
        write_benchmark_json(args.json, {"search_ratio": ratio, "queries": args.queries, "k": args.k,
                                         "dimension": DIMENSION, "hnsw": HNSW, "versions": versions,
                                         "corpora": corpora})


if __name__ == "__main__":
    main()
