"""Document judgments: parsing, the measures built from them (eRAG's aggregation, UDCG's formula,
the UMBRELA measures, worked by hand and checked against pytrec_eval / ir_measures), the stage
against the loopback OpenAI server (every response shape becomes a status), the analysis table's
judgment lists and UMBRELA's agreement with the qrels."""

from __future__ import annotations

import itertools
import logging
import math

import ir_measures
import numpy as np
import polars as pl
import pytest
import pytrec_eval

from conftest import REPO
from retrieval_response.agreement.umbrela_qrels import kappa, umbrela_agreement
from retrieval_response.analysis.correlation_tables import analysis_tables
from retrieval_response.analysis.samples import default_measures
from retrieval_response.infra.errors import JobFailure
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig
from retrieval_response.llm.document_judgments import (
    UnusableReply,
    check_judgment_failures,
    judge_documents,
    judged_pairs,
    model_sections,
    no_response_probability,
    parse_umbrela_label,
)
from retrieval_response.llm.grading import expected_grade
from retrieval_response.llm.jobs import CALL_FAILURE_PREFIXES
from retrieval_response.llm.prompts import ANSWER_FIELDS, UDCG_FIELDS, UMBRELA_FIELDS, load_prompt
from retrieval_response.measures.alpha import alpha_grid
from retrieval_response.measures.features import add_features
from retrieval_response.measures.registry import MEASURES
from retrieval_response.tables.collect import judgment_utilities, with_document_judgments
from retrieval_response.testing.openai_server import OpenAIServer
from retrieval_response.testing.synthetic import synthetic_ranked, synthetic_texts
from test_llm_client import FAST, SHAPES, pacing_for

pytestmark = pytest.mark.unit

PROMPTS = {"erag": load_prompt(REPO / "resources/prompts/answer.txt", ANSWER_FIELDS),
           "udcg": load_prompt(REPO / "resources/prompts/udcg.txt", UDCG_FIELDS),
           "umbrela": load_prompt(REPO / "resources/prompts/umbrela.txt", UMBRELA_FIELDS)}


def _sample(**lists) -> pl.DataFrame:
    return pl.DataFrame({"id": ["S-0"], "E": ["e"], "Nc": [5], "Np": [2], "K": [3], "inK": [[1, 0, 1]],
                         **{k: [v] for k, v in lists.items()}})


def test_erag_and_udcg_on_a_hand_worked_sample():
    """K = 3, inK = [1, 0, 1].

    eRAG utilities u = [1, 0, 0.5]: eRAG_P = (1 + 0 + 0.5) / 3 = 0.5 (eRAG's ``P`` for continuous
    labels, the mean over the cut), eRAG_success = max = 1.

    UDCG utilities u = [0.9, 0.6, 0.3] (P(NO-RESPONSE) = 0.1, 0.4, 0.7), weights w = [+1, -1/3, +1]:
    sum w*u = 0.9 - 0.2 + 0.3 = 1.0, mean = 1/3, UDCG = 1 / (1 + e^(-1/3)) = 1 / 1.716531 = 0.582570.

    UMBRELA labels [3, 0, 2]: n_p_umbrela = 2 (labels >= 2), P_umbrela = 2/3,
    T_umbrela(0.5) = 0.5 * 2 - 0.5 * (1/3) = 0.833333; gains 2^l - 1 = [7, 0, 3]:
    DCG = 7/1 + 0/log2(3) + 3/log2(4) = 8.5, ideal [7, 3, 0]: 7 + 3/log2(3) = 8.892789,
    nDCG_umbrela = 8.5 / 8.892789 = 0.955830.
    """
    features = add_features(_sample(erag_utility=[1.0, 0.0, 0.5], udcg_utility=[0.9, 0.6, 0.3],
                                    umbrela_label=[3, 0, 2])).row(0, named=True)
    assert features["eRAG_P"] == pytest.approx(0.5)
    assert features["eRAG_success"] == 1.0
    assert features["UDCG"] == pytest.approx(0.582570, abs=1e-6)
    assert features["UDCG"] == pytest.approx(1 / (1 + math.exp(-1 / 3)), abs=1e-15)
    assert features["n_p_umbrela"] == 2
    assert features["nDCG_umbrela"] == pytest.approx(0.955830, abs=1e-6)
    values = {name: MEASURES[name].evaluate({c: np.array([features[c]]) for c in MEASURES[name].features},
                                            np.array([0.5]))[0, 0]
              for name in ("T_umbrela", "P_umbrela", "eRAG_P", "UDCG")}
    assert values["T_umbrela"] == pytest.approx(0.833333, abs=1e-6)
    assert values["P_umbrela"] == pytest.approx(2 / 3)


