"""Exact mode against exact rational arithmetic; paper mode against the paper's computation where floats are noise."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from analysis_reference import (
    ALPHA_MEASURE_DENOMINATOR,
    exact_curves,
    largest_difference,
    library_curves,
    noise_graded,
    segment_samples,
    stress_graded,
)
from retrieval_response.analysis.correlation_tables import analysis_tables
from retrieval_response.analysis.correlations import CORR_TYPES
from retrieval_response.analysis.segment_correlations import PAPER_PEARSON_NOISE
from retrieval_response.measures.alpha import alpha_grid
from retrieval_response.measures.registry import MEASURES

pytestmark = pytest.mark.unit

GRID = np.unique(np.r_[alpha_grid("l350^0.95"), alpha_grid("linear:9")])
"""The paper's grid (alphas within 2e-8 of 0 and 1) and dyadic alphas (where distinct cells can tie)."""
MINIMUM = 20


@pytest.fixture(scope="module")
def stress():
    return stress_graded(seed=0, n_queries=120)


CASES = [("ratio", "grade", GRID), ("fit", "grade", GRID), ("fit", "grade_expected", alpha_grid("l60^0.7"))]
"""(segmentation, target, grid): count tables on the paper's grid; the per-sample kernel (a continuous
target) on a shorter grid that reaches further into the ends (0.7^60 = 5e-10)."""


@pytest.mark.parametrize(("segmentation", "target", "grid"), CASES, ids=[f"{s}-{t}" for s, t, _ in CASES])
@pytest.mark.parametrize("name", list(ALPHA_MEASURE_DENOMINATOR))
def test_exact_mode_equals_rational_arithmetic_at_every_alpha(stress, name, segmentation, target, grid):
    """Every alpha of the grid and every correlation type agree with the exact value to 1e-12.

    The exact value is taken at the grid's float alpha as the rational it is. l60^0.7 holds 0.7
    and 1 - 0.7, near which distinct cells cross: at the float alpha they differ by less than
    4 ulps, and only an exact decision keeps them apart.
    """
    got = library_curves(stress, segmentation, grid, "exact", name, target, MINIMUM)
    expected_segments = segment_samples(stress, segmentation)
    checked = 0
    for key, curves in got.items():
        expected = exact_curves(name, expected_segments[key], target, grid)
        for corr_type in CORR_TYPES:
            assert largest_difference(curves[corr_type], expected[corr_type]) <= 1e-12, (key, corr_type)
            checked += int((~np.isnan(expected[corr_type])).sum())
    assert len(got) >= 4 and checked >= len(got) * 4 * len(grid) // 2


def paper_pearson_curve(name: str, samples: list[dict], grid: np.ndarray) -> np.ndarray:
    """The paper's computation: each sample's measure in its formula's float order, scipy's pearsonr in file order."""
    used = [s for s in samples if name != "F_e_partner" or s["partner"] is not None]
    grade = np.array([float(s["grade"]) for s in used])
    curve = np.empty(len(grid))
    for a, alpha in enumerate(grid.tolist()):
        if name == "F":
            x = np.array([s["n_p"] / (alpha * s["K"] + (1 - alpha) * s["Np"]) for s in used])
        else:
            x = np.array([s["n_p"] / (alpha * s["K"] + (1 - alpha) * (s["partner"] + 1e-10)) for s in used])
        curve[a] = np.nan if (x == x[0]).all() else stats.pearsonr(x, grade).statistic
    return curve


@pytest.mark.filterwarnings("ignore::scipy.stats.NearConstantInputWarning")  # the reference's own scipy call
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", ["F", "F_e_partner"])
def test_paper_mode_pearson_is_the_papers_where_the_values_are_rounding_noise(seed, name):
    graded = noise_graded(seed)
    grid = alpha_grid("l350^0.95")
    got = library_curves(graded, "ratio", grid, "paper", name, "grade", 10)
    segments = segment_samples(graded, "ratio")
    noise_alphas = 0
    for key, curves in got.items():
        expected = paper_pearson_curve(name, segments[key], grid)
        assert largest_difference(curves["pearson"], expected) <= 1e-12, key
        noise_alphas += int((~np.isnan(expected)).sum())
    assert noise_alphas > 0  # the case occurs: some alpha gives a rounding-noise "correlation"
    # exact mode: the same segments are constant (F exactly, F_e_partner as epsilon -> 0)
    exact, _, _ = analysis_tables(graded, segmentation="ratio", alpha_grid=grid, min_segment_samples=10, bootstrap_resamples=0,
                            measures=[name], compat="exact")
    assert exact.height > 0 and exact["null_reason"].unique().to_list() == ["constant_measure"]


