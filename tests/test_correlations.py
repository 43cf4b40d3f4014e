"""Exactness of the count-table correlations against scipy on the sample arrays."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import polars as pl
import pytest

from analysis_reference import anchor_reference, reference_first_max, scipy_curves
from conftest import benchmark, python_env
from retrieval_response.analysis.correlation_tables import analysis_tables
from retrieval_response.analysis.correlations import (
    CORR_TYPES,
    MAX_TOLERANCE,
    first_max,
    sample_correlation,
    table_correlations,
)
from retrieval_response.analysis.crossfit import crossfit, query_halves
from retrieval_response.analysis.segments import assign_segments
from retrieval_response.measures.alpha import alpha_grid
from retrieval_response.measures.features import add_features
from retrieval_response.measures.registry import MEASURES

pytestmark = pytest.mark.unit

bench = benchmark("analysis")


def expand(values: np.ndarray, counts: np.ndarray, grades: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sample arrays a (cells x grades) count table stands for."""
    n_cells, n_grades = counts.shape
    repeats = counts.ravel().astype(int)
    return np.repeat(np.repeat(values, n_grades), repeats), np.repeat(np.tile(grades, n_cells), repeats)


@pytest.mark.parametrize("seed", range(6))
def test_table_correlations_equal_scipy_on_expanded_samples(seed):
    rng = np.random.default_rng(seed)
    n_cells = int(rng.integers(2, 40))
    grades = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    # few distinct values over many cells -> ties across cells; some zero-count cells
    values = rng.integers(0, 6, size=(4, n_cells)) / rng.integers(1, 4, size=(4, 1))
    counts = rng.integers(0, 5, size=(3, n_cells, 5)) * (rng.random((3, n_cells, 1)) < 0.8)
    counts[2, :, 1:] = 0  # table 2: constant grade
    got = table_correlations(values, counts, grades)
    for t in range(3):
        for a in range(4):
            x, y = expand(values[a], counts[t], grades)
            for corr_type in CORR_TYPES:
                expected = sample_correlation(x, y, corr_type)
                assert np.isnan(got[corr_type][t, a]) == np.isnan(expected)
                if not np.isnan(expected):
                    assert got[corr_type][t, a] == pytest.approx(expected, abs=1e-9)
    assert np.isnan(got["spearman"][2]).all()


def test_constant_measure_and_tiny_tables_give_nan():
    grades = np.arange(1.0, 6.0)
    counts = np.array([[[1, 0, 2, 0, 1], [0, 1, 0, 0, 3]], [[1, 0, 0, 0, 0], [0, 0, 0, 0, 0]]], dtype=float)
    got = table_correlations(np.array([[0.5, 0.5], [0.1, 0.9]]), counts, grades)
    for corr_type in CORR_TYPES:
        assert np.isnan(got[corr_type][0, 0])  # equal values: constant measure
        assert not np.isnan(got[corr_type][0, 1])
        assert np.isnan(got[corr_type][1]).all()  # one sample


def test_first_max_takes_first_alpha_and_ignores_nan():
    value, index = first_max(np.array([[np.nan, 0.2, 0.5, 0.5 - MAX_TOLERANCE / 2, 0.5], [np.nan] * 5]))
    assert value[0] == 0.5 and index[0] == 2
    assert np.isnan(value[1]) and index[1] == -1


@pytest.fixture(scope="module")
def graded() -> pl.DataFrame:
    table = bench.synthetic_graded(5400, seed=3)
    # one embedder with a constant grade; some ungraded rows
    return table.with_columns(
        grade=pl.when(pl.col("E") == "ME5S").then(pl.lit(3, pl.Int8)).otherwise(pl.col("grade"))
    ).with_columns(grade=pl.when(pl.int_range(pl.len()) % 17 == 0).then(None).otherwise(pl.col("grade")))