def test_udcg_is_the_released_code_formula_on_random_samples():
    rng = np.random.default_rng(0)
    for _ in range(30):
        k = int(rng.integers(1, 8))
        inK, u = rng.integers(0, 2, k).tolist(), rng.random(k).tolist()
        score = sum(ui * (1.0 if r else -1 / 3) for r, ui in zip(inK, u, strict=True)) / k
        sample = _sample(udcg_utility=u).with_columns(pl.Series("inK", [inK]), K=pl.lit(k))
        assert add_features(sample)["UDCG"][0] == pytest.approx(1 / (1 + math.exp(-score)), abs=1e-12)

def _binary_utilities(seed: int, samples: int, max_k: int, nc: int) -> tuple[list[list[float]], pl.DataFrame]:
    """Random 0/1 eRAG utilities of ``samples`` top-Ks of 1..max_k texts, and their features."""
    rng = np.random.default_rng(seed)
    rows = [rng.integers(0, 2, int(rng.integers(1, max_k + 1))).astype(float).tolist() for _ in range(samples)]
    table = pl.DataFrame({"id": [f"S-{i}" for i in range(samples)], "E": "e", "Nc": nc, "Np": 2,
                          "K": [len(r) for r in rows], "inK": [[0] * len(r) for r in rows], "erag_utility": rows})
    return rows, add_features(table)


def _pytrec_eval(labels: list[float], measures: set[str]) -> dict[str, float]:
    """pytrec_eval's ``measures`` of one top-K as eRAG's ``eval`` builds it: qrels = the labels,
    run scores len - j (rank order kept)."""
    qrel = {"q": {str(j): int(v) for j, v in enumerate(labels)}}
    run = {"q": {str(j): float(len(labels) - j) for j in range(len(labels))}}
    return pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run)["q"]


@pytest.mark.parametrize("seed", [0, 1])
def test_erag_matches_pytrec_eval_on_binary_utilities_as_erag_eval_does(seed):
    """eRAG's ``eval`` hands 0/1 labels to pytrec_eval (run scores len - j, qrels = the labels):
    P_K and success_K equal eRAG_P and eRAG_success."""
    rows, features = _binary_utilities(seed, samples=25, max_k=6, nc=8)
    for i, labels in enumerate(rows):
        k = len(labels)
        result = _pytrec_eval(labels, {f"P_{k}", f"success_{k}"})
        assert features["eRAG_P"][i] == pytest.approx(result[f"P_{k}"])
        assert features["eRAG_success"][i] == pytest.approx(result[f"success_{k}"])


