"""Largest difference of each compat mode from its reference, per measure with alpha and correlation type.

- ``exact`` mode against exact rational arithmetic (tests/analysis_reference.py: every measure
  value a Fraction at the grid's float alpha, ties between equal rationals, every sum exact);
- ``paper`` mode against the paper's computation: each sample's measure in the paper's float
  order (1e-10 added to n_p' in F_e_partner, (a*n_n)/K in T), scipy's spearmanr, pearsonr and
  kendalltau on the per-sample arrays in file order.

Data: the stress set of the tests (proportional cells, n_p = 0 samples, random rankings, a
subset ranked perfectly), both segmentations, targets ``grade`` (count tables) and
``grade_expected`` (per-sample kernel, exact mode only), plus the rounding-noise segments of
``noise_graded`` (paper mode); grid l350^0.95 U linear:9 U l60^0.7 (773 alphas).

Usage: python benchmarks/exactness.py [--json OUTPUT.json] [--smoke]  (about 5 minutes on 2 cores;
``--smoke``: 30 queries, a 3-value grid, segments of 5 samples, one run per mode: checks that it runs). One line per
(mode, target, measure, corr type): the largest |difference| over segments and alphas, and the
number of (segment, alpha) values compared; with --json the same rows as JSON (the table of
docs/ANALYSIS.md is rendered from docs/exactness.json, and tests/test_exactness.py checks it).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from analysis_reference import (  # noqa: E402
    ALPHA_MEASURE_DENOMINATOR,
    exact_curves,
    library_curves,
    noise_graded,
    segment_samples,
    stress_graded,
)
from retrieval_response.analysis.correlations import CORR_TYPES  # noqa: E402
from retrieval_response.measures.alpha import alpha_grid  # noqa: E402

GRID = np.unique(np.concatenate([alpha_grid("l350^0.95"), alpha_grid("linear:9"), alpha_grid("l60^0.7")]))
MINIMUM = 20


def paper_value(name: str, s: dict, a: float) -> float | None:
    """One sample's measure as the paper's code computes it (None: no partner)."""
    n_p, K = s["n_p"], s["K"]
    if name == "F":
        return n_p / (a * K + (1 - a) * s["Np"])
    if name == "F_e":
        return 0.0 if n_p == 0 else n_p / (a * K + (1 - a) * s["np_2K"])
    if name == "F_e_partner":
        return None if s["partner"] is None else n_p / (a * K + (1 - a) * (s["partner"] + 1e-10))
    if name == "T":
        return (1 - a) * n_p - (a * (K - n_p)) / K
    return (1 - a) * n_p - a * (K - n_p)


def paper_curves(name: str, samples: list[dict], grid: np.ndarray) -> dict[str, np.ndarray]:
    """corr type -> (A,) scipy on the per-sample arrays in file order, as the paper's code."""
    used = [s for s in samples if paper_value(name, s, 0.5) is not None]
    grade = np.array([float(s["grade"]) for s in used])
    out = {t: np.full(len(grid), np.nan) for t in CORR_TYPES}
    for a, alpha in enumerate(grid.tolist()):
        x = np.array([paper_value(name, s, alpha) for s in used])
        if len(x) < 2 or (x == x[0]).all() or (grade == grade[0]).all():
            continue
        out["spearman"][a] = stats.spearmanr(x, grade).statistic
        out["pearson"][a] = stats.pearsonr(x, grade).statistic
        out["kendall_b"][a] = stats.kendalltau(x, grade, variant="b").statistic
        out["kendall_c"][a] = stats.kendalltau(x, grade, variant="c").statistic
    return out


def compare(got: np.ndarray, expected: np.ndarray) -> tuple[float, int]:
    """(max |difference|, values compared); a NaN on one side only counts as inf."""
    if (np.isnan(got) != np.isnan(expected)).any():
        return float("inf"), len(got)
    both = ~np.isnan(got)
    return float(np.max(np.abs(got[both] - expected[both]), initial=0.0)), int(both.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the rows to this JSON file")
    parser.add_argument("--smoke", action="store_true", help="a small set, grid and run list: checks that it runs")
    args = parser.parse_args()
    warnings.simplefilter("ignore", stats.NearConstantInputWarning)
    grid = alpha_grid("linear:3") if args.smoke else GRID
    stress = stress_graded(seed=0, n_queries=30 if args.smoke else 120)
    runs = [("exact", stress, seg, target) for target in ("grade", "grade_expected") for seg in ("ratio", "fit")]
    runs += [("paper", stress, seg, "grade") for seg in ("ratio", "fit")]
    runs += [("paper", noise_graded(seed), "ratio", "grade") for seed in range(3)]
    if args.smoke:
        runs = [runs[0], runs[4]]
    worst: dict[tuple, list] = {}
    for mode, graded, segmentation, target in runs:
        segments = segment_samples(graded, segmentation)
        minimum = 5 if args.smoke else MINIMUM if graded is stress else 10
        for name in (m for m in ALPHA_MEASURE_DENOMINATOR if m != "F_e" or "np_2K" in graded.columns):
            got = library_curves(graded, segmentation, grid, mode, name, target, minimum)
            for key, curves in got.items():
                expected = (exact_curves(name, segments[key], target, grid) if mode == "exact"
                            else paper_curves(name, segments[key], grid))
                for corr_type in CORR_TYPES:
                    difference, count = compare(curves[corr_type], expected[corr_type])
                    entry = worst.setdefault((mode, target, name, corr_type), [0.0, 0])
                    entry[0], entry[1] = max(entry[0], difference), entry[1] + count
    print("mode   target          measure      corr_type   largest_difference  compared")
    for (mode, target, name, corr_type), (difference, count) in sorted(worst.items()):
        print(f"{mode:6} {target:15} {name:12} {corr_type:11} {difference:18.3g}  {count:8d}")
    if args.json:
        rows = [{"mode": mode, "target": target, "measure": name, "corr_type": corr_type,
                 "largest_difference": difference, "compared": count}
                for (mode, target, name, corr_type), (difference, count) in sorted(worst.items())]
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
