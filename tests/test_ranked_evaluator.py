"""The ranked-list evaluator (measures.ranked): the contract's cases by hand, the input it refuses,
its run forms and aggregates, and its values against trec_eval (through ir_measures and
pytrec_eval) on random graded qrels with unjudged documents, short and empty rankings."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from retrieval_response.measures import evaluate_run, ranked_metrics
from retrieval_response.measures.ranked import MEASURE_NAMES, run_order

pytestmark = pytest.mark.unit

JUDGMENTS = {"a": 2, "b": 1, "c": 0, "z": 1}
"""One query: a, b and z relevant (|R| = 3, z never retrieved), c judged not relevant."""
UNDEFINED_WITHOUT_POSITIVE = ("R@K", "RR@K", "AP@K", "nDCG@K")


def test_a_hand_worked_query_with_unjudged_documents():
    """u1 and u2 unjudged (not relevant; the optimistic bound counts them), z relevant but not
    retrieved (in |R| and in the ideal DCG)."""
    got = ranked_metrics(["u1", "a", "c", "b", "u2"], JUDGMENTS, 5)
    ideal = 3 + 1 / math.log2(3) + 1 / 2  # gains 2^g - 1 of the grades 2, 1, 1, best first
    assert got == pytest.approx({
        "P@K": 2 / 5, "R@K": 2 / 3, "RR@K": 1 / 2, "AP@K": (1 / 2 + 2 / 4) / 3,
        "nDCG@K": (3 / math.log2(3) + 1 / math.log2(5)) / ideal, "judged@K": 3 / 5, "P_upper@K": 4 / 5,
    })
    assert list(got) == list(MEASURE_NAMES)
    first = ranked_metrics(["u1", "a", "c", "b", "u2"], JUDGMENTS, 1)
    assert first == pytest.approx({"P@K": 0, "R@K": 0, "RR@K": 0, "AP@K": 0, "nDCG@K": 0, "judged@K": 0,
                                   "P_upper@K": 1})


@pytest.mark.parametrize("ranking", [["a", "x"], ["x"], ["c", "b", "a", "u"]], ids=["2 of 5", "1 of 5", "4 of 5"])
def test_a_list_shorter_than_k_divides_p_by_k_and_judged_by_what_came_back(ranking):
    got = ranked_metrics(ranking, JUDGMENTS, 5)
    relevant = sum(JUDGMENTS.get(d, 0) > 0 for d in ranking)
    judged = sum(d in JUDGMENTS for d in ranking)
    assert got["P@K"] == pytest.approx(relevant / 5) and got["R@K"] == pytest.approx(relevant / 3)
    assert got["judged@K"] == pytest.approx(judged / len(ranking))
    assert got["P_upper@K"] == pytest.approx((relevant + len(ranking) - judged) / 5)
    deeper = ranked_metrics(ranking, JUDGMENTS, 50)  # the same prefix: only the denominator K of P changes
    assert (deeper["P@K"], deeper["P_upper@K"]) == pytest.approx((got["P@K"] / 10, got["P_upper@K"] / 10))
    assert {n: deeper[n] for n in ("R@K", "RR@K", "AP@K", "nDCG@K", "judged@K")} == pytest.approx(
        {n: got[n] for n in ("R@K", "RR@K", "AP@K", "nDCG@K", "judged@K")})


@pytest.mark.parametrize("k", [1, 3, 10])
def test_an_empty_list_with_positives_scores_0_and_its_judged_fraction_is_undefined(k):
    got = ranked_metrics([], JUDGMENTS, k)
    assert got == {**dict.fromkeys(MEASURE_NAMES, 0.0), "judged@K": None}


@pytest.mark.parametrize("judgments", [{}, {"c": 0}, {"a": 0, "b": 0}], ids=["none", "one judged 0", "all 0"])
@pytest.mark.parametrize("ranking", [[], ["a", "u"]], ids=["empty", "two"])
def test_without_a_positive_r_rr_ap_and_ndcg_are_undefined_not_0(judgments, ranking):
    got = ranked_metrics(ranking, judgments, 3)
    assert all(got[name] is None for name in UNDEFINED_WITHOUT_POSITIVE)
    assert got["P@K"] == 0.0
    assert got["P_upper@K"] == pytest.approx(sum(d not in judgments for d in ranking) / 3)
    assert got["judged@K"] == (None if not ranking else pytest.approx(sum(d in judgments for d in ranking) / 2))


def test_the_order_given_is_final():
    """Swapping a relevant and a non-relevant id changes RR, AP and nDCG: no re-sorting."""
    before, after = ranked_metrics(["c", "a"], JUDGMENTS, 2), ranked_metrics(["a", "c"], JUDGMENTS, 2)
    assert before["P@K"] == after["P@K"] and before["RR@K"] == 0.5 and after["RR@K"] == 1.0
    assert before["AP@K"] < after["AP@K"] and before["nDCG@K"] < after["nDCG@K"]


def one_line_error(call, *args, match: str) -> str:
    with pytest.raises(ValueError, match=match) as caught:
        call(*args)
    assert "\n" not in str(caught.value)
    return str(caught.value)


@pytest.mark.parametrize("ranking, where", [(["a", "b", "a"], "ranking[2]"), (["a", "a"], "ranking[1]"),
                                            (["u", "b", "c", "d", "u"], "ranking[4]")],
                         ids=["in the prefix", "adjacent", "beyond K"])
def test_a_repeated_id_is_refused_wherever_it_stands(ranking, where):
    message = one_line_error(ranked_metrics, ranking, JUDGMENTS, 2, match="repeated id")
    assert message.startswith(where)


@pytest.mark.parametrize("k", [0, -1, 1.0, 2.5, True, "3", None])
def test_a_cutoff_that_is_not_an_integer_of_at_least_1_is_refused(k):
    one_line_error(ranked_metrics, ["a"], JUDGMENTS, k, match="cutoff must be an integer >= 1")
    one_line_error(evaluate_run, {"q": ["a"]}, {"q": JUDGMENTS}, [5, k], match="cutoff must be an integer >= 1")


@pytest.mark.parametrize("grade", [True, False, 1.5, 2.0, "2", None, -1, 101, 2**70])
def test_a_grade_that_is_not_an_integer_in_range_is_refused(grade):
    message = one_line_error(ranked_metrics, ["a"], {"a": 1, "b": grade}, 3, match="a grade is an integer in 0..100")
    assert message.startswith("judgments['b'] = ")
    message = one_line_error(evaluate_run, {}, {"q1": {"a": 1}, "q2": {"b": grade}}, 3, match="a grade is an integer")
    assert message.startswith("qrels['q2']['b'] = ")


@pytest.mark.parametrize("ranking, match", [
    (["a", 1], "ranking\\[1\\] = 1: a ranking holds document ids"),
    ([None], "ranking\\[0\\] = None"),
    ([b"a"], "ranking\\[0\\] = b'a'"),
    ("ab", "ranking is a str"),
    ({"a", "b"}, "ranking is a set"),
    (None, "ranking is a NoneType"),
], ids=["int", "None", "bytes", "a str", "a set", "None list"])
def test_a_ranking_holding_something_other_than_str_ids_is_refused(ranking, match):
    one_line_error(ranked_metrics, ranking, JUDGMENTS, 3, match=match)


@pytest.mark.parametrize("judgments, match", [([("a", 1)], "judgments is a list"), ({1: 1}, "judgments key 1")],
                         ids=["not a mapping", "a key that is not str"])
def test_judgments_that_are_not_a_mapping_of_str_ids_are_refused(judgments, match):
    one_line_error(ranked_metrics, ["a"], judgments, 3, match=match)


def as_frames(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The run and qrels as frames: rows shuffled, scores descending with the ranking, one tie
    broken by the rank column."""
    rows = [(q, d, float(len(r) - i) if i != 1 else float(len(r)), i + 1) for q, r in run.items() for i, d in enumerate(r)]
    order = np.random.default_rng(0).permutation(len(rows))
    run_frame = pl.DataFrame([rows[i] for i in order], schema=["qid", "docid", "score", "rank"], orient="row")
    qrels_frame = pl.DataFrame([(q, d, g) for q, j in qrels.items() for d, g in j.items()],
                               schema={"qid": pl.String, "docid": pl.String, "grade": pl.Int64}, orient="row")
    return run_frame, qrels_frame


