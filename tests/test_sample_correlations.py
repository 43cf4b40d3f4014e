"""Exactness of the continuous-target kernel and of the tie rule against scipy on expanded samples."""

from __future__ import annotations

import numpy as np
import pytest

from analysis_reference import anchor_reference
from retrieval_response.analysis.correlations import (
    CORR_TYPES,
    TIE_ULPS,
    sample_correlation,
    table_correlations,
    tie_anchors,
)
from retrieval_response.analysis.sample_correlations import sample_correlations

pytestmark = pytest.mark.unit


def random_case(seed: int):
    """Cell values with ties across cells, targets mixing tied and continuous values, weighted tables."""
    rng = np.random.default_rng(seed)
    n_cells, n, n_alphas, n_groups = int(rng.integers(1, 30)), int(rng.integers(1, 150)), int(rng.integers(1, 7)), 12
    values = rng.integers(0, 6, size=(n_alphas, n_cells)) / rng.integers(1, 4, size=(n_alphas, 1))
    cell = rng.integers(0, n_cells, n)
    target = np.where(rng.random(n) < 0.5, rng.integers(0, 4, n) / 3, rng.normal(size=n))
    group = rng.integers(0, n_groups, n)
    weights = rng.integers(0, 3, size=(4, n_groups)).astype(float)
    weights[0] = 1.0
    weights[3, : n_groups // 2] = 0.0  # a half: every sample of some groups left out
    return values, cell, target, group, weights


def check_against_scipy(got, values, cell, target, group, weights, tie_ulps=0):
    reference_values = anchor_reference(values, tie_ulps) if tie_ulps else values
    for t in range(weights.shape[0]):
        repeats = weights[t, group].astype(int)
        y = np.repeat(target, repeats)
        for a in range(values.shape[0]):
            x = np.repeat(reference_values[a, cell], repeats)
            for corr_type in CORR_TYPES:
                expected = sample_correlation(x, y, corr_type)
                assert np.isnan(got[corr_type][t, a]) == np.isnan(expected), (t, a, corr_type)
                if not np.isnan(expected):
                    assert got[corr_type][t, a] == pytest.approx(expected, abs=1e-9), (t, a, corr_type)


@pytest.mark.parametrize("method", ["matrix", "sweep", "auto"])
@pytest.mark.parametrize("seed", range(12))
def test_sample_kernel_equals_scipy_on_expanded_samples(seed, method):
    values, cell, target, group, weights = random_case(seed)
    got = sample_correlations(values, cell, target, group, weights, method=method)
    check_against_scipy(got, values, cell, target, group, weights)


@pytest.mark.parametrize("seed", range(6))
def test_count_kernel_with_non_integer_target_values(seed):
    rng = np.random.default_rng(100 + seed)
    target_values = np.sort(rng.choice(np.linspace(0.0, 1.0, 13), size=int(rng.integers(2, 8)), replace=False))
    n_cells = int(rng.integers(2, 25))
    values = rng.integers(0, 5, size=(3, n_cells)) / 4
    counts = rng.integers(0, 4, size=(2, n_cells, len(target_values))).astype(float)
    got = table_correlations(values, counts, target_values)
    for t in range(2):
        repeats = counts[t].ravel().astype(int)
        y = np.repeat(np.tile(target_values, n_cells), repeats)
        for a in range(3):
            x = np.repeat(np.repeat(values[a], len(target_values)), repeats)
            for corr_type in CORR_TYPES:
                expected = sample_correlation(x, y, corr_type)
                assert np.isnan(got[corr_type][t, a]) == np.isnan(expected)
                if not np.isnan(expected):
                    assert got[corr_type][t, a] == pytest.approx(expected, abs=1e-9)


def rounding_spread(rng, base: np.ndarray) -> np.ndarray:
    """``base`` with each value moved by 0..2 units in the last place, up or down."""
    out = base.copy()
    for _ in range(2):
        step = rng.integers(-1, 2, size=base.shape)
        out = np.where(step > 0, np.nextafter(out, np.inf), np.where(step < 0, np.nextafter(out, -np.inf), out))
    return out


@pytest.mark.parametrize("seed", range(8))
def test_values_spread_by_rounding_tie_in_both_kernels(seed):
    rng = np.random.default_rng(200 + seed)
    values, cell, target, group, weights = random_case(seed)
    spread = rounding_spread(rng, values + 0.1)
    assert not np.array_equal(spread, values + 0.1)
    got = sample_correlations(spread, cell, target, group, weights, tie_ulps=TIE_ULPS)
    check_against_scipy(got, spread, cell, target, group, weights, tie_ulps=TIE_ULPS)
    # the anchored values tie exactly where the unperturbed ones do
    anchored = tie_anchors(spread)
    assert np.array_equal(anchored[:, :, None] == anchored[:, None, :], values[:, :, None] == values[:, None, :])
    counts = rng.integers(0, 3, size=(1, values.shape[1], 3)).astype(float)
    from_counts = table_correlations(spread, counts, np.array([1.0, 2.0, 3.0]), tie_ulps=TIE_ULPS)
    from_ties = table_correlations(values + 0.1, counts, np.array([1.0, 2.0, 3.0]))
    for corr_type in CORR_TYPES:
        np.testing.assert_allclose(from_counts[corr_type], from_ties[corr_type], atol=1e-9)


@pytest.mark.parametrize("seed", range(10))
def test_tie_anchors_group_within_four_ulps_of_the_anchor_only(seed):
    rng = np.random.default_rng(300 + seed)
    magnitude = 10.0 ** rng.integers(-8, 4)
    base = np.sort(rng.choice(np.arange(1, 40), size=10, replace=False)) * magnitude * rng.choice([-1.0, 1.0])
    noisy = rounding_spread(rng, np.repeat(base, 5))
    anchored = tie_anchors(noisy)
    assert np.array_equal(anchored, anchor_reference(noisy)[0])
    # each base value's copies collapse to one value, distinct base values stay apart
    assert len(np.unique(anchored)) == len(np.unique(base))
    # far apart values never merge, even in a chain of small steps
    chain = 1.0 + np.arange(20) * 3 * np.finfo(float).eps
    assert len(np.unique(tie_anchors(chain))) > 1
    assert np.array_equal(tie_anchors(noisy, 0), noisy)


def test_degenerate_tables_are_nan():
    values = np.array([[0.1, 0.2]])
    cell = np.array([0, 1, 1])
    group = np.arange(3)
    constant_target = sample_correlations(values, cell, np.array([2.0, 2.0, 2.0]), group, np.ones((1, 3)))
    one_sample = sample_correlations(values, cell, np.array([1.0, 2.0, 3.0]), group, np.array([[1.0, 0.0, 0.0]]))
    constant_measure = sample_correlations(np.array([[0.3, 0.3]]), cell, np.array([1.0, 2.0, 3.0]), group, np.ones((1, 3)))
    for got in (constant_target, one_sample, constant_measure):
        assert all(np.isnan(got[t]).all() for t in CORR_TYPES)
    with pytest.raises(ValueError, match="method"):
        sample_correlations(values, cell, np.ones(3), group, np.ones((1, 3)), method="fast")
    with pytest.raises(ValueError, match="integers"):
        sample_correlations(values, cell, np.array([1.0, 2.0, 3.0]), group, np.full((1, 3), 0.5))
