"""The verdict's power plan checked by subsampling: does the simultaneous half-width of a
comparison shrink as 1 / sqrt(queries)?

The verdict sizes the queries a decision needs (``queries_for_0.05``, ``queries_for_0.10``) from
the simultaneous half-width h of (best - measure) at the run's Q queries, as if it scaled as
1 / sqrt(Q): at Q' queries, h' = h sqrt(Q / Q') (:func:`~retrieval_response.decide.verdict.queries_needed`).
This script takes one large synthetic run (:func:`~retrieval_response.testing.synthetic.graded_by_driver`,
driver ``recall`` with noisy grades, so the differences between measures are modest), and for
every tied or worse comparison of its verdict predicts h' at 1/2 and 1/4 of the queries; it then
takes the verdict of several random subsamples of that many queries (without replacement) and
measures h' there (half the width of ``diff_ci_low..diff_ci_high``), averaged over the
subsamples whose best measure is the full run's (the comparison is the same pair).

Printed per fraction: predicted / observed for each comparison, their median and range, and the
share within 20% (the criterion). Since h = c x se (c the max-t critical value of the family, se
the bootstrap standard error of the pair's difference), the ratio splits into c_full / c_sub
times se_full sqrt(Q / Q') / se_sub; both factors are printed, per family for c.

With ``--exclude F`` (or other measures) the verdicts leave those measures out, e.g. to see how
much one pair with a heavy-tailed bootstrap distribution moves its family's critical value.

Usage: python benchmarks/verdict_power.py [--queries 1600] [--noise 2.0] [--subsamples 5]
       [--resamples 1000] [--exclude MEASURE ...] [--json docs/benchmarks/verdict_power.json]
Last line: ``ratio_half=<median> ratio_quarter=<median> within_20pct=<share>``.
"""

from __future__ import annotations

import os