RUN = {"q1": ["u1", "a", "c", "b", "u2"], "q2": ["x"], "q4": ["a", "b"]}
QRELS = {"q1": JUDGMENTS, "q2": {"x": 0}, "q3": {"a": 1}, "q4": {"b": 3, "c": 1}}


def test_a_run_scores_every_judged_query_and_its_means_say_how_many_queries_contributed():
    result = evaluate_run(RUN, QRELS, [5, 1])
    per_query = result.per_query
    assert per_query.select("qid", "K").rows() == [(q, k) for q in QRELS for k in (1, 5)]
    for row in per_query.iter_rows(named=True):  # the same values as one query at a time
        assert {n: row[n] for n in MEASURE_NAMES} == ranked_metrics(RUN.get(row["qid"], []), QRELS[row["qid"]], row["K"])
    for row in result.aggregate.iter_rows(named=True):
        values = [v for v in per_query.filter(pl.col("K") == row["K"])[row["measure"]].to_list() if v is not None]
        assert row["queries"] == len(values) and row["mean"] == pytest.approx(sum(values) / len(values))
    counts = {r["measure"]: r["queries"] for r in result.aggregate.filter(pl.col("K") == 5).iter_rows(named=True)}
    # q2 has no positive; q3 was not ranked (an empty list: 0 where defined, judged undefined)
    assert counts == {"P@K": 4, "R@K": 3, "RR@K": 3, "AP@K": 3, "nDCG@K": 3, "judged@K": 3, "P_upper@K": 4}
    assert result.conventions["nDCG@K"].startswith("DCG@K / IDCG@K; gain 2^grade - 1, discount log2(i + 1)")


