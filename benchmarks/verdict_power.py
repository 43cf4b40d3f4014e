"""The verdict's power: multiple comparisons with the best (MCB, today's verdict) against the
all-pairs comparison it replaced, on the same draws, and the margin's power plan checked by
subsampling.

Part 1, MCB against all pairs. For each query count of ``--queries`` (default 100 and 400), one
synthetic run (:func:`~retrieval_response.testing.synthetic.graded_by_driver`, driver ``recall``
with noisy grades, so the differences between measures are modest) and its verdict; for every
family the compared measures' correlations and bootstrap draws are recorded on the way and both
methods applied to them: MCB (:func:`~retrieval_response.decide.comparisons.best_comparisons`,
the recommended measure :func:`~retrieval_response.decide.verdict.recommend`) and all pairs
(:func:`~retrieval_response.decide.comparisons.all_pairs`: the margin max_j (r_j - r_i + h_ij)
of the measure with the smallest such margin, and the measures whose difference to the highest
has an adjusted p below 0.05). Printed per family: each method's recommended measure, its margin,
the measures decided worse, the critical values, and the ratio MCB margin / all-pairs margin.

Part 2, the power plan. The verdict sizes the queries with which a margin would fall to 0.05 and
0.10 from h = c se (c the MCB critical value, se the largest standard error of the differences
bounding the margin) as if h scaled as 1/sqrt(Q) (:func:`~retrieval_response.decide.verdict.queries_needed`).
On a run of ``--plan-queries`` queries, c se_ij of each family's recommended measure i against
every other compared measure j is predicted at 1/2 and 1/4 of the queries and measured on
``--subsamples`` random subsamples of that many queries (without replacement; the same pair
there, averaged); printed: each ratio, their median per fraction and the share within 20%.

``--smoke`` runs tiny sizes in seconds. Usage: python benchmarks/verdict_power.py [--queries 100 400]
[--plan-queries 1600] [--subsamples 5] [--resamples 1000] [--json docs/benchmarks/verdict_power.json]
Last line: ``margin_ratio_100=<r> margin_ratio_400=<r> plan_ratio_half=<r> plan_ratio_quarter=<r>``.
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

from retrieval_response.decide import verdict as verdict_module  # noqa: E402
from retrieval_response.decide.comparisons import all_pairs, all_pairs_margins, best_comparisons  # noqa: E402
from retrieval_response.reports.benchmark_record import write_benchmark_json  # noqa: E402
from retrieval_response.testing.synthetic import graded_by_driver  # noqa: E402

STUDY_DESIGNS = ((10, 2, (1, 2, 3, 6)), (10, 3, (1, 2, 3, 6)), (10, 4, (1, 2, 3, 4, 8)))
"""The designs of config/study.yaml's first dataset: narrow and wide samples for every query."""
FRACTIONS = {"half": 2, "quarter": 4}
LEVEL = 0.95


def recorded_families(graded: pl.DataFrame, args: argparse.Namespace, seed: int) -> dict[str, tuple]:
    """segment -> (names, values, draws) of the measures the verdict of ``graded`` compared, recorded
    from its calls of best_comparisons and matched to the families by their values."""
    calls = []
    original = verdict_module.best_comparisons

    def recording(values, draws, level):
        calls.append((np.array(values), np.array(draws)))
        return original(values, draws, level)

    verdict_module.best_comparisons = recording
    try:
        verdict = verdict_module.verdict_table(
            graded, alpha_grid=args.alpha_grid, min_segment_samples=args.min_segment_samples,
            bootstrap_resamples=args.resamples, seed=seed, targets=["grade"], level=LEVEL)
    finally:
        verdict_module.best_comparisons = original
    families = {}
    for (segment,), family in verdict.group_by("segment", maintain_order=True):
        rows = family.filter(pl.col("decision") != "undecided")
        values = rows["value"].to_numpy()
        match = next((c for c in calls if c[0].shape == values.shape and np.array_equal(c[0], values)), None)
        if match is not None:
            families[segment] = (rows["measure"].to_list(), *match)
    return families


def compare_methods(names: list[str], values: np.ndarray, draws: np.ndarray) -> dict:
    """Both methods on one family's draws (module docstring, part 1)."""
    mcb = best_comparisons(values, draws, LEVEL)
    pick = verdict_module.recommend(names, mcb)
    p, half, pairs_critical = all_pairs(values, draws, LEVEL)
    margins = all_pairs_margins(values, half)
    pairs_pick = int(np.argmin(margins))
    best = int(np.argmax(values))
    pairs_worse = [names[k] for k in range(len(names)) if k != best and p[best, k] < 1 - LEVEL]
    return {"measures": len(names), "mcb_recommended": names[pick], "mcb_margin": float(mcb.margin[pick]),
            "mcb_critical": mcb.critical, "mcb_worse": [n for n, w in zip(names, mcb.worse, strict=True) if w],
            "all_pairs_recommended": names[pairs_pick], "all_pairs_margin": float(margins[pairs_pick]),
            "all_pairs_critical": pairs_critical, "all_pairs_worse": pairs_worse,
            "mcb_worse_count": int(mcb.worse.sum()), "all_pairs_worse_count": len(pairs_worse),
            "margin_ratio": float(mcb.margin[pick] / margins[pairs_pick]) if margins[pairs_pick] > 0 else math.nan}