def test_paper_mode_keeps_the_kernel_where_the_values_spread(stress):
    """Away from the noise the kernel and scipy agree far below the paper's 8 decimals."""
    grid = alpha_grid("l40^0.9")
    segments = segment_samples(stress, "ratio")
    got = library_curves(stress, "ratio", grid, "paper", "F", "grade", MINIMUM)
    for key, curves in got.items():
        expected = paper_pearson_curve("F", segments[key], grid)
        assert largest_difference(curves["pearson"], expected) <= 1e-10, key
    assert PAPER_PEARSON_NOISE <= 1e-6


@pytest.mark.parametrize("name", list(ALPHA_MEASURE_DENOMINATOR))
@pytest.mark.parametrize("bad", [2**26, 2**40, -1])
def test_counts_outside_the_exact_range_fall_back_to_float64(name, bad):
    """Counts a Dekker split cannot hold exactly (or negative ones) leave the measure to float64 and the ulp rule."""
    features = {c: np.array([1, 2, 3]) for c in ("n_p", "K", "Np", "np_2K", "np_partner")}
    assert MEASURES[name].exact_values(features, np.array([0.5])) is not None
    features["K"] = np.array([1, bad, 3])
    assert MEASURES[name].exact_values(features, np.array([0.5])) is None


@pytest.mark.parametrize("multiple", [3, 5, 7, 11, 1000003])
def test_proportional_cells_tie_and_cells_crossing_off_the_float_alpha_do_not(multiple):
    grid = alpha_grid("l350^0.95")
    features = {"n_p": np.array([1, multiple]), "K": np.array([2, 2 * multiple]), "Np": np.array([4, 4 * multiple])}
    ranks, centred = MEASURES["F"].exact_values(features, grid)
    assert (ranks[:, 0] == ranks[:, 1]).all() and (centred == 0).all()
    # F of (1, 1, 3) and (1, 2, 3) meet at a = 0 (both 1/3); T_u of (0, 2) and (3, 12) cross at a = 3/10,
    # which no float is: at the float nearest to 0.3 they differ by about 1e-17 and stay apart
    a = np.array([0.0, 0.3, 1 - 0.7])
    ranks, _ = MEASURES["F"].exact_values({"n_p": np.array([1, 1]), "K": np.array([1, 2]), "Np": np.array([3, 3])}, a[:1])
    assert ranks[0, 0] == ranks[0, 1]
    ranks, _ = MEASURES["T_u"].exact_values({"n_p": np.array([0, 3]), "K": np.array([2, 12])}, a[1:])
    assert (ranks[:, 0] != ranks[:, 1]).all()


def test_the_guarantees_table_of_the_docs_is_the_committed_benchmark_output():
    """docs/ANALYSIS.md's table of each mode's largest difference is docs/exactness.json (written by
    ``python benchmarks/exactness.py --json docs/exactness.json``), the maximum over targets, as ``.2g``."""
    import json
    import re

    from conftest import REPO

    largest: dict[tuple[str, str, str], float] = {}
    for row in json.loads((REPO / "docs/exactness.json").read_text()):
        key = (row["mode"], row["measure"], row["corr_type"])
        largest[key] = max(largest.get(key, 0.0), row["largest_difference"])
    doc = (REPO / "docs/ANALYSIS.md").read_text()
    rows = re.findall(r"^\| (exact|paper) \| ([A-Za-z_]+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \|$", doc, re.M)
    assert {(mode, measure) for mode, measure, *_ in rows} == {(mode, measure) for mode, measure, _ in largest}
    for mode, measure, *cells in rows:
        expected = [f"{largest[mode, measure, corr_type]:.2g}" for corr_type in CORR_TYPES]
        assert [cell.strip() for cell in cells] == expected, (mode, measure)
