"""Ranked-list metrics (docs/METHODS.md#ranked-list-metric-contract): hand examples, contract edge cases, every error rule,
and a cross-check against trec_eval through ir_measures on random cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from retrieval_response.ranking.evaluator import (
    METRIC_NAMES,
    aggregate,
    conventions,
    evaluate_run,
    ranked_metrics,
)

pytestmark = pytest.mark.unit

ir_measures = pytest.importorskip("ir_measures")


def test_hand_example_graded():
    qrels = {"a": 2, "b": 0, "c": 1, "d": 3, "e": 0}
    m = ranked_metrics(["a", "x", "b", "c", "y"], qrels, 3)
    assert m["P@K"] == pytest.approx(1 / 3)
    assert m["P_upper@K"] == pytest.approx(2 / 3)  # "x" unjudged
    assert m["R@K"] == pytest.approx(1 / 3)  # R = {a, c, d}
    assert m["RR@K"] == 1.0
    assert m["AP@K"] == pytest.approx(1 / 3)
    ideal = 7 + 3 / math.log2(3) + 1 / 2
    assert m["nDCG@K"] == pytest.approx(3 / ideal)
    assert m["bpref@K"] == pytest.approx(1 / 3)  # only "a" retrieved within k, above any non-relevant
    assert m["judged@K"] == pytest.approx(2 / 3)
    assert (m["k"], m["n_retrieved"], m["n_relevant"]) == (3, 3, 3)


def test_hand_example_bpref_and_ap_full_prefix():
    qrels = {"a": 2, "b": 0, "c": 1, "d": 3, "e": 0}
    m = ranked_metrics(["a", "x", "b", "c", "y"], qrels, 5)
    # a: no non-relevant above -> 1; c: 1 non-relevant above -> 1 - 1/min(2, 3)
    assert m["bpref@K"] == pytest.approx((1 + 0.5) / 3)
    assert m["AP@K"] == pytest.approx((1 / 1 + 2 / 4) / 3)
    assert m["RR@K"] == 1.0


def test_precision_denominator_is_k_even_for_short_lists():
    m = ranked_metrics(["a"], {"a": 1, "b": 1}, 10)
    assert m["P@K"] == pytest.approx(0.1)
    assert m["R@K"] == pytest.approx(0.5)
    assert m["n_retrieved"] == 1


def test_ties_are_not_broken_in_favour_of_relevant_documents():
    first_wrong = ranked_metrics(["n", "r"], {"n": 0, "r": 1}, 2)
    assert first_wrong["RR@K"] == 0.5


def test_unjudged_counts_as_not_relevant_with_bounds():
    m = ranked_metrics(["u1", "r", "u2", "n"], {"r": 1, "n": 0}, 4)
    assert m["P@K"] == pytest.approx(1 / 4)
    assert m["P_upper@K"] == pytest.approx(3 / 4)
    assert m["judged@K"] == pytest.approx(2 / 4)
    assert m["RR@K"] == pytest.approx(1 / 2)


def test_query_without_known_positive_is_undefined_not_zero():
    m = ranked_metrics(["a", "b"], {"a": 0}, 2)
    for name in ("R@K", "RR@K", "AP@K", "nDCG@K", "bpref@K"):
        assert m[name] is None
    assert m["P@K"] == 0.0
    assert m["judged@K"] == pytest.approx(0.5)


def test_empty_result_list_with_positives_scores_zero():
    m = ranked_metrics([], {"a": 1, "b": 0}, 5)
    for name in ("P@K", "P_upper@K", "R@K", "RR@K", "AP@K", "nDCG@K", "bpref@K"):
        assert m[name] == 0.0
    assert m["judged@K"] is None


def test_relevance_level_changes_binary_metrics_not_gain():
    qrels = {"a": 1, "b": 2}
    low = ranked_metrics(["a", "b"], qrels, 2)
    high = ranked_metrics(["a", "b"], qrels, 2, relevance_level=2)
    assert low["P@K"] == 1.0 and high["P@K"] == 0.5
    assert high["RR@K"] == 0.5
    assert low["nDCG@K"] == pytest.approx(high["nDCG@K"])


def test_conventions_in_every_output():
    stated = conventions()
    assert stated["gain"] == "2^grade - 1"
    assert "log2(i + 1)" in stated["discount"]
    m = ranked_metrics(["a"], {"a": 1}, 1)
    assert m["conventions"] == stated
    assert aggregate([m])["conventions"] == stated
    stated["gain"] = "changed"
    assert conventions()["gain"] == "2^grade - 1"


@pytest.mark.parametrize(
    ("ranking", "qrels", "k", "kwargs", "message"),
    [
        (["a"], {"a": 1}, 0, {}, "k = 0: must be an integer >= 1"),
        (["a"], {"a": 1}, 2.0, {}, "k = 2.0: must be an integer >= 1"),
        (["a"], {"a": 1}, True, {}, "k = True"),
        (["a"], {"a": 1}, 1, {"relevance_level": 0}, "relevance_level = 0"),
        (["a"], {"a": -1}, 1, {}, "qrels['a'] = -1: grades must be integers >= 0"),
        (["a"], {"a": 1.5}, 1, {}, "qrels['a'] = 1.5: grades must be integers >= 0"),
        (["a"], {"a": "1"}, 1, {}, "grades must be integers"),
        (["a"], {3: 1}, 1, {}, "qrels key 3: ids must be strings"),
        (["a", "b", "a"], {"a": 1}, 1, {}, "ranking[2] = 'a': repeated id (first at ranking[0])"),
        (["a", 7], {"a": 1}, 1, {}, "ranking[1] = 7: ids must be strings"),
        ("abc", {"a": 1}, 1, {}, "must be a sequence of string ids"),
        (["a"], [("a", 1)], 1, {}, "must be a mapping id -> grade"),
    ],
)
def test_rejects_invalid_input(ranking, qrels, k, kwargs, message):
    with pytest.raises(ValueError) as error:
        ranked_metrics(ranking, qrels, k, query_id="q7", **kwargs)
    assert message in str(error.value)
    assert str(error.value).startswith("query 'q7': ")


def test_repeated_id_beyond_cutoff_is_still_an_error():
    with pytest.raises(ValueError, match="repeated id"):
        ranked_metrics(["a", "b", "c", "b"], {"a": 1}, 2)


def test_aggregate_counts_contributing_queries():
    per_query = [
        ranked_metrics(["a", "b"], {"a": 1}, 2),  # RR 1
        ranked_metrics(["x", "b"], {"b": 1}, 2),  # RR 0.5
        ranked_metrics(["a"], {"a": 0}, 2),  # no positive: RR undefined
    ]
    agg = aggregate(per_query)
    assert agg["n_queries"] == 3
    assert agg["n_RR@K"] == 2
    assert agg["RR@K"] == pytest.approx(0.75)
    assert agg["n_P@K"] == 3
    assert agg["P@K"] == pytest.approx((0.5 + 0.5 + 0) / 3)
    assert agg["k"] == 2
    assert set(METRIC_NAMES) <= agg.keys()


def test_aggregate_empty_and_mixed_settings():
    empty = aggregate([])
    assert empty["n_queries"] == 0 and empty["nDCG@K"] is None and empty["n_nDCG@K"] == 0
    with pytest.raises(ValueError, match="different"):
        aggregate([ranked_metrics(["a"], {"a": 1}, 1), ranked_metrics(["a"], {"a": 1}, 2)])


def test_evaluate_run_scores_missing_queries_and_rejects_unknown_ones():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    scores = evaluate_run({"q1": ["a"]}, qrels, 3)
    assert scores["q1"]["R@K"] == 1.0
    assert scores["q2"]["R@K"] == 0.0 and scores["q2"]["n_retrieved"] == 0
    with pytest.raises(ValueError, match="query 'q9': in the run but not in the qrels"):
        evaluate_run({"q9": ["a"]}, qrels, 3)
    with pytest.raises(ValueError, match="query 'q1': ranking\\[1\\]"):
        evaluate_run({"q1": ["a", "a"]}, qrels, 3)


def _random_case(rng: np.random.Generator, relevance_level: int):
    pool = [f"d{i}" for i in range(int(rng.integers(1, 30)))]
    judged = rng.random(len(pool)) < 0.6
    qrels = {d: int(rng.integers(0, 4)) for d, j in zip(pool, judged, strict=False) if j}
    ranking = [str(d) for d in rng.permutation(pool)[: int(rng.integers(1, len(pool) + 1))]]
    k = int(rng.integers(1, 15))
    has_positive = any(grade >= relevance_level for grade in qrels.values())
    return ranking, qrels, k, has_positive


@pytest.mark.parametrize("relevance_level", [1, 2])
def test_matches_trec_eval_via_ir_measures_on_random_cases(relevance_level):
    """trec_eval agrees where the conventions agree: run scores strictly decreasing (no tie
    re-sorting), queries with a known positive, graded nDCG with gains 2^g - 1, bpref on
    the same truncated run."""
    from ir_measures import AP, RR, Bpref, P, R, nDCG

    rng = np.random.default_rng(20250512 + relevance_level)
    compared = 0
    for _ in range(250):
        ranking, qrels, k, has_positive = _random_case(rng, relevance_level)
        if not has_positive:
            continue
        ours = ranked_metrics(ranking, qrels, k, relevance_level=relevance_level)
        run = {"q": {doc_id: float(1000 - i) for i, doc_id in enumerate(ranking[:k])}}
        measures = {
            "P@K": P(rel=relevance_level) @ k,
            "R@K": R(rel=relevance_level) @ k,
            "RR@K": RR(rel=relevance_level) @ k,
            "AP@K": AP(rel=relevance_level) @ k,
            "nDCG@K": nDCG(gains={g: 2**g - 1 for g in range(4)}) @ k,
            "bpref@K": Bpref(rel=relevance_level),
        }
        theirs = ir_measures.calc_aggregate(list(measures.values()), {"q": qrels}, run)
        for name, measure in measures.items():
            assert ours[name] == pytest.approx(theirs[measure], abs=1e-12), (name, ranking, qrels, k)
        compared += 1
    assert compared > 100


def test_binary_ndcg_matches_trec_eval_linear_gain():
    """With 0/1 grades, 2^g - 1 = g, so trec_eval's default nDCG@k (gain = grade) agrees;
    with graded judgments it does not (documented difference)."""
    from ir_measures import nDCG

    rng = np.random.default_rng(7)
    for _ in range(100):
        ranking, qrels, k, _ = _random_case(rng, 1)
        binary = {d: min(g, 1) for d, g in qrels.items()}
        if not any(binary.values()):
            continue
        run = {"q": {doc_id: float(1000 - i) for i, doc_id in enumerate(ranking[:k])}}
        theirs = ir_measures.calc_aggregate([nDCG @ k], {"q": binary}, run)[nDCG @ k]
        assert ranked_metrics(ranking, binary, k)["nDCG@K"] == pytest.approx(theirs, abs=1e-12)
    graded = {"a": 1, "b": 3}
    run = {"q": {"a": 2.0, "b": 1.0}}
    linear = ir_measures.calc_aggregate([nDCG @ 2], {"q": graded}, run)[nDCG @ 2]
    assert ranked_metrics(["a", "b"], graded, 2)["nDCG@K"] != pytest.approx(linear)