def test_erag_mrr_and_ndcg_on_hand_worked_binary_utilities():
    """0/1 utilities u (K = 4 unless said):

    - [0, 1, 0, 1]: MRR = 1/2 (first 1 at rank 2); DCG = 1/log2(3) + 1/log2(5) = 0.630930 +
      0.430677 = 1.061606, ideal [1, 1, 0, 0]: IDCG = 1 + 1/log2(3) = 1.630930, nDCG = 0.650920.
    - [1, 0, 0, 0]: MRR = 1, nDCG = 1 (the one 1 is already first).
    - [0, 0, 0, 0]: MRR = 0, nDCG = 0 (pytrec_eval's values for a query without a relevant text).
    - [0, 0, 1] (K = 3): MRR = 1/3, nDCG = (1/log2(4)) / 1 = 0.5.
    - [1, 0.5, 0] (continuous, answer_f1 or answer_recall): null, as a top K with a missing utility.
    """
    rows = [[0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.5, 0.0],
            [1.0, None, 0.0]]
    samples = pl.DataFrame({"id": [f"S-{i}" for i in range(len(rows))], "E": "e", "Nc": 8, "Np": 2,
                            "K": [len(r) for r in rows], "inK": [[0] * len(r) for r in rows], "erag_utility": rows})
    features = add_features(samples)
    assert features["eRAG_MRR"].to_list()[:4] == pytest.approx([0.5, 1.0, 0.0, 1 / 3])
    assert features["eRAG_nDCG"].to_list()[:4] == pytest.approx([0.650920, 1.0, 0.0, 0.5], abs=1e-6)
    assert features["eRAG_MRR"].to_list()[4:] == [None, None]
    assert features["eRAG_nDCG"].to_list()[4:] == [None, None]
    for name in ("eRAG_MRR", "eRAG_nDCG"):
        assert MEASURES[name].needs == "erag_utility" and MEASURES[name].binary and MEASURES[name].correlatable


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_erag_mrr_and_ndcg_match_pytrec_eval_and_ir_measures_on_binary_utilities(seed):
    """eRAG's ``eval`` hands 0/1 labels to pytrec_eval (run scores len - j, qrels = the K labels):
    ``recip_rank`` and ``ndcg_cut_K`` equal eRAG_MRR and eRAG_nDCG, as do ir_measures' RR and nDCG@K."""
    rows, features = _binary_utilities(seed, samples=30, max_k=8, nc=10)
    for i, labels in enumerate(rows):
        k = len(labels)
        result = _pytrec_eval(labels, {"recip_rank", f"ndcg_cut_{k}"})
        assert features["eRAG_MRR"][i] == pytest.approx(result["recip_rank"], abs=1e-12), labels
        assert features["eRAG_nDCG"][i] == pytest.approx(result[f"ndcg_cut_{k}"], abs=1e-12), labels
        if any(labels):
            qrels = [ir_measures.Qrel("q", f"d{j}", int(v)) for j, v in enumerate(labels)]
            ranking = [ir_measures.ScoredDoc("q", f"d{j}", 100.0 - j) for j in range(k)]
            expected = ir_measures.calc_aggregate([ir_measures.RR, ir_measures.nDCG @ k], qrels, ranking)
            assert features["eRAG_MRR"][i] == pytest.approx(expected[ir_measures.RR], abs=1e-12)
            assert features["eRAG_nDCG"][i] == pytest.approx(expected[ir_measures.nDCG @ k], abs=1e-12)


def test_erag_mrr_and_ndcg_are_default_measures_only_with_binary_utilities():
    base = _sample(erag_utility=[1.0, 0.0, 1.0])
    assert {"eRAG_MRR", "eRAG_nDCG", "eRAG_P"} <= set(default_measures(base))
    continuous = default_measures(_sample(erag_utility=[1.0, 0.5, 0.0]))
    assert "eRAG_P" in continuous and not {"eRAG_MRR", "eRAG_nDCG"} & set(continuous)


def test_umbrela_ndcg_matches_ir_measures_with_exponential_gains():
    rng = np.random.default_rng(3)
    for _ in range(20):
        labels = rng.integers(0, 4, int(rng.integers(1, 6))).tolist()
        if not any(labels):
            continue
        k = len(labels)
        qrels = [ir_measures.Qrel("q", f"d{j}", label) for j, label in enumerate(labels)]
        run = [ir_measures.ScoredDoc("q", f"d{j}", 100.0 - j) for j in range(k)]
        measure = ir_measures.nDCG(gains={g: 2**g - 1 for g in range(4)}) @ k
        expected = ir_measures.calc_aggregate([measure], qrels, run)[measure]
        mine = add_features(_sample(umbrela_label=labels).with_columns(pl.Series("inK", [[0] * k]), K=pl.lit(k)))
        assert mine["nDCG_umbrela"][0] == pytest.approx(expected, abs=1e-12), labels