def half_widths(names: list[str], values: np.ndarray, draws: np.ndarray, measure: str) -> dict[str, float]:
    """c se_ij of ``measure`` (i) against every other compared measure j of this family, by j's
    name (empty when ``measure`` is not compared there)."""
    if measure not in names:
        return {}
    mcb = best_comparisons(values, draws, LEVEL)
    i = names.index(measure)
    return {name: float(mcb.critical * mcb.se[i, j]) for j, name in enumerate(names) if j != i}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, nargs="+", default=[100, 400])
    parser.add_argument("--plan-queries", type=int, default=1600)
    parser.add_argument("--noise", type=float, default=2.0)
    parser.add_argument("--subsamples", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alpha-grid", default="l350^0.95")
    parser.add_argument("--min-segment-samples", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: 40 and 80 queries, 100 resamples")
    parser.add_argument("--json", metavar="PATH", help="also write the results, with their provenance, to this JSON file")
    args = parser.parse_args()
    if args.smoke:
        args.queries, args.plan_queries, args.subsamples, args.resamples, args.alpha_grid = [40], 80, 1, 100, "linear:11"

    start = time.perf_counter()
    methods = {}
    for queries in args.queries:
        graded = graded_by_driver(queries, "recall", args.seed, designs=STUDY_DESIGNS, noise=args.noise)
        methods[str(queries)] = {}
        for segment, family in recorded_families(graded, args, args.seed).items():
            row = compare_methods(*family)
            methods[str(queries)][segment] = row
            print(f"{queries} queries, {segment}: {row['measures']} measures compared; MCB recommends "
                  f"{row['mcb_recommended']} with margin {row['mcb_margin']:.3f} (critical {row['mcb_critical']:.3f}), "
                  f"{len(row['mcb_worse'])} worse; all pairs: {row['all_pairs_recommended']} with margin "
                  f"{row['all_pairs_margin']:.3f} (critical {row['all_pairs_critical']:.3f}), "
                  f"{len(row['all_pairs_worse'])} worse than the highest; margin ratio MCB / all pairs "
                  f"{row['margin_ratio']:.3f}", flush=True)
    graded = graded_by_driver(args.plan_queries, "recall", args.seed, designs=STUDY_DESIGNS, noise=args.noise)
    full = recorded_families(graded, args, args.seed)
    recommended = {s: compare_methods(*f)["mcb_recommended"] for s, f in full.items()}
    ids = np.array(sorted(graded["id"].unique().to_list()))
    rng = np.random.default_rng(args.seed)
    plan = {}
    for fraction, divisor in FRACTIONS.items():
        size = args.plan_queries // divisor
        observed = {s: [] for s in full}
        for k in range(args.subsamples):
            chosen = rng.choice(ids, size, replace=False)
            sub = recorded_families(graded.filter(pl.col("id").is_in(chosen)), args, args.seed + 1 + k)
            for segment in full:
                if segment in sub:
                    observed[segment].append(half_widths(*sub[segment], recommended[segment]))
        plan[fraction] = []
        for segment, family in full.items():
            for other, h in half_widths(*family, recommended[segment]).items():
                seen = [o[other] for o in observed[segment] if other in o and np.isfinite(o[other])]
                if not seen or not np.isfinite(h):
                    continue
                predicted = h * math.sqrt(args.plan_queries / size)
                row = {"segment": segment, "measure": recommended[segment], "other": other, "h_full": h,
                       "predicted": predicted, "observed": float(np.mean(seen)),
                       "ratio": predicted / float(np.mean(seen))}
                plan[fraction].append(row)
                print(f"power plan, {fraction} ({size} queries), {segment}: {row['measure']} - {other}: h {h:.4f} -> "
                      f"predicted {predicted:.4f}, observed {row['observed']:.4f}, ratio {row['ratio']:.3f}", flush=True)
    wall = time.perf_counter() - start
    ratios = {q: float(np.nanmedian([r["margin_ratio"] for r in rows.values()])) for q, rows in methods.items()}
    plan_ratios = {f: float(np.nanmedian([r["ratio"] for r in rows])) for f, rows in plan.items()}
    within = [abs(r["ratio"] - 1) <= 0.2 for rows in plan.values() for r in rows]
    print(f"{wall:.0f} s wall")
    print(" ".join(f"margin_ratio_{q}={r:.3f}" for q, r in ratios.items()) + " "
          + " ".join(f"plan_ratio_{f}={r:.3f}" for f, r in plan_ratios.items()))
    if args.json:
        write_benchmark_json(args.json, {
            "parameters": {"queries": args.queries, "plan_queries": args.plan_queries, "driver": "recall",
                           "noise": args.noise, "seed": args.seed,
                           "designs": [list(d[:2]) + [list(d[2])] for d in STUDY_DESIGNS], "targets": ["grade"],
                           "subsamples": args.subsamples, "bootstrap_resamples": args.resamples,
                           "alpha_grid": args.alpha_grid, "min_segment_samples": args.min_segment_samples,
                           "level": LEVEL, "threads": 1},
            "methods": methods, "margin_ratio_median": ratios, "power_plan": plan,
            "power_plan_ratio_median": plan_ratios, "power_plan_within_20pct": float(np.mean(within)),
            "wall_seconds": wall})


if __name__ == "__main__":
    main()