def test_max_over_alpha_and_crossfit_equal_scipy_reference(graded):
    grid = alpha_grid("l60^0.9")
    measures = ["F", "F_e", "F_e_partner", "T", "T_u", "nDCG", "nDCG@K"]
    correlations, _, _ = analysis_tables(
        graded, segmentation="fit", alpha_grid=grid, min_segment_samples=100, bootstrap_resamples=0, measures=measures
    )
    rows = assign_segments(add_features(graded), "fit").filter(pl.col("grade").is_not_null())
    queries = rows.select("id", "subset").unique("id").sort("id")
    half = dict(zip(queries["id"], query_halves(queries["id"].to_numpy(), queries["subset"].to_numpy(), seed=0), strict=True))
    rows = rows.with_columns(half_a=pl.col("id").replace_strict(half, return_dtype=pl.Boolean))
    rng = np.random.default_rng(0)
    checked = 0
    keys = correlations.select("E", "subset", "segment").unique().sort("E", "subset", "segment")
    for E, subset, segment in keys.sample(8, seed=1).iter_rows():
        segment_rows = rows.filter((pl.col("E") == E) & (pl.col("subset") == subset) & (pl.col("segment") == segment))
        for name in rng.permutation(measures)[:4]:
            measure = MEASURES[name]
            part_rows = segment_rows.drop_nulls(list(measure.features))
            measure_grid = grid if measure.has_alpha else np.zeros(1)
            curves = {}
            parts = (("full", part_rows), ("a", part_rows.filter("half_a")), ("b", part_rows.filter(~pl.col("half_a"))))
            for part, frame in parts:
                values = anchor_reference(measure.evaluate({c: frame[c].to_numpy() for c in measure.features}, measure_grid))
                grade = frame["grade"].to_numpy().astype(float)
                curves[part] = scipy_curves(values, grade, CORR_TYPES)
            got = correlations.filter(
                (pl.col("E") == E) & (pl.col("subset") == subset) & (pl.col("segment") == segment) & (pl.col("measure") == name)
            )
            if len(part_rows) < 100:  # the minimum applies to the measure's own n
                assert got.height == 0
                continue
            assert got["n_samples"].unique().to_list() == [len(part_rows)]
            for row in got.iter_rows(named=True):
                curve = curves["full"][row["corr_type"]]
                if np.isnan(curve).all():
                    assert row["value"] is None and row["alpha"] is None
                    continue
                best, index = reference_first_max(curve)
                assert row["value"] == pytest.approx(best, abs=1e-9)
                if measure.has_alpha:
                    assert row["alpha"] == grid[index]
                    expected = crossfit(curves["a"][row["corr_type"]], curves["b"][row["corr_type"]])[0]
                    if np.isnan(expected):
                        assert row["value_crossfit"] is None
                    else:
                        assert row["value_crossfit"] == pytest.approx(float(expected), abs=1e-9)
                else:
                    assert row["alpha"] is None
                checked += 1
    assert checked >= 40
    constant = correlations.filter(pl.col("E") == "ME5S")
    assert constant["value"].is_null().all()


def test_full_paper_grid_on_one_segment(graded):
    correlations, _, _ = analysis_tables(
        graded, segmentation="fit", alpha_grid="l350^0.95", min_segment_samples=100, bootstrap_resamples=0, measures=["F", "T"]
    )
    grid = alpha_grid("l350^0.95")
    rows = assign_segments(add_features(graded), "fit").filter(
        (pl.col("E") == "AML12v2") & (pl.col("subset") == "A") & (pl.col("segment") == "wide") & pl.col("grade").is_not_null()
    )
    grade = rows["grade"].to_numpy().astype(float)
    for name in ("F", "T"):
        values = anchor_reference(MEASURES[name].evaluate({c: rows[c].to_numpy() for c in MEASURES[name].features}, grid))
        for corr_type in ("spearman", "kendall_b"):
            curve = scipy_curves(values, grade, [corr_type])[corr_type]
            best, index = reference_first_max(curve)
            row = correlations.filter(
                (pl.col("E") == "AML12v2") & (pl.col("subset") == "A") & (pl.col("segment") == "wide")
                & (pl.col("measure") == name) & (pl.col("corr_type") == corr_type)
            ).row(0, named=True)
            assert row["value"] == pytest.approx(best, abs=1e-9)
            assert row["alpha"] == grid[index]


# A fresh process runs an analysis job: scipy.stats (about a second of imports) is not imported
# unless a Pearson value made of rounding noise needs it.
ANALYSIS_CHILD = """
import sys
from retrieval_response.analysis.correlation_tables import analysis_tables
from retrieval_response.testing.synthetic import synthetic_analysis_table
analysis_tables(synthetic_analysis_table({"A": (12, 6, 3, (1, 2, 3, 4))}, ("E1",)), segmentation="fit",
                alpha_grid="linear:5", min_segment_samples=2, bootstrap_resamples=2)
print("scipy.stats" in sys.modules)
"""


def test_an_analysis_job_does_not_import_scipy_stats():
    proc = subprocess.run([sys.executable, "-c", ANALYSIS_CHILD], capture_output=True, text=True, env=python_env())
    assert (proc.returncode, proc.stdout.split()) == (0, ["False"]), proc.stderr[-2000:]
