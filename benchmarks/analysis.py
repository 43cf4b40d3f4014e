"""Time the full analysis on a synthetic graded set of the paper's size.

535,888 graded samples: 4 embedders x 5 subsets, Np 2..15, K 1..15 per ranked sample, grades
1..5 that depend on P, R and noise; np_2K counted from the synthetic ranking. The analysis runs
F, F_e, T, T_u over the 702-value grid "l350^0.95" plus nDCG, 4 correlation types, both
segmentations (fit, ratio), max-over-alpha and cross-fitted, without bootstrap; then the
bootstrap (1,000 query-id resamples, paired differences included) is timed separately on both.

Baseline, timed in the same run: the straightforward reference (for each segment, measure and
alpha: per-sample measure arrays and scipy's spearmanr/pearsonr/kendalltau, on the full segment
and on both halves). It is far too slow to run in full, so it runs on a sample of
segment-measure pairs and alphas and is extrapolated by the number of (alpha x sample) units
of the full analysis; the script prints what it timed.

With ``--target grade_expected`` the measures are correlated with a continuous target instead
(grade + Gaussian noise, sd 0.3: as many distinct values as samples, the per-sample kernel).

Usage: python benchmarks/analysis.py [--samples N] [--target grade|grade_expected] [--smoke]
(``--smoke``: 3,000 samples, a 5-value grid, 20 resamples, segments of 20 samples: checks that it runs.)
Wall and CPU seconds (user + system) are both reported: on a loaded machine the wall clock
counts waiting for a core. Last two lines: ``bootstrap_seconds=<s>`` and
``analysis_seconds=<s> peak_rss_mb=<m> speedup_vs_reference=<r>``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from retrieval_response.analysis.correlation_tables import analysis_tables  # noqa: E402
from retrieval_response.analysis.correlations import CORR_TYPES, sample_correlation  # noqa: E402
from retrieval_response.analysis.crossfit import query_halves  # noqa: E402
from retrieval_response.analysis.segments import assign_segments  # noqa: E402
from retrieval_response.measures.alpha import alpha_grid  # noqa: E402
from retrieval_response.measures.features import add_features  # noqa: E402
from retrieval_response.measures.registry import MEASURES  # noqa: E402
from retrieval_response.reports.benchmark_record import write_benchmark_json  # noqa: E402

PAPER_SAMPLES = 535_888
EMBEDDERS = ("AML12v2", "E5Sv2", "ME5S", "MQML6Cv1")
SUBSETS = ("A", "Hp", "Hs", "M", "N")
K_VALUES = np.arange(1, 16)
ALPHA_MEASURES = ("F", "F_e", "T", "T_u")


def synthetic_graded(n_samples: int, seed: int = 0) -> pl.DataFrame:
    """A graded table of ``n_samples`` rows: id, E, Nc, Np, K, inK, grade, np_2K.

    Each query has one ranked sample per embedder (Np 2..15, Nc = Np + 5..20 candidates ranked
    by noisy scores, positives scoring higher), graded at every K in 1..15.
    """
    rng = np.random.default_rng(seed)
    per_ranked = len(K_VALUES) * len(EMBEDDERS)
    n_queries = -(-n_samples // per_ranked)
    subset = np.array(SUBSETS)[np.arange(n_queries) % len(SUBSETS)]
    ids = np.array([f"{s}-{i}" for i, s in enumerate(subset)])
    n_ranked = n_queries * len(EMBEDDERS)
    query = np.repeat(np.arange(n_queries), len(EMBEDDERS))
    embedder = np.tile(np.array(EMBEDDERS), n_queries)
    Np = np.repeat(rng.integers(2, 16, n_queries), len(EMBEDDERS))
    Nc = Np + np.repeat(rng.integers(5, 21, n_queries), len(EMBEDDERS))
    max_nc = int(Nc.max())
    slot = np.arange(max_nc)[None, :]
    score = rng.normal(size=(n_ranked, max_nc)) + 1.2 * (slot < Np[:, None])
    score[slot >= Nc[:, None]] = -np.inf
    is_positive = np.take_along_axis(slot < Np[:, None], np.argsort(-score, axis=1, kind="stable"), axis=1)
    hits = np.cumsum(is_positive, axis=1)
    parts = []
    for K in K_VALUES:
        n_p = hits[:, K - 1]
        np_2k = hits[np.arange(n_ranked), np.minimum(2 * K, Nc) - 1]
        latent = 1.0 + 2.5 * n_p / Np + 1.5 * n_p / K + rng.normal(0.0, 0.9, n_ranked)
        parts.append(
            pl.DataFrame(
                {
                    "id": ids[query],
                    "E": embedder,
                    "Nc": Nc.astype(np.int32),
                    "Np": Np.astype(np.int32),
                    "K": np.full(n_ranked, K, dtype=np.int32),
                    "inK": pl.Series(is_positive[:, :K].astype(np.int8)).cast(pl.List(pl.Int8)),
                    "grade": np.clip(np.rint(latent), 1, 5).astype(np.int8),
                    "np_2K": np_2k.astype(np.int64),
                }
            )
        )
    return pl.concat(parts).head(n_samples)


def reference_curves(rows: pl.DataFrame, measure_name: str, grid: np.ndarray, corr_types) -> np.ndarray:
    """(len(corr_types), len(grid)) scipy correlations of the measure with the grade, per alpha."""
    measure = MEASURES[measure_name]
    features = {c: rows[c].to_numpy() for c in measure.features}
    grade = rows["grade"].to_numpy().astype(np.float64)
    out = np.empty((len(corr_types), len(grid)))
    for a, alpha in enumerate(grid):
        values = measure.evaluate(features, np.array([alpha]))[0]
        for k, corr_type in enumerate(corr_types):
            out[k, a] = sample_correlation(values, grade, corr_type)
    return out


def time_reference(graded: pl.DataFrame, grid: np.ndarray, n_alphas: int, seed: int) -> tuple[float, float, int]:
    """Reference seconds per (alpha x sample) unit, measured on a few segments of each segmentation."""
    samples = add_features(graded)
    queries = samples.select("id").unique().sort("id").with_columns(subset=pl.col("id").str.split("-").list.first())
    half = pl.DataFrame(
        {"id": queries["id"], "half": query_halves(queries["id"].to_numpy(), queries["subset"].to_numpy(), seed)}
    )
    samples = samples.join(half, on="id")
    alphas = grid[np.linspace(0, len(grid) - 1, n_alphas).astype(int)]
    seconds, units, calls = 0.0, 0, 0
    for segmentation, segment_value in (("fit", "wide"), ("ratio", "1.0")):
        rows = assign_segments(samples, segmentation).filter(
            (pl.col("E") == EMBEDDERS[0]) & (pl.col("subset") == "A") & (pl.col("segment") == segment_value)
        )
        for measure_name in ALPHA_MEASURES:
            start = time.perf_counter()
            for part in (rows, rows.filter("half"), rows.filter(~pl.col("half"))):
                reference_curves(part, measure_name, alphas, CORR_TYPES)
                units += len(part) * len(alphas)
                calls += 1
            seconds += time.perf_counter() - start
    return seconds / units, seconds, calls


def full_units(graded: pl.DataFrame, n_alphas: int) -> int:
    """(alpha x sample) units the reference would need for the full analysis, both segmentations, halves included."""
    per_segmentation = len(graded) * 2 * (len(ALPHA_MEASURES) * n_alphas + 1)  # full data + two halves of it
    return 2 * per_segmentation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=PAPER_SAMPLES)
    parser.add_argument("--reference-alphas", type=int, default=8)
    parser.add_argument("--target", choices=["grade", "grade_expected"], default="grade")
    parser.add_argument("--json", metavar="PATH", help="also write the results, with their provenance, to this JSON file")
    parser.add_argument("--smoke", action="store_true", help="a small table, grid and bootstrap: checks that it runs")
    args = parser.parse_args()
    grid_spec, resamples, min_segment_samples = "l350^0.95", 1000, 300
    if args.smoke:
        args.samples, args.reference_alphas = 3000, 2
        grid_spec, resamples, min_segment_samples = "linear:5", 20, 20

    graded = synthetic_graded(args.samples)
    if args.target == "grade_expected":
        noise = np.random.default_rng(1).normal(0.0, 0.3, len(graded))
        graded = graded.with_columns(grade_expected=pl.col("grade").cast(pl.Float64) + pl.Series(noise))
    grid = alpha_grid(grid_spec)
    print(f"synthetic graded samples: {len(graded):,}; alpha grid: {len(grid)} values; target: {args.target}")

    measures = [*ALPHA_MEASURES, "nDCG"]
    seconds = {}
    start, cpu_start = time.perf_counter(), time.process_time()
    for segmentation in ("fit", "ratio"):
        t0 = time.perf_counter()
        correlations, _, _ = analysis_tables(
            graded, segmentation=segmentation, alpha_grid=grid_spec, corr_types=CORR_TYPES,
            min_segment_samples=min_segment_samples, bootstrap_resamples=0, measures=measures, targets=[args.target],
        )
        segments = correlations.select("E", "subset", "segment").unique().height
        seconds[segmentation] = time.perf_counter() - t0
        print(f"{segmentation}: {segments} segments, {correlations.height} correlation rows, {seconds[segmentation]:.1f} s")
    analysis_seconds = time.perf_counter() - start
    analysis_cpu = time.process_time() - cpu_start

    start, cpu_start = time.perf_counter(), time.process_time()
    for segmentation in ("fit", "ratio"):
        analysis_tables(
            graded, segmentation=segmentation, alpha_grid=grid_spec, corr_types=CORR_TYPES,
            min_segment_samples=min_segment_samples, bootstrap_resamples=resamples, measures=measures,
            targets=[args.target],
        )
    bootstrap_seconds = time.perf_counter() - start - analysis_seconds
    bootstrap_cpu = time.process_time() - cpu_start - analysis_cpu
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    per_unit, ref_seconds, ref_calls = time_reference(graded, grid, args.reference_alphas, seed=0)
    reference_seconds = per_unit * full_units(graded, len(grid))
    print(
        f"reference: {ref_calls} segment-measure-part curves x {args.reference_alphas} alphas timed in {ref_seconds:.1f} s "
        f"({per_unit * 1e9:.1f} ns per alpha x sample); extrapolated to the full analysis: {reference_seconds:,.0f} s"
    )
    print(f"bootstrap: both segmentations, {resamples} resamples: time of the runs with bootstrap minus the runs without")
    print(f"CPU seconds (user + system; a loaded machine inflates the wall clock, not these): analysis "
          f"{analysis_cpu:.1f}, bootstrap {bootstrap_cpu:.1f}")
    print(f"bootstrap_seconds={bootstrap_seconds:.1f}")
    print(
        f"analysis_seconds={analysis_seconds:.1f} peak_rss_mb={peak_rss_mb:.0f} "
        f"speedup_vs_reference={reference_seconds / analysis_seconds:.0f}"
    )
    if args.json:
        write_benchmark_json(args.json, {
            "target": args.target, "samples": len(graded), "bootstrap_seconds": bootstrap_seconds,
            "analysis_seconds": analysis_seconds, "peak_rss_mb": peak_rss_mb,
            "analysis_cpu_seconds": analysis_cpu, "bootstrap_cpu_seconds": bootstrap_cpu,
            "speedup_vs_reference": reference_seconds / analysis_seconds})


if __name__ == "__main__":
    main()
