"""Cosine ranking: ties, P/R by hand, skip report, invariant checks, writes."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from retrieval_response.infra.errors import InputError
from retrieval_response.ranking.cosine_ranking import cosine_rank, design_ks, rank_samples, write_ranked
from retrieval_response.tables.sample_rules import validate_ranked

pytestmark = pytest.mark.unit

VECTORS = {
    "q-east": [1.0, 0.0], "q-north": [0.0, 1.0], "q-diag": [1.0, 1.0],
    "east": [2.0, 0.0], "east2": [1.0, 0.0], "north": [0.0, 3.0], "diag": [1.0, 1.0],
    "west": [-1.0, 0.0], "south": [0.0, -1.0], "sw": [-1.0, -1.0],
}


def encode(texts, kind):
    return np.array([VECTORS[t] for t in texts], dtype=np.float32)


def texts_table(rows):
    return pl.DataFrame(rows, schema={"id": pl.String, "subset": pl.String, "q": pl.String,
                                      "p": pl.List(pl.String), "n": pl.List(pl.String)})


def test_ties_follow_the_tie_keys_not_candidate_order():
    query = np.array([[1.0, 0.0]], dtype=np.float32)
    candidates = np.array([[[0, 1], [3, 0], [0, 2], [1, 0], [5, 0]]], dtype=np.float32)
    assert cosine_rank(query, candidates, np.array([[9, 5, 1, 2, 7]], dtype=np.uint64)).tolist() == [[3, 1, 4, 2, 0]]
    assert cosine_rank(query, candidates, np.array([[0, 0, 0, 0, 0]], dtype=np.uint64)).tolist() == [[1, 3, 4, 0, 2]]


def test_precision_and_recall_against_a_hand_computed_example():
    # q-north, Nc=5, Np=3: candidates (cosine to the query)
    # 0 east (0), 1 north (1), 2 diag (0.707), 3 west (0), 4 south (-1); sw is not a candidate
    # rank = [1, 2, 3, 0, 4] (the tie east/west by tie_keys: west first); Np = 3; positives in
    # top-K: K=1 -> 1, K=2 -> 2, K=4 -> 3
    table = texts_table([{"id": "T-1", "subset": "T", "q": "q-north",
                          "p": ["east", "north", "diag"], "n": ["west", "south", "sw"]}])
    ranked, report = rank_samples(table, encode, ranker_code="E", Nc=5, Np=3, Ks=[4, 1, 2])
    row = ranked.row(0, named=True)
    assert row["rank"] == [1, 2, 3, 0, 4]
    assert row["K"] == [1, 2, 4]
    assert row["P"] == pytest.approx([1 / 1, 2 / 2, 3 / 4])
    assert row["R"] == pytest.approx([1 / 3, 2 / 3, 3 / 3])
    assert (row["E"], row["Nc"], row["Np"], row["subset"]) == ("E", 5, 3, "T")
    assert report.ranked == 1


def test_one_positive_ranks_and_passes_the_invariants(tmp_path):
    # q-north, Nc=4, Np=1: 0 diag (0.707), 1 north (1), 2 east (0), 3 west (0) -> rank [1, 0, 3, 2]
    # (the tie east/west by tie_keys: west first)
    table = texts_table([{"id": "T-1", "subset": "T", "q": "q-north",
                          "p": ["diag"], "n": ["north", "east", "west"]}])
    ranked, report = rank_samples(table, encode, ranker_code="E", Nc=4, Np=1, Ks=[1, 2, 4])
    row = ranked.row(0, named=True)
    assert row["rank"] == [1, 0, 3, 2] and report.ranked == 1
    assert row["P"] == pytest.approx([0, 1 / 2, 1 / 4]) and row["R"] == [0.0, 1.0, 1.0]
    write_ranked(ranked, tmp_path / "Nc4_Np1.parquet")


def test_candidates_are_first_np_positives_then_first_negatives():
    # Extra positives / negatives beyond Np / Nc-Np must not enter the ranking.
    table = texts_table([{"id": "T-2", "subset": "T", "q": "q-east",
                          "p": ["north", "diag", "east"], "n": ["south", "east2"]}])
    ranked, _ = rank_samples(table, encode, ranker_code="E", Nc=3, Np=2, Ks=[1, 3])
    # candidates: 0 north (0), 1 diag (0.707), 2 south (0) -> [1, 2, 0] (tie_keys: south first)
    assert ranked["rank"].to_list() == [[1, 2, 0]]
    assert ranked["P"].to_list() == [pytest.approx([1.0, 2 / 3])]


def test_queries_that_cannot_serve_the_design_are_skipped_and_counted():
    table = texts_table([
        {"id": "T-1", "subset": "T", "q": "q-east", "p": ["east", "north"], "n": ["west", "south"]},
        {"id": "T-2", "subset": "T", "q": "q-east", "p": ["east"], "n": ["west", "south", "sw"]},
        {"id": "T-3", "subset": "T", "q": "q-east", "p": ["east", "diag"], "n": ["west"]},
    ])
    ranked, report = rank_samples(table, encode, ranker_code="E", Nc=4, Np=2, Ks=[2])
    assert ranked["id"].to_list() == ["T-1"]
    assert report.as_dict() == {"queries": 3, "ranked": 1,
                                "skipped": {"too_few_positives": 1, "too_few_negatives": 1}}


def test_no_serving_query_gives_an_empty_table_with_the_ranked_schema():
    table = texts_table([{"id": "T-1", "subset": "T", "q": "q-east", "p": ["east"], "n": ["west"]}])
    ranked, report = rank_samples(table, encode, ranker_code="E", Nc=3, Np=2, Ks=[1])
    assert ranked.height == 0 and report.ranked == 0
    assert ranked.schema["rank"] == pl.List(pl.Int32)


@pytest.mark.parametrize("Nc, Np, Ks", [(5, 0, [1]), (5, 5, [1]), (5, 2, [6]), (5, 2, [0]), (5, 2, [])])
def test_bad_designs_and_ks_are_rejected(Nc, Np, Ks):
    with pytest.raises(ValueError):
        design_ks(Ks, Nc, Np)


def good_ranked():
    table = texts_table([
        {"id": "T-1", "subset": "T", "q": "q-north", "p": ["east", "north"], "n": ["west", "south", "diag"]},
        {"id": "T-2", "subset": "T", "q": "q-diag", "p": ["east", "south"], "n": ["north", "sw", "west"]},
    ])
    return rank_samples(table, encode, ranker_code="E", Nc=5, Np=2, Ks=[1, 2, 3, 5])[0]


def test_a_good_table_passes_and_is_written(tmp_path):
    ranked = good_ranked()
    path = tmp_path / "ranked" / "Nc5_Np2.parquet"
    write_ranked(ranked, path)
    assert pl.read_parquet(path).equals(ranked)


def _break(expr_by_column):
    return good_ranked().with_columns(**expr_by_column)


@pytest.mark.parametrize("broken, rule", [
    ({"P": pl.col("P").list.head(2)}, "P and R must be as long as K"),
    ({"rank": pl.col("rank").list.head(4)}, "rank must be a permutation of 0..Nc-1"),
    ({"rank": pl.lit([0, 0, 1, 2, 3], dtype=pl.List(pl.Int32))}, "rank must not repeat a candidate"),
    ({"Np": pl.lit(0, dtype=pl.Int32)}, "need 1 <= Np <= Nc"),
    ({"K": pl.col("K").list.reverse()}, "K must be increasing values in 1..Nc"),
    ({"R": pl.col("R").list.eval(pl.element() * 0.5)}, "P and R must equal n_p/K and n_p/Np"),
    ({"id": pl.lit("T-1")}, "duplicate (id, E, Nc, Np)"),
])
def test_invariant_violations_name_the_id_and_rule(broken, rule, tmp_path):
    path = tmp_path / "out.parquet"
    with pytest.raises(InputError) as caught:
        write_ranked(_break(broken), path)
    assert "id T-" in str(caught.value) and rule in str(caught.value)
    assert not path.exists()


def test_precision_that_disagrees_with_rank_is_caught():
    swapped = good_ranked().with_columns(rank=pl.col("rank").list.reverse())
    with pytest.raises(InputError, match="P and R must equal n_p/K"):
        validate_ranked(swapped, "x.parquet")
