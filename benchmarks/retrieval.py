"""Corpus search throughput: ``ranking.corpus_search.exact_top_k`` against plain numpy exact search.

Both search the same float32 vectors (dimension 384, the shipped embedders' size) for the same
queries and K, in the same run, at two corpus sizes: the shipped corpus's (4,858 distinct
HotpotQA IRCoT paragraphs; random vectors of that count, since embedding the corpus is not
what is measured) and a synthetic 200,000. The numpy baseline normalises both sides, computes
the whole (Q, D) score matrix, takes ``argpartition`` and sorts the K best. Equal top-K is
checked: the same document at every rank, except where the two score orders swap documents
whose cosines differ by less than 1e-6 (BLAS rounding of differently shaped products).

Peak memory is the peak of Python and numpy allocations during each search (tracemalloc).

Usage: python benchmarks/retrieval.py [--queries 256] [--k 10] [--repeats 5] (best of the repeats,
interleaved). Last line:
``search_ratio=<x>`` (queries/s of exact_top_k / queries/s of numpy at 200,000 vectors).
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from retrieval_response.ranking.corpus_search import exact_top_k  # noqa: E402
from retrieval_response.reports.benchmark_record import write_benchmark_json  # noqa: E402

SHIPPED_CORPUS = 4858
SYNTHETIC_CORPUS = 200_000
DIMENSION = 384


def numpy_top_k(queries: np.ndarray, documents: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Plain exact search: the full score matrix, argpartition, then the K best sorted."""
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    d = documents / np.linalg.norm(documents, axis=1, keepdims=True)
    scores = q @ d.T
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    part_scores = np.take_along_axis(scores, part, 1)
    order = np.argsort(-part_scores, axis=1, kind="stable")
    return np.take_along_axis(part, order, 1), np.take_along_axis(part_scores, order, 1)


def timed(searches: dict, repeats: int) -> dict[str, tuple[float, int, tuple]]:
    """{name: (best seconds over ``repeats``, peak traced bytes, result)} of each ``searches[name]()``,
    the searches interleaved (one round runs each once) so that a change of the machine's load
    hits both alike."""
    best = {name: (float("inf"), 0, None) for name in searches}
    for _ in range(repeats):
        for name, search in searches.items():
            tracemalloc.start()
            start = time.perf_counter()
            result = search()
            seconds = time.perf_counter() - start
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            best[name] = (min(best[name][0], seconds), max(best[name][1], peak), result)
    return best


def same_top_k(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> bool:
    """Equal documents at every rank, allowing swaps only between cosines closer than 1e-6."""
    (index_a, score_a), (index_b, score_b) = a, b
    if not np.allclose(score_a, score_b, atol=1e-6, rtol=0):
        return False
    differ = index_a != index_b
    return bool(np.all(~differ | (np.abs(score_a - score_b) < 1e-6)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=256)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", metavar="PATH", help="also write the results, with their provenance, to this JSON file")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    queries = rng.standard_normal((args.queries, DIMENSION), dtype=np.float32)
    ratio, corpora = None, {}
    for name, size in (("shipped", SHIPPED_CORPUS), ("synthetic", SYNTHETIC_CORPUS)):
        documents = rng.standard_normal((size, DIMENSION), dtype=np.float32)
        results = timed({"ours": lambda d=documents: exact_top_k(queries, d, args.k),
                         "numpy": lambda d=documents: numpy_top_k(queries, d, args.k)}, args.repeats)
        (ours_s, ours_peak, ours), (base_s, base_peak, base) = results["ours"], results["numpy"]
        equal = same_top_k(ours, base)
        ratio = (args.queries / ours_s) / (args.queries / base_s)
        print(f"corpus={size} queries={args.queries} k={args.k} dimension={DIMENSION}: "
              f"exact_top_k {args.queries / ours_s:.0f} q/s peak {ours_peak / 2**20:.1f} MiB; "
              f"numpy {args.queries / base_s:.0f} q/s peak {base_peak / 2**20:.1f} MiB; "
              f"equal_top_k={equal} ratio={ratio:.3f}")
        if not equal:
            raise SystemExit("the two searches disagree")
        corpora[name] = {"corpus": size, "search_ratio": ratio, "peak_mib": ours_peak / 2**20,
                         "numpy_peak_mib": base_peak / 2**20, "equal_top_k": equal}
    print(f"search_ratio={ratio:.3f}")
    if args.json:
        write_benchmark_json(args.json, {"search_ratio": ratio, "queries": args.queries, "k": args.k,
                                         "dimension": DIMENSION, "corpora": corpora})


if __name__ == "__main__":
    main()