def test_a_missing_judgment_leaves_the_measure_null_and_lists_of_another_length_count_as_missing():
    features = add_features(pl.concat([
        _sample(erag_utility=[1.0, None, 0.5], udcg_utility=[0.9, 0.6, 0.3], umbrela_label=[3, None, 2]),
        _sample(erag_utility=[1.0], udcg_utility=None, umbrela_label=[3, 0, 2]),
    ], how="diagonal_relaxed"))
    assert features["eRAG_P"].to_list() == [None, None]
    assert features["eRAG_success"].to_list() == [None, None]
    assert features["UDCG"][0] == pytest.approx(0.582570, abs=1e-6) and features["UDCG"][1] is None
    assert features["n_p_umbrela"].to_list() == [None, 2]


@pytest.mark.parametrize("text, label", [
    ("##final score: 2", 2), ("##M: 1\n##T: 3\n##final score: 0", 0), ('{"final_score": 3}', 3), ("3", 3),
    ("**1**", 1), ("Relevance category: 2", 2), ("O: 1", 1), ("The score is 3", 3),
    ("score is 3.5", None), ("Answer 3fa2c1.", None), ("30", None), ("", None), (None, None), ("four", None)])
def test_umbrela_labels_are_parsed_leniently_and_nothing_is_guessed(text, label):
    assert parse_umbrela_label(text) == label


