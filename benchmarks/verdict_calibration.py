"""Family-wise error of the verdict under random grades: how often a measure is called ``worse``
when no measure predicts the grade.

Each run builds a graded table with :func:`~retrieval_response.testing.synthetic.graded_by_driver`
(driver ``random``: grades drawn uniformly from 1..5, independent of the ranking) for the study's
designs of one dataset's three (Nc 10, Np 2, 3, 4), one subset, one ranker and one target, and
takes its verdict (:func:`~retrieval_response.decide.verdict.verdict_table`) with the run's seed
for the grades, the cross-fitting halves and the bootstrap. Every measure has correlation 0 with
the grade, so any ``worse`` is a false one. A family (target x subset x E x segment: narrow,
wide, all) is controlled at family-wise error 5%; a run holds three families, which overlap
(``all`` holds the samples of the other two).

Printed: the share of runs with any ``worse`` and its Clopper-Pearson 95% interval, the families
per run, and the share of families with any ``worse`` (its interval treats families as
independent, which the three of one run are not). Criterion: the run share is at most 0.05.

Usage: python benchmarks/verdict_calibration.py [--seeds 200] [--queries 80] [--resamples 300]
       [--json docs/benchmarks/verdict_calibration.json]
Last line: ``runs_with_worse_share=<s> ci=<low>..<high> families_per_run=<f> family_share=<s>``.
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


def run_families(seed: int, args: argparse.Namespace) -> pl.DataFrame:
    """One run's families: segment, measures compared, whether any is ``worse``, the smallest adjusted p."""
    graded = graded_by_driver(args.queries, "random", seed, designs=STUDY_DESIGNS)
    verdict = verdict_table(graded, alpha_grid=args.alpha_grid, min_segment_samples=args.min_segment_samples,
                            bootstrap_resamples=args.resamples, seed=seed, targets=["grade"], level=LEVEL)
    return (verdict.group_by("target", "subset", "E", "segment", maintain_order=True)
            .agg(compared=pl.col("decision").is_in(["best", "tied", "worse"]).sum(),
                 worse=(pl.col("decision") == "worse").sum(),
                 min_p_adjusted=pl.col("p_adjusted").min())
            .with_columns(seed=pl.lit(seed)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--queries", type=int, default=80)
    parser.add_argument("--resamples", type=int, default=300)
    parser.add_argument("--alpha-grid", default="l350^0.95")
    parser.add_argument("--min-segment-samples", type=int, default=15)
    parser.add_argument("--json", metavar="PATH", help="also write the results, with their provenance, to this JSON file")
    args = parser.parse_args()

    seeds = range(args.first_seed, args.first_seed + args.seeds)
    print(f"{args.seeds} runs of graded_by_driver({args.queries}, 'random', seed) with designs {STUDY_DESIGNS}; "
          f"verdict at level {LEVEL}, {args.resamples} resamples, alpha grid {args.alpha_grid}, "
          f"min_segment_samples {args.min_segment_samples}")
    parts, start, cpu_start = [], time.perf_counter(), time.process_time()
    for count, seed in enumerate(seeds, 1):
        parts.append(run_families(seed, args))
        if count % 20 == 0 or count == args.seeds:
            so_far = pl.concat(parts)
            runs = so_far.group_by("seed").agg(pl.col("worse").sum() > 0)["worse"].sum()
            print(f"  {count} runs, {runs} with a worse measure, {time.perf_counter() - start:.0f} s", flush=True)
    wall, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    families = pl.concat(parts)
    decided = families.filter(pl.col("compared") >= 2)
    by_run = families.group_by("seed").agg(pl.len().alias("families"), (pl.col("worse") > 0).sum().alias("worse"))
    runs_with_worse = int((by_run["worse"] > 0).sum())
    families_with_worse = int((families["worse"] > 0).sum())
    run_low, run_high = clopper_pearson(runs_with_worse, args.seeds)
    family_low, family_high = clopper_pearson(families_with_worse, families.height)
    per_segment = {}
    for segment in ("narrow", "wide", "all"):
        rows = families.filter(pl.col("segment") == segment)
        hits = int((rows["worse"] > 0).sum())
        low, high = clopper_pearson(hits, rows.height)
        per_segment[segment] = {"families": rows.height, "with_worse": hits, "share": hits / rows.height,
                                "ci_low": low, "ci_high": high,
                                "measures_compared_mean": float(rows["compared"].mean())}
        print(f"{segment}: {hits} of {rows.height} families with a worse measure ({hits / rows.height:.3f}, "
              f"95% {low:.3f}..{high:.3f}); {rows['compared'].mean():.1f} measures compared on average")
    families_per_run = families.height / args.seeds
    print(f"families per run: {families_per_run:g} ({decided.height} of {families.height} with at least two "
          "measures compared)")
    print(f"families with a worse measure: {families_with_worse} of {families.height} "
          f"({families_with_worse / families.height:.3f}, 95% {family_low:.3f}..{family_high:.3f}, "
          "families treated as independent)")
    print(f"runs with a worse measure: {runs_with_worse} of {args.seeds} "
          f"(95% Clopper-Pearson {run_low:.3f}..{run_high:.3f}); criterion <= 0.05; "
          f"{wall:.0f} s wall, {cpu_seconds:.0f} s CPU ({wall / args.seeds:.1f} s per run)")
    print(f"runs_with_worse_share={runs_with_worse / args.seeds:.3f} ci={run_low:.3f}..{run_high:.3f} "
          f"families_per_run={families_per_run:g} family_share={families_with_worse / families.height:.3f}")
    if args.json:
        write_benchmark_json(args.json, {
            "parameters": {"seeds": args.seeds, "first_seed": args.first_seed, "queries": args.queries,
                           "driver": "random", "designs": [list(d[:2]) + [list(d[2])] for d in STUDY_DESIGNS],
                           "targets": ["grade"], "bootstrap_resamples": args.resamples,
                           "alpha_grid": args.alpha_grid, "min_segment_samples": args.min_segment_samples,
                           "level": LEVEL, "threads": 1},
            "runs": args.seeds, "runs_with_worse": runs_with_worse,
            "runs_with_worse_share": runs_with_worse / args.seeds, "runs_ci_low": run_low, "runs_ci_high": run_high,
            "families": families.height, "families_per_run": families_per_run,
            "families_compared": decided.height, "families_with_worse": families_with_worse,
            "family_share": families_with_worse / families.height, "family_ci_low": family_low,
            "family_ci_high": family_high, "per_segment": per_segment,
            "seeds_with_worse": sorted(by_run.filter(pl.col("worse") > 0)["seed"].to_list()),
            "wall_seconds": wall, "cpu_seconds": cpu_seconds})


if __name__ == "__main__":
    main()