for _variable in ("POLARS_MAX_THREADS", "NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # one core: the benchmark shares the machine

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from retrieval_response.analysis.samples import default_measures  # noqa: E402
from retrieval_response.decide import verdict as verdict_module  # noqa: E402
from retrieval_response.reports.benchmark_record import write_benchmark_json  # noqa: E402
from retrieval_response.testing.synthetic import graded_by_driver  # noqa: E402

STUDY_DESIGNS = ((10, 2, (1, 2, 3, 6)), (10, 3, (1, 2, 3, 6)), (10, 4, (1, 2, 3, 4, 8)))
"""The designs of config/study.yaml's first dataset: narrow and wide samples for every query."""
FRACTIONS = {"half": 2, "quarter": 4}
TOLERANCE = 0.2
FAMILY = ["target", "subset", "E", "segment"]


def max_pair_counts(draws: np.ndarray, values: np.ndarray, critical: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each pair (i, j) of :func:`~retrieval_response.decide.verdict.max_t_adjust`, in how many
    of the resamples whose max-t statistic reaches ``critical`` (the tail that sets the critical
    value) its centred |t| is the largest of the family."""
    i, j = np.triu_indices(len(values), 1)
    d_star = draws[i] - draws[j]
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.abs(d_star - (values[i] - values[j])[:, None]) / np.nanstd(d_star, axis=1, ddof=1)[:, None]
    t = np.where(np.isfinite(t), t, -np.inf)
    tail = t.max(axis=0) >= critical
    return np.bincount(np.argmax(t[:, tail], axis=0), minlength=len(i)), i, j


def verdict_with_criticals(graded: pl.DataFrame, args: argparse.Namespace, seed: int) -> tuple[pl.DataFrame, dict]:
    """The verdict of ``graded`` and, per family (segment), the max-t critical value it used and
    the pair that most often sets the max-t statistic in the resamples at or above it, with the
    share of those resamples it does.

    Neither is a column of the verdict; :func:`~retrieval_response.decide.verdict.max_t_adjust`
    gets the draws and returns the critical value, so both are recorded on the way, with the
    values it was given, and matched to the family whose compared measures have those values."""
    calls = []
    original = verdict_module.max_t_adjust

    def recording(draws, values, level):
        p, half, critical = original(draws, values, level)
        calls.append((np.array(values), critical, *max_pair_counts(draws, values, critical)))
        return p, half, critical

    verdict_module.max_t_adjust = recording
    try:
        verdict = verdict_module.verdict_table(
            graded, alpha_grid=args.alpha_grid, min_segment_samples=args.min_segment_samples,
            bootstrap_resamples=args.resamples, seed=seed, targets=["grade"],
            measures=[m for m in default_measures(graded) if m not in args.exclude])
    finally:
        verdict_module.max_t_adjust = original
    criticals = {}
    for key, family in verdict.group_by(FAMILY, maintain_order=True):
        candidates = family.filter(pl.col("decision").is_in(["best", "tied", "worse"]))
        values, names = candidates["value"].to_numpy(), candidates["measure"].to_list()
        matches = [call for call in calls if call[0].shape == values.shape and np.array_equal(call[0], values)]
        if not matches:
            criticals[key[3]] = (math.nan, None, math.nan)
            continue
        _, critical, counts, i, j = matches[0]
        top = int(np.argmax(counts))
        criticals[key[3]] = (critical, f"{names[i[top]]} - {names[j[top]]}", float(counts[top] / counts.sum()))
    return verdict, criticals


def compared(verdict: pl.DataFrame) -> pl.DataFrame:
    """Tied and worse rows with their simultaneous half-width and their family's best measure."""
    best = verdict.filter(pl.col("decision") == "best").select(*FAMILY, best=pl.col("measure"))
    return (verdict.filter(pl.col("decision").is_in(["tied", "worse"]))
            .join(best, on=FAMILY)
            .select(*FAMILY, "best", "measure", "decision", "n_queries", "difference_to_best",
                    half_width=(pl.col("diff_ci_high") - pl.col("diff_ci_low")) / 2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1600)
    parser.add_argument("--noise", type=float, default=2.0)
    parser.add_argument("--subsamples", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alpha-grid", default="l350^0.95")
    parser.add_argument("--min-segment-samples", type=int, default=15)
    parser.add_argument("--exclude", nargs="*", default=[], metavar="MEASURE", help="measures left out of the verdicts")
    parser.add_argument("--json", metavar="PATH", help="also write the results, with their provenance, to this JSON file")
    args = parser.parse_args()

    start = time.perf_counter()
    graded = graded_by_driver(args.queries, "recall", args.seed, designs=STUDY_DESIGNS, noise=args.noise)
    full, full_max_t = verdict_with_criticals(graded, args, args.seed)
    full_criticals = {segment: critical for segment, (critical, _, _) in full_max_t.items()}
    full_rows = compared(full)
    print(f"full run: graded_by_driver({args.queries}, 'recall', {args.seed}, noise={args.noise}) with designs "
          f"{STUDY_DESIGNS}: {graded.height} samples; {args.resamples} resamples; measures left out: "
          f"{', '.join(args.exclude) or 'none'}; {full_rows.height} tied or worse "
          f"comparisons; max-t critical value, and the pair setting the statistic most often where it reaches that value: "
          f"{'; '.join(f'{s} {c:.3f}, {pair} ({share:.0%})' for s, (c, pair, share) in full_max_t.items())}")
    ids = np.array(sorted(graded["id"].unique().to_list()))
    rng = np.random.default_rng(args.seed)
    results, comparisons = {}, []
    for fraction, divisor in FRACTIONS.items():
        size = args.queries // divisor
        observed, sub_criticals = [], {s: [] for s in full_criticals}
        for k in range(args.subsamples):
            chosen = rng.choice(ids, size, replace=False)
            sub, criticals = verdict_with_criticals(graded.filter(pl.col("id").is_in(chosen)), args, args.seed + 1 + k)
            for segment, (critical, _, _) in criticals.items():
                sub_criticals.setdefault(segment, []).append(critical)
            observed.append(compared(sub).select(*FAMILY, "best", "measure", observed=pl.col("half_width"),
                                                 n_queries_sub=pl.col("n_queries")))
        observed = (pl.concat(observed).group_by(*FAMILY, "best", "measure")
                    .agg(pl.col("observed").mean(), pl.len().alias("subsamples"), pl.col("n_queries_sub").first()))
        rows = (full_rows.join(observed, on=[*FAMILY, "best", "measure"], how="inner")
                .with_columns(predicted=pl.col("half_width") * (pl.col("n_queries") / pl.col("n_queries_sub")).sqrt())
                .with_columns(ratio=pl.col("predicted") / pl.col("observed"),
                              critical_full=pl.col("segment").replace_strict(full_criticals, return_dtype=pl.Float64),
                              critical_sub=pl.col("segment").replace_strict(
                                  {s: float(np.nanmean(c)) for s, c in sub_criticals.items()}, return_dtype=pl.Float64))
                .with_columns(critical_ratio=pl.col("critical_full") / pl.col("critical_sub"))
                .with_columns(se_ratio=pl.col("ratio") / pl.col("critical_ratio"))
                .sort("segment", "measure"))
        within = ((rows["ratio"] - 1).abs() <= TOLERANCE).sum()
        print(f"{fraction} ({size} queries, {args.subsamples} subsamples): {rows.height} of {full_rows.height} "
              "comparisons with the full run's best in at least one subsample")
        for row in rows.iter_rows(named=True):
            print(f"  {row['segment']:6} {row['best']:>6} - {row['measure']:<11} {row['decision']:5} "
                  f"h_full {row['half_width']:.4f} predicted {row['predicted']:.4f} observed {row['observed']:.4f} "
                  f"({row['subsamples']}) ratio {row['ratio']:.3f} = critical {row['critical_ratio']:.3f} "
                  f"x se {row['se_ratio']:.3f}")
        for segment, critical in sub_criticals.items():
            print(f"  max-t critical value {segment}: full {full_criticals[segment]:.3f}, subsamples "
                  f"{np.nanmean(critical):.3f} (range {np.nanmin(critical):.3f}..{np.nanmax(critical):.3f})")
        ratio = rows["ratio"]
        results[fraction] = {
            "queries": size, "subsamples": args.subsamples, "comparisons": full_rows.height,
            "comparisons_matched": rows.height, "within_20pct": int(within), "ratio_median": float(ratio.median()),
            "ratio_mean": float(ratio.mean()), "ratio_min": float(ratio.min()), "ratio_max": float(ratio.max()),
            "ratio_pooled": float(rows["predicted"].sum() / rows["observed"].sum()),
            "critical_ratio_median": float(rows["critical_ratio"].median()),
            "se_ratio_median": float(rows["se_ratio"].median()),
            "critical_full": full_criticals,
            "critical_sub_mean": {s: float(np.nanmean(c)) for s, c in sub_criticals.items()}}
        print(f"{fraction}: predicted/observed median {ratio.median():.3f} (range {ratio.min():.3f}..{ratio.max():.3f}, "
              f"pooled {results[fraction]['ratio_pooled']:.3f}); {within} of {rows.height} within {TOLERANCE:.0%}; "
              f"median critical-value factor {results[fraction]['critical_ratio_median']:.3f}, "
              f"se factor {results[fraction]['se_ratio_median']:.3f}")
        comparisons += rows.with_columns(fraction=pl.lit(fraction)).select(
            "fraction", "segment", "best", "measure", "decision", "difference_to_best", "half_width", "predicted",
            "observed", "subsamples", "ratio", "critical_ratio", "se_ratio").to_dicts()
    wall = time.perf_counter() - start
    matched = sum(r["comparisons_matched"] for r in results.values())
    within = sum(r["within_20pct"] for r in results.values())
    print(f"{wall:.0f} s wall")
    print(f"ratio_half={results['half']['ratio_median']:.3f} ratio_quarter={results['quarter']['ratio_median']:.3f} "
          f"within_20pct={within / matched:.3f}")
    if args.json:
        write_benchmark_json(args.json, {
            "parameters": {"queries": args.queries, "driver": "recall", "noise": args.noise, "seed": args.seed,
                           "designs": [list(d[:2]) + [list(d[2])] for d in STUDY_DESIGNS], "targets": ["grade"],
                           "subsamples": args.subsamples, "bootstrap_resamples": args.resamples,
                           "alpha_grid": args.alpha_grid, "min_segment_samples": args.min_segment_samples,
                           "tolerance": TOLERANCE, "threads": 1,
                           "excluded_measures": args.exclude},
            "max_t_full": {s: {"critical": c, "max_pair": pair, "max_pair_share": share}
                           for s, (c, pair, share) in full_max_t.items()},
            "fractions": results, "within_20pct_share": within / matched, "comparisons": comparisons,
            "wall_seconds": wall})


if __name__ == "__main__":
    main()