def test_a_run_and_qrels_as_frames_give_what_the_mappings_give():
    run_frame, qrels_frame = as_frames(RUN, QRELS)
    mapped, framed = evaluate_run(RUN, QRELS, [1, 2, 5]), evaluate_run(run_frame, qrels_frame, [1, 2, 5])
    # the frame's q3 has no judgment row order of its own: compare by query
    assert framed.per_query.sort("qid", "K").equals(mapped.per_query.sort("qid", "K"))
    assert framed.aggregate.equals(mapped.aggregate)


def test_run_order_is_descending_score_then_rank_then_row_order():
    run = pl.DataFrame({"qid": ["q"] * 5, "docid": list("abcde"), "score": [1.0, 2.0, 2.0, 2.0, 3.0],
                        "rank": [5, 3, 2, 3, 1]})
    assert run_order(run)["docid"].to_list() == ["e", "c", "b", "d", "a"]
    assert run_order(run.drop("score"))["docid"].to_list() == ["e", "c", "b", "d", "a"]
    assert run_order(run.drop("rank"))["docid"].to_list() == ["e", "b", "c", "d", "a"]


@pytest.mark.parametrize("run, qrels, match", [
    ({"q9": ["a"]}, QRELS, "run query 'q9' has no judgments in the qrels"),
    ({"q1": ["a", "b", "a"]}, QRELS, "run\\['q1'\\]\\[2\\] = 'a': repeated id"),
    ({"q1": "ab"}, QRELS, "run\\['q1'\\] is a str"),
    ([("q1", "a")], QRELS, "run is a list"),
    ({1: ["a"]}, QRELS, "run key 1: query ids must be str"),
    (RUN, {"q1": [("a", 1)]}, "qrels\\['q1'\\] is a list"),
], ids=["unknown query", "repeated id", "a str ranking", "not a mapping", "int query id", "qrels not a mapping"])
def test_a_run_or_qrels_mapping_that_breaks_a_rule_is_refused(run, qrels, match):
    one_line_error(evaluate_run, run, qrels, 3, match=match)


@pytest.mark.parametrize("change, match", [
    (lambda run, qrels: (pl.concat([run, run.head(1)]), qrels), "run frame rows 0 and 8: document '.+' of query '.+'"),
    (lambda run, qrels: (run.drop("score", "rank"), qrels), "run frame lacks both score and rank"),
    (lambda run, qrels: (run.drop("docid"), qrels), "run frame lacks the column\\(s\\) \\['docid'\\]"),
    (lambda run, qrels: (run.with_columns(score=pl.col("score").cast(pl.String)), qrels), "column score is String"),
    (lambda run, qrels: (run.with_columns(docid=pl.lit(None, pl.String)), qrels), "run frame row 0: docid is null"),
    (lambda run, qrels: (run.with_columns(qid=pl.lit(1)), qrels), "column qid is Int32: ids are str"),
    (lambda run, qrels: (run, qrels.with_columns(grade=pl.col("grade").cast(pl.Float64))), "column grade is Float64"),
    (lambda run, qrels: (run, qrels.with_columns(grade=pl.col("grade") > 0)), "column grade is Boolean"),
    (lambda run, qrels: (run, qrels.with_columns(grade=pl.col("grade") - 1)), "row 2: grade -1 is not in 0..100"),
    (lambda run, qrels: (run, pl.concat([qrels, qrels.tail(1)])), "qrels frame rows 7 and 8: document 'c' of query 'q4'"),
], ids=["repeated document", "no order", "no docid", "text scores", "null id", "int ids", "float grades",
        "bool grades", "negative grade", "judged twice"])
def test_a_run_or_qrels_frame_that_breaks_a_rule_is_refused(change, match):
    run, qrels = change(*as_frames(RUN, QRELS))
    one_line_error(evaluate_run, run, qrels, 3, match=match)


