"""Measures on hand-computed examples (docs/METHODS.md#measures)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from retrieval_response.measures.alpha import alpha_grid
from retrieval_response.measures.counts import partner_positives, positives_in_top_2k
from retrieval_response.measures.features import add_features
from retrieval_response.measures.formulas import (
    f_estimated,
    f_estimated_partner,
    f_measure,
    ndcg_at_k,
    ndcg_paper,
    t_measure,
    t_unnormalised,
)

pytestmark = pytest.mark.unit


def test_paper_alpha_grid_has_702_sorted_values_crowded_at_the_ends():
    grid = alpha_grid("l350^0.95")
    assert len(grid) == 702
    assert grid[0] == 0.0 and grid[-1] == 1.0 and np.all(np.diff(grid) > 0)
    assert grid[1] == pytest.approx(0.95**350) and grid[-2] == pytest.approx(1 - 0.95**350)
    assert np.sum((grid > 0.01) & (grid < 0.99)) < 200


def test_linear_grid_and_bad_spec():
    assert alpha_grid("linear:5").tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    with pytest.raises(ValueError, match="alpha grid"):
        alpha_grid("l350")


def test_f_and_t_on_hand_examples():
    alpha = np.array([0.0, 0.5, 1.0])
    # n_p=2 of K=4, Np=3: R = 2/3 at alpha 0, P = 1/2 at alpha 1, 2/(2 + 1.5) at 0.5
    assert f_measure(np.array([2]), np.array([4]), np.array([3]), alpha)[:, 0] == pytest.approx([2 / 3, 2 / 3.5, 0.5])
    # T = (1-a) n_p - a n_n / K; T_u = (1-a) n_p - a n_n
    assert t_measure(np.array([2]), np.array([4]), alpha)[:, 0] == pytest.approx([2.0, 0.75, -0.5])
    assert t_unnormalised(np.array([2]), np.array([4]), alpha)[:, 0] == pytest.approx([2.0, 0.0, -2.0])


def test_f_estimated_is_zero_without_positives_and_partner_adds_epsilon_in_paper_mode_only():
    alpha = np.array([0.0, 0.5])
    assert f_estimated(np.array([0, 1]), np.array([2, 2]), np.array([0, 2]), alpha).tolist() == [[0.0, 0.5], [0.0, 0.5]]
    paper = f_estimated_partner(np.array([1]), np.array([2]), np.array([2]), alpha, "paper")[:, 0]
    assert paper == pytest.approx([0.5, 0.5]) and paper[0] < 0.5
    # exact: the epsilon -> 0 limit, 0 where n_p = 0 (also the 0/0 of n_p' = 0 at a = 0)
    exact = f_estimated_partner(np.array([1, 0, 0, 2]), np.array([2, 2, 3, 4]), np.array([2, 0, 1, 3]), alpha)
    assert exact.tolist() == [[0.5, 0.0, 0.0, 2 / 3], [0.5, 0.0, 0.0, 2 / 3.5]]
    with pytest.raises(ValueError, match="compat"):
        f_estimated_partner(np.array([1]), np.array([2]), np.array([2]), alpha, "fast")


@pytest.fixture
def one_query():
    """One ranked sample: Nc=6, Np=3, rank [3,0,4,1,5,2] (indexes < 3 are positives); graded at K 1,2,3,4."""
    rank = [3, 0, 4, 1, 5, 2]
    ranked = pl.DataFrame({"id": ["A-1"], "E": ["X"], "Nc": [6], "Np": [3], "rank": [rank]})
    K = [1, 2, 3, 4]
    graded = pl.DataFrame(
        {
            "id": ["A-1"] * 4, "E": ["X"] * 4, "Nc": [6] * 4, "Np": [3] * 4, "K": K,
            "inK": [[int(r < 3) for r in rank[:k]] for k in K], "grade": [1, 2, 3, 4],
        }
    )
    return graded, ranked


def test_f_e_variants_on_hand_example(one_query):
    graded, ranked = one_query
    # top 2K: K=1 -> [3,0] 1 positive; K=2 -> [3,0,4,1] 2; K=3 -> all 6: 3; K=4 -> capped at Nc=6: 3
    assert positives_in_top_2k(graded, ranked).to_list() == [1, 2, 3, 3]
    # partner K'=2K: K=1 -> K=2 (n_p 1), K=2 -> K=4 (n_p 2), K=3 and K=4 have none
    assert partner_positives(graded).to_list() == [1, 2, None, None]
    features = add_features(graded, ranked)
    assert features["n_p"].to_list() == [0, 1, 1, 2]
    f_e = f_estimated(features["n_p"].to_numpy(), features["K"].to_numpy(), features["np_2K"].to_numpy(), np.array([0.5]))[0]
    assert f_e == pytest.approx([0.0, 1 / 2, 1 / 3, 2 / 3.5])


def test_np_2k_column_is_used_when_no_ranked_table(one_query):
    graded, _ = one_query
    features = add_features(graded.with_columns(np_2K=pl.Series([1, 2, 3, 3], dtype=pl.Int32)))
    assert features["np_2K"].dtype == pl.Int64 and features["np_2K"].to_list() == [1, 2, 3, 3]


def test_ndcg_paper_and_standard_on_hand_examples():
    inK = pl.Series([[0, 1, 1], [0, 0], [1, 1], [1, 0, 0, 0]])
    Np = np.array([4, 3, 2, 2])
    d2, d3 = 1 / math.log2(3), 1 / math.log2(4)
    paper = ndcg_paper(inK)
    standard = ndcg_at_k(inK, Np, inK.list.len().to_numpy())
    # paper: ideal over the n_p retrieved positives; standard: over min(Np, K)
    assert paper == pytest.approx([(d2 + d3) / (1 + d2), 0.0, 1.0, 1.0])
    assert standard == pytest.approx([(d2 + d3) / (1 + d2 + d3), 0.0, 1.0, 1 / (1 + d2)])
    assert paper[2] == 1.0  # exactly: same summation order for DCG and IDCG