def test_no_response_probability_from_the_first_token():
    def entry(token, alternatives):
        return {"token": token, "logprob": math.log(alternatives[0][1]),
                "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in alternatives]}

    assert no_response_probability([entry("NO", [("NO", 0.7), ("The", 0.2), (" NO", 0.05)])]) == pytest.approx(0.75)
    assert no_response_probability([entry("\n", [("\n", 1.0)]), entry("N", [("N", 0.6), ("Paris", 0.4)])]) == 0.0
    assert no_response_probability([entry("Paris", [("Paris", 0.9), ("NO-", 0.1)])]) == pytest.approx(0.1)
    assert no_response_probability(None) is None and no_response_probability([]) is None


NOT_A_PLAIN_LABEL = ["-1", "+2", "\u22121", "4", "30", "2.0", "1,0", "0.5", "\u0663", "\uff12", "\u09e8", "10"]
"""Numbers that are no UMBRELA label: signed, outside 0-3, decimal, or digits of another script."""
MARKERS = ["##final score: {}", '{{"final_score": {}}}', "The score is {}", "Relevance category: {}", "O: {}", "{}",
           "**{}**", "##M: 2\n##T: 1\n##final score: {}"]


@pytest.mark.parametrize("marker", MARKERS)
@pytest.mark.parametrize("number", NOT_A_PLAIN_LABEL)
def test_a_number_that_is_no_plain_digit_0_to_3_is_never_a_label(marker, number):
    assert parse_umbrela_label(marker.format(number)) is None


@pytest.mark.parametrize("marker", MARKERS)
@pytest.mark.parametrize("label", [0, 1, 2, 3])
def test_each_plain_digit_after_each_marker_is_its_label(marker, label):
    assert parse_umbrela_label(marker.format(label)) == label


STRENGTHS = ["##final score: {}", "The score is {}", "Relevance category: {}", "{}"]
"""One marker of each strength, strongest first (the last: a line that is only the value)."""
UNREADABLE = [*NOT_A_PLAIN_LABEL, "0x2", "2a", "2nd", "3_", "1e0", "2-3"]


@pytest.mark.parametrize(("strong", "weak"), list(itertools.combinations(STRENGTHS, 2)))
@pytest.mark.parametrize("value", [*UNREADABLE, "0", "1", "2", "3"])
def test_the_strongest_marker_present_decides_even_when_its_value_is_unreadable(strong, weak, value):
    """A weaker marker with a readable label earlier in the reply is never read in place of a
    stronger one whose value is unreadable: that reply is unparseable."""
    other = "3" if value != "3" else "1"
    reply = weak.format(other) + "\nReasoning done.\n" + strong.format(value)
    assert parse_umbrela_label(reply) == (int(value) if value in ("0", "1", "2", "3") else None), reply
    assert parse_umbrela_label(weak.format(other)) == int(other), "the weaker marker alone is read"


def _logprob_entry(logprob, token="NO", alternative=None):
    alternatives = [{"token": token, "logprob": logprob}] + ([alternative] if alternative else [])
    return [{"token": token, "logprob": logprob, "top_logprobs": alternatives}]


NOT_A_LOGPROB = [math.nan, math.inf, -math.inf, 2.0, 1e-3, "-0.5", None, True]
"""Log-probabilities that are no log of a probability in (0, 1] (a finite number <= 0)."""


@pytest.mark.parametrize("token", ["NO", "Paris"])
@pytest.mark.parametrize("bad", NOT_A_LOGPROB, ids=repr)
def test_a_log_probability_that_is_no_probability_is_refused_whichever_token_holds_it(bad, token):
    with pytest.raises(UnusableReply) as refused:
        no_response_probability(_logprob_entry(bad, token))
    assert refused.value.status == "invalid_logprobs"
    with pytest.raises(UnusableReply):
        no_response_probability(_logprob_entry(-0.1, "NO", {"token": "Paris", "logprob": bad}))
    assert expected_grade(_logprob_entry(bad, "3")) is None


@pytest.mark.parametrize("shape", [["junk"], [{"token": 3, "logprob": -0.1}], [{"logprob": -0.1}],
                                   [{"token": "NO", "logprob": -0.1, "top_logprobs": ["NO"]}]], ids=repr)
def test_log_probabilities_of_another_shape_are_refused(shape):
    with pytest.raises(UnusableReply):
        no_response_probability(shape)
    assert expected_grade(shape) is None


def test_alternatives_summing_above_one_are_refused_and_rounding_is_capped():
    both = [{"token": "NO", "logprob": math.log(0.7),
             "top_logprobs": [{"token": "NO", "logprob": math.log(0.7)}, {"token": "NO-", "logprob": math.log(0.6)}]}]
    with pytest.raises(UnusableReply):
        no_response_probability(both)
    assert no_response_probability(_logprob_entry(0.0)) == 1.0
    assert no_response_probability(_logprob_entry(1e-9)) == 1.0
    assert no_response_probability(_logprob_entry(math.log(0.25))) == pytest.approx(0.25)


def test_pairs_are_the_distinct_texts_of_every_top_k():
    texts = synthetic_texts(3, n_pos=2, n_neg=4)
    ranked = [synthetic_ranked(texts, "A", 5, 2, [1, 2], seed=1), synthetic_ranked(texts, "B", 5, 2, [1, 3], seed=2),
              synthetic_ranked(texts, "A", 6, 2, [2], seed=3)]
    pairs = judged_pairs([(r, texts) for r in ranked])
    expected = set()
    for table, (nc, np_) in zip(ranked, [(5, 2), (5, 2), (6, 2)], strict=True):
        for row in table.join(texts, on="id").iter_rows(named=True):
            candidates = row["p"][:np_] + row["n"][:nc - np_]
            expected |= {(row["id"], candidates[i]) for i in row["rank"][:max(row["K"])]}
    assert set(pairs.select("id", "text").iter_rows()) == expected and pairs.height == len(expected)


def _clients(server, tmp_path, kinds=("erag", "udcg", "umbrela"), pacing=FAST):
    llm = {"generator": {"model": "openai/loopback", "api_base": server.base_url, "api_key_env": "RR_TEST_KEY",
                         "max_tokens": 20},
           "grader": {"model": "openai/loopback", "api_base": server.base_url, "api_key_env": "RR_TEST_KEY",
                      "max_tokens": 4}}
    cache = ResponseCache(tmp_path / "cache")
    return {kind: LLMClient(ModelConfig.from_mapping(section), pacing, cache, jitter_seed=0)
            for kind, section in model_sections(llm, kinds).items()}


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("RR_TEST_KEY", "sk-test")


def test_one_call_per_pair_and_kind_and_a_rerun_costs_nothing(tmp_path):
    texts = synthetic_texts(3, n_pos=2, n_neg=4)
    pairs = judged_pairs([(synthetic_ranked(texts, "A", 5, 2, [1, 3]), texts)])
    with OpenAIServer() as server:
        clients = _clients(server, tmp_path)
        judgments = judge_documents(pairs, ["umbrela", "erag", "udcg"], clients, PROMPTS)
        assert server.stats()["requests"] == 3 * pairs.height
        again = judge_documents(pairs, ["erag", "udcg", "umbrela"], _clients(server, tmp_path), PROMPTS)
        assert server.stats()["requests"] == 3 * pairs.height
    assert judgments.equals(again)
    assert (judgments["erag_status"] == "ok").all() and (judgments["umbrela_status"] == "ok").all()
    assert (judgments["udcg_status"] == "ok").all()
    assert set(judgments["no_response_p"].to_list()) <= {0.0, 1.0} and judgments["umbrela_label"].is_between(0, 3).all()


def test_kinds_not_asked_for_stay_null_and_cost_nothing(tmp_path):
    texts = synthetic_texts(2, n_pos=2, n_neg=4)
    pairs = judged_pairs([(synthetic_ranked(texts, "A", 5, 2, [2]), texts)])
    with OpenAIServer() as server:
        judgments = judge_documents(pairs, ["udcg"], _clients(server, tmp_path, ["udcg"]), PROMPTS)
        assert server.stats()["requests"] == pairs.height
    assert judgments["erag_status"].is_null().all() and judgments["umbrela_label"].is_null().all()


@pytest.mark.parametrize("fault, reason, retried", SHAPES)
def test_every_response_shape_becomes_a_status(tmp_path, fault, reason, retried):
    texts = synthetic_texts(1, n_pos=2, n_neg=4)
    pairs = judged_pairs([(synthetic_ranked(texts, "A", 5, 2, [1]), texts)])
    pacing = pacing_for(fault, max_retries=0)
    with OpenAIServer(script=[fault] * 3) as server:
        clients = _clients(server, tmp_path, pacing=pacing)
        judgments = judge_documents(pairs, ["erag", "udcg", "umbrela"], clients, PROMPTS)
    statuses = judgments.select("erag_status", "udcg_status", "umbrela_status").row(0)
    if reason is None:
        assert statuses[0] == "ok" and statuses[2] in ("ok", "unparseable_label")
        return
    expected = f"retries_exhausted:{reason}" if retried else reason
    assert statuses == (expected, expected, expected)
    assert judgments.select("erag_answer", "no_response_p", "umbrela_label").row(0) == (None, None, None)
    models = {kind: {"model": "openai/loopback", "api_base": server.base_url} for kind in clients}
    log = logging.getLogger("test_judgment_failures")
    if not expected.startswith(CALL_FAILURE_PREFIXES):  # an answer of the model, asked again it comes back
        check_judgment_failures(judgments, models, clients, 0.0, log, "tiny")
        return
    with pytest.raises(JobFailure) as failed:
        check_judgment_failures(judgments, models, clients, 0.0, log, "tiny")
    assert str(failed.value).startswith(f"judge_documents tiny/erag: 1 of 1 LLM requests failed: {expected} 1 "
                                        f"(openai/loopback at {server.base_url})")
    assert "more than llm.max_failed_share 0: no output" in str(failed.value)
    check_judgment_failures(judgments, models, clients, 1.0, log, "tiny")  # within the share: WARNING lines only


def test_unparseable_labels_and_missing_logprobs_are_statuses(tmp_path):
    texts = synthetic_texts(1, n_pos=2, n_neg=4)
    pairs = judged_pairs([(synthetic_ranked(texts, "A", 5, 2, [1]), texts)])
    with OpenAIServer(answer=lambda messages: "I cannot say.") as server:
        clients = _clients(server, tmp_path)
        judgments = judge_documents(pairs, ["udcg", "umbrela"], clients, PROMPTS)
    assert judgments["umbrela_status"].to_list() == ["unparseable_label"]
    assert judgments["umbrela_raw"].to_list() == ["I cannot say."]
    assert judgments["udcg_status"].to_list() == ["ok"] and judgments["no_response_p"].to_list() == [0.0]
    assert clients["umbrela"].stats.failures_by_reason == {"unparseable_label": 1}


def test_judgment_lists_reach_the_analysis_and_are_correlated():
    texts = synthetic_texts(6, n_pos=2, n_neg=4).with_columns(answers=pl.lit(["alpha"]))
    ranked = synthetic_ranked(texts, "A", 5, 2, [1, 2, 3])
    pairs = judged_pairs([(ranked, texts)])
    judgments = pairs.select(
        "id", "text", erag_answer=pl.when(pl.col("text").str.contains("Positive")).then(pl.lit("alpha")).otherwise(
            pl.lit("no")), no_response_p=pl.when(pl.col("text").str.contains("Positive")).then(0.1).otherwise(0.8),
        umbrela_label=pl.when(pl.col("text").str.contains("Positive")).then(3).otherwise(0).cast(pl.Int8))
    utilities = judgment_utilities(judgments, texts.select("id", "answers"))
    graded = (ranked.explode("K", "P", "R")
              .with_columns(rank=pl.col("rank").list.head(pl.col("K")))
              .with_columns(inK=pl.col("rank").list.eval((pl.element() < 2).cast(pl.Int8))))
    graded = with_document_judgments(graded, texts, utilities)
    assert graded["erag_utility"].to_list() == [[float(i < 2) for i in r] for r in graded["rank"].to_list()]
    assert graded["umbrela_label"].to_list() == [[3 * int(i < 2) for i in r] for r in graded["rank"].to_list()]
    graded = graded.with_columns(grade=(pl.col("inK").list.sum() + 1).cast(pl.Int8))
    names = default_measures(graded)
    assert {"eRAG_P", "eRAG_success", "UDCG", "T_umbrela", "P_umbrela", "nDCG_umbrela", "RR@K", "AP@K"} <= set(names)
    correlations, differences, _ = analysis_tables(graded, segmentation="fit", alpha_grid=alpha_grid("linear:5"),
                                             min_segment_samples=2, bootstrap_resamples=10)
    assert {"eRAG_P", "UDCG", "T_umbrela"} <= set(correlations["measure"])
    assert {"eRAG_P-T", "UDCG-T", "T_umbrela-T"} <= set(differences["difference"])


def test_umbrela_agreement_counts_and_kappa():
    """Query S-0: labels (3, 2, 0, 1) on qrels (1, 1, 0, 0): tp 2, tn 2, kappa 1. Query S-1:
    labels (0, 3) on qrels (1, 0): fn 1, fp 1. All: tp 2, fp 1, fn 1, tn 2, n 6, p_o = 4/6,
    p_e = (3*3 + 3*3) / 36 = 1/2, kappa = (2/3 - 1/2) / (1/2) = 1/3."""
    texts = pl.DataFrame({"id": ["S-0", "S-1"], "p": [["a", "b"], ["c"]], "n": [["x", "y"], ["z"]]})
    judgments = pl.DataFrame({"id": ["S-0"] * 4 + ["S-1"] * 3, "text": ["a", "b", "x", "y", "c", "z", "w"],
                              "umbrela_label": pl.Series([3, 2, 0, 1, 0, 3, None], dtype=pl.Int8)})
    table = umbrela_agreement([(judgments, texts)], resamples=50, seed=0)
    row = table.filter(pl.col("subset") == "all").row(0, named=True)
    assert (row["tp"], row["fp"], row["fn"], row["tn"], row["n"]) == (2, 1, 1, 2, 6)
    assert row["kappa"] == pytest.approx(1 / 3) and row["agreement"] == pytest.approx(4 / 6)
    assert row["n_label3_qrel1"] == 1 and row["n_label3_qrel0"] == 1 and row["n_unlabelled"] == 0
    assert row["kappa_ci_low"] <= row["kappa"] <= row["kappa_ci_high"]
    assert kappa(np.array([3, 0, 0, 0])).item() != kappa(np.array([3, 0, 0, 0])).item()  # one class: NaN