def random_case(seed: int, queries: int = 60):
    """qrels (grades 0..3, some queries without a positive) and a run whose rankings hold 0 to 15
    ids of a 40-id pool, many of them unjudged."""
    rng = np.random.default_rng(seed)
    pool = [f"d{i}" for i in range(40)]
    qrels, run = {}, {}
    for q in range(queries):
        judged = rng.choice(pool, size=int(rng.integers(1, 16)), replace=False).tolist()
        high = 1 if q % 7 == 0 else 4  # every 7th query: grades 0 only, no positive
        qrels[f"q{q}"] = {d: int(g) for d, g in zip(judged, rng.integers(0, high, size=len(judged)), strict=True)}
        run[f"q{q}"] = rng.choice(pool, size=int(rng.integers(0, 16)), replace=False).tolist()
    return qrels, run


KS = [1, 2, 3, 5, 10, 20]


@pytest.mark.parametrize("seed", range(4))
def test_the_measures_equal_trec_eval_through_ir_measures(seed):
    """P@k, R@k, RR@k, AP@k, nDCG@k with gains 2^g - 1 and Judged@k of ir_measures, and P_upper@K as
    ir_measures' P@k with every unjudged retrieved id judged relevant, on queries with a non-empty
    ranking (trec_eval scores only those); scores strictly decreasing, so nothing is re-sorted. Where
    |R| = 0, trec_eval says 0 and the evaluator None."""
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import AP, RR, Judged, P, R, nDCG

    qrels, run = random_case(seed)
    scores = {q: {d: float(100 - i) for i, d in enumerate(r)} for q, r in run.items() if r}
    theirs = {"P@K": P, "R@K": R, "RR@K": RR, "AP@K": AP, "nDCG@K": nDCG(gains={g: 2**g - 1 for g in range(4)}),
              "judged@K": Judged}
    expected = {(m.query_id, str(m.measure)): m.value
                for m in ir_measures.iter_calc([m @ k for m in theirs.values() for k in KS], qrels, scores)}
    optimistic = {q: {**{d: 1 for d in run[q]}, **qrels[q]} for q in qrels}
    upper = {(m.query_id, m.measure["cutoff"]): m.value
             for m in ir_measures.iter_calc([P @ k for k in KS], optimistic, scores)}
    per_query = evaluate_run(run, qrels, KS).per_query
    compared = 0
    for row in per_query.filter(pl.col("retrieved") > 0).iter_rows(named=True):
        k, query = row["K"], row["qid"]
        for name, measure in theirs.items():
            want = expected[(query, str(measure @ k))]
            if row["relevant"] == 0 and name in UNDEFINED_WITHOUT_POSITIVE:
                assert row[name] is None and want == 0.0
            else:
                assert row[name] == pytest.approx(want, abs=1e-12), (query, k, name)
        assert row["P_upper@K"] == pytest.approx(upper[(query, k)], abs=1e-12)
        compared += row["relevant"] > 0
    assert compared > 200
    empty = per_query.filter(pl.col("retrieved") == 0)
    assert empty.height and (empty["judged@K"].is_null()).all() and (empty["P@K"] == 0).all()


@pytest.mark.parametrize("seed", range(2))
def test_ap_and_graded_ndcg_equal_pytrec_eval(seed):
    """AP@K = trec_eval's map_cut (denominator |R|, not min(|R|, K)) and nDCG@K = ndcg_cut with the
    qrels' grades replaced by the gains 2^g - 1 (trec_eval's gain is the grade itself)."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = random_case(seed + 10)
    scores = {q: {d: float(100 - i) for i, d in enumerate(r)} for q, r in run.items() if r}
    per_query = evaluate_run(run, qrels, KS).per_query.filter(pl.col("retrieved") > 0, pl.col("relevant") > 0)
    names = {f"map_cut.{','.join(map(str, KS))}", f"ndcg_cut.{','.join(map(str, KS))}"}
    ap = pytrec_eval.RelevanceEvaluator(qrels, names).evaluate(scores)
    gains = {q: {d: 2**g - 1 for d, g in j.items()} for q, j in qrels.items()}
    ndcg = pytrec_eval.RelevanceEvaluator(gains, names).evaluate(scores)
    for row in per_query.iter_rows(named=True):
        assert row["AP@K"] == pytest.approx(ap[row["qid"]][f"map_cut_{row['K']}"], abs=1e-12)
        assert row["nDCG@K"] == pytest.approx(ndcg[row["qid"]][f"ndcg_cut_{row['K']}"], abs=1e-12)
    assert per_query.height > 100
