"""Family-wise error of the verdict under random grades: how often a measure is called ``worse``
when no measure predicts the grade, at the smallest query counts the verdict accepts and above.

Each run builds a graded table with :func:`~retrieval_response.testing.synthetic.graded_by_driver`
(driver ``random``: grades drawn uniformly from 1..5, independent of the ranking) for the study's
designs of one dataset's three (Nc 10, Np 2, 3, 4), one subset, one ranker and one target, and
takes its verdict (:func:`~retrieval_response.decide.verdict.verdict_table`) with the run's seed
for the grades, the cross-fitting halves and the bootstrap. Every measure has correlation 0 with
the grade, so any ``worse`` is a false one. A family (target x subset x E x segment: narrow,
wide, all) is controlled at family-wise error 5%; a run holds three families, which overlap
(``all`` holds the samples of the other two).

Printed per query count (``--queries``, by default 10 and 20, the fewest the verdict decides
with, and 80): per segment, the share of families with any ``worse`` and its Clopper-Pearson 95%
interval (the criterion: each share at most 0.05, the level the verdict claims per family); the
share of runs with any ``worse`` (three overlapping families: no claim is made for it).
``--smoke`` runs two seeds at 10 queries with 100 resamples and an 11-value grid, in seconds.

Usage: python benchmarks/verdict_calibration.py [--seeds 200] [--queries 10 20 80] [--resamples 300]
       [--json docs/benchmarks/verdict_calibration.json] [--smoke]
Last line: ``largest_family_share=<s> at=<queries>/<segment> ci=<low>..<high>``.
"""

from __future__ import annotations

import os

for _variable in ("POLARS_MAX_THREADS", "NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # one core: the benchmark shares the machine

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import polars as pl  # noqa: E402
from scipy.stats import binomtest  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from retrieval_response.decide.verdict import verdict_table  # noqa: E402
from retrieval_response.reports.benchmark_record import write_benchmark_json  # noqa: E402
from retrieval_response.testing.synthetic import graded_by_driver  # noqa: E402

STUDY_DESIGNS = ((10, 2, (1, 2, 3, 6)), (10, 3, (1, 2, 3, 6)), (10, 4, (1, 2, 3, 4, 8)))
"""The designs of config/study.yaml's first dataset: narrow and wide samples for every query."""
LEVEL = 0.95


def clopper_pearson(successes: int, trials: int, level: float = LEVEL) -> tuple[float, float]:
    """Exact binomial interval of successes / trials (scipy's Clopper-Pearson)."""
    interval = binomtest(successes, trials).proportion_ci(confidence_level=level, method="exact")
    return float(interval.low), float(interval.high)


def run_families(seed: int, queries: int, args: argparse.Namespace) -> pl.DataFrame:
    """One run's families: segment, measures compared, how many are ``worse``, the smallest p_worse."""
    graded = graded_by_driver(queries, "random", seed, designs=STUDY_DESIGNS)
    verdict = verdict_table(graded, alpha_grid=args.alpha_grid, min_segment_samples=args.min_segment_samples,
                            bootstrap_resamples=args.resamples, seed=seed, targets=["grade"], level=LEVEL)
    return (verdict.group_by("target", "subset", "E", "segment", maintain_order=True)
            .agg(compared=(pl.col("decision") != "undecided").sum(),
                 worse=(pl.col("decision") == "worse").sum(),
                 min_p_worse=pl.col("p_worse").min())
            .with_columns(seed=pl.lit(seed), queries=pl.lit(queries)))


def size_results(families: pl.DataFrame, seeds: int) -> dict:
    """Per segment of one query count: families, those with a ``worse``, the share and its interval."""
    per_segment = {}
    for segment in ("narrow", "wide", "all"):
        rows = families.filter(pl.col("segment") == segment)
        hits = int((rows["worse"] > 0).sum())
        low, high = clopper_pearson(hits, rows.height)
        per_segment[segment] = {"families": rows.height, "with_worse": hits, "share": hits / rows.height,
                                "ci_low": low, "ci_high": high,
                                "families_compared": int((rows["compared"] >= 2).sum()),
                                "measures_compared_mean": float(rows["compared"].mean())}
    by_run = families.group_by("seed").agg((pl.col("worse") > 0).sum().alias("worse"))
    runs_with_worse = int((by_run["worse"] > 0).sum())
    low, high = clopper_pearson(runs_with_worse, seeds)
    return {"per_segment": per_segment, "runs": seeds, "runs_with_worse": runs_with_worse,
            "runs_with_worse_share": runs_with_worse / seeds, "runs_ci_low": low, "runs_ci_high": high,
            "seeds_with_worse": sorted(by_run.filter(pl.col("worse") > 0)["seed"].to_list())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--queries", type=int, nargs="+", default=[10, 20, 80])
    parser.add_argument("--resamples", type=int, default=300)
    parser.add_argument("--alpha-grid", default="l350^0.95")
    parser.add_argument("--min-segment-samples", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="two seeds, 10 queries, 100 resamples, linear:11")
    parser.add_argument("--json", metavar="PATH", help="also write the results, with their provenance, to this JSON file")
    args = parser.parse_args()
    if args.smoke:
        args.seeds, args.queries, args.resamples, args.alpha_grid = 2, [10], 100, "linear:11"

    seeds = range(args.first_seed, args.first_seed + args.seeds)
    print(f"{args.seeds} runs per query count {args.queries} of graded_by_driver(queries, 'random', seed) with designs "
          f"{STUDY_DESIGNS}; verdict at level {LEVEL}, {args.resamples} resamples, alpha grid {args.alpha_grid}, "
          f"min_segment_samples {args.min_segment_samples}")
    by_size, largest = {}, (-1.0, None, None, None)
    start, cpu_start = time.perf_counter(), time.process_time()
    for queries in args.queries:
        families = pl.concat([run_families(seed, queries, args) for seed in seeds])
        result = size_results(families, args.seeds)
        by_size[str(queries)] = result
        for segment, row in result["per_segment"].items():
            print(f"{queries} queries, {segment}: {row['with_worse']} of {row['families']} families with a worse "
                  f"measure ({row['share']:.3f}, 95% Clopper-Pearson {row['ci_low']:.3f}..{row['ci_high']:.3f}); "
                  f"{row['measures_compared_mean']:.1f} measures compared on average", flush=True)
            if row["share"] > largest[0]:
                largest = (row["share"], f"{queries}/{segment}", row["ci_low"], row["ci_high"])
        print(f"{queries} queries: {result['runs_with_worse']} of {args.seeds} runs with a worse measure in some "
              f"family; {time.perf_counter() - start:.0f} s so far", flush=True)
    wall, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    print(f"criterion: every family share <= 0.05; {wall:.0f} s wall, {cpu_seconds:.0f} s CPU")
    print(f"largest_family_share={largest[0]:.3f} at={largest[1]} ci={largest[2]:.3f}..{largest[3]:.3f}")
    if args.json:
        write_benchmark_json(args.json, {
            "parameters": {"seeds": args.seeds, "first_seed": args.first_seed, "queries": args.queries,
                           "driver": "random", "designs": [list(d[:2]) + [list(d[2])] for d in STUDY_DESIGNS],
                           "targets": ["grade"], "bootstrap_resamples": args.resamples,
                           "alpha_grid": args.alpha_grid, "min_segment_samples": args.min_segment_samples,
                           "level": LEVEL, "threads": 1, "method": "multiple comparisons with the best"},
            "by_queries": by_size, "largest_family_share": largest[0], "largest_at": largest[1],
            "wall_seconds": wall, "cpu_seconds": cpu_seconds})


if __name__ == "__main__":
    main()
