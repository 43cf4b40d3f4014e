"""Ideal answers, top-K answers and grades with a deterministic in-process litellm provider."""

from __future__ import annotations

import json

import polars as pl
import pytest

from conftest import REPO
from doubles.deterministic_provider import register_deterministic
from retrieval_response.infra.errors import InputError
from retrieval_response.llm import pipeline
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig
from retrieval_response.llm.prompts import ANSWER_FIELDS, GRADE_FIELDS, GRADE_GOLD_FIELDS, load_prompt
from retrieval_response.tables.graded import export_published_json
from retrieval_response.tables.sample_rules import validate_graded
from retrieval_response.testing.openai_server import default_answer
from retrieval_response.testing.synthetic import synthetic_ranked, synthetic_texts
from retrieval_response.workflow_config.llm_requests import ideal_answer_requests

pytestmark = pytest.mark.unit

ANSWER = load_prompt(REPO / "resources/prompts/answer.txt", ANSWER_FIELDS)
GRADE = load_prompt(REPO / "resources/prompts/grade.txt", GRADE_FIELDS, needs_reask=True)


def _clients(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    return (LLMClient(ModelConfig("det/generator"), PacingConfig(), cache),
            LLMClient(ModelConfig("det/grader", max_tokens=4, logprobs=True), PacingConfig(), cache))


def _run(tmp_path, texts, ranked):
    generator, grader = _clients(tmp_path)
    ideal = pipeline.ideal_answers(ideal_answer_requests(texts, [2]), generator, ANSWER)
    topk = pipeline.topk_answers(ranked, texts, generator, ANSWER)
    return pipeline.grade_answers(topk, ideal, texts, grader, GRADE), generator, grader


def test_topk_selection_takes_the_ranked_prefix_and_marks_positives():
    texts = synthetic_texts(4, n_pos=3, n_neg=5)
    ranked = synthetic_ranked(texts, "E1", nc=6, np_=2, ks=[1, 3, 5])
    rows = pipeline.topk_selections(ranked, texts)
    assert rows.height == 4 * 3
    by_id = {r["id"]: r for r in texts.iter_rows(named=True)}
    for row in rows.iter_rows(named=True):
        full = ranked.filter(pl.col("id") == row["id"]).row(0, named=True)
        assert row["rank"] == full["rank"][:row["K"]]
        assert row["inK"] == [int(i < 2) for i in row["rank"]]
        candidates = by_id[row["id"]]["p"][:2] + by_id[row["id"]]["n"][:4]
        assert row["refs"] == [candidates[i] for i in row["rank"]]
        assert row["P"] == pytest.approx(sum(row["inK"]) / row["K"])
        assert row["R"] == pytest.approx(sum(row["inK"]) / 2)


def test_pipeline_grades_every_sample_and_exports_the_published_layout(tmp_path):
    provider = register_deterministic()
    texts = synthetic_texts(3)
    graded, generator, grader = _run(tmp_path, texts, synthetic_ranked(texts, "E1", 5, 2, [1, 2, 4]))
    validate_graded(graded, "graded.parquet")
    assert graded.height == 9 and (graded["status"] == "graded").all()
    assert graded["grade_expected"].is_not_null().all()
    for row in graded.iter_rows(named=True):
        assert abs(row["grade_expected"] - row["grade"]) < 1  # 0.6 on the grade, the rest on neighbours
    assert generator.stats.calls == 3 + 9 and grader.stats.calls == 9
    assert sum(provider.calls.values()) == 21
    export_published_json(graded, tmp_path / "samples_graded.json")
    records = json.loads((tmp_path / "samples_graded.json").read_text())
    assert list(records[0]) == ["id", "E", "Nc", "Np", "K", "rank", "inK", "answer_ideal", "answer_topK", "grade",
                               "grade_expected", "P", "R", "status"]
    assert [r["grade"] for r in records] == graded["grade"].to_list()
    assert all(set(r["inK"]) <= {0, 1} and len(r["inK"]) == r["K"] for r in records)


def test_same_topk_from_two_embedders_costs_one_call_and_a_rerun_none(tmp_path):
    provider = register_deterministic()
    texts = synthetic_texts(3)
    ranked_a = synthetic_ranked(texts, "EA", 5, 2, [1, 2], seed=7)
    ranked_b = ranked_a.with_columns(E=pl.lit("EB"))  # identical rankings from another embedder
    _run(tmp_path, texts, ranked_a)
    calls_a = sum(provider.calls.values())
    graded_b, generator, grader = _run(tmp_path, texts, ranked_b)
    assert sum(provider.calls.values()) == calls_a  # every prompt of EB was already answered
    assert generator.stats.cache_hits == generator.stats.requests
    rerun, _, _ = _run(tmp_path, texts, ranked_b)
    assert sum(provider.calls.values()) == calls_a and rerun.equals(graded_b)


def _grades_need_reask(messages):
    if messages[-1]["content"].startswith("Reply with a single digit"):
        return "3"
    return "Between 3 and 4." if "Grade (1-5)" in messages[-1]["content"] else default_answer(messages)


def test_unparseable_grade_is_asked_again_once(tmp_path):
    provider = register_deterministic(_grades_need_reask)
    texts = synthetic_texts(2)
    graded, _, grader = _run(tmp_path, texts, synthetic_ranked(texts, "E1", 5, 2, [2]))
    assert graded["grade"].to_list() == [3, 3] and (graded["status"] == "graded").all()
    assert graded["grade_raw"].to_list()[0] == f"Between 3 and 4.{pipeline.REASK_SEPARATOR}3"
    assert grader.stats.calls == 4 and not grader.stats.failures_by_reason
    assert len(provider.calls) == 2 + 2 + 4


def _never_a_grade_and_some_empty_answers(messages):
    text = messages[-1]["content"]
    if "Grade (1-5)" in text or text.startswith("Reply with a single digit"):
        return "I cannot say."
    return "" if "(1)?" in text else default_answer(messages)


def test_failures_are_kept_with_their_reason_never_dropped(tmp_path):
    register_deterministic(_never_a_grade_and_some_empty_answers)
    texts = synthetic_texts(3)
    graded, generator, grader = _run(tmp_path, texts, synthetic_ranked(texts, "E1", 5, 2, [1, 3]))
    validate_graded(graded, "graded.parquet")
    status = dict(zip(graded["id"], graded["status"], strict=False))
    assert graded.height == 6 and graded["grade"].is_null().all()
    assert status["S-1"] == "topk_answer:empty_answer"  # query (1) gets empty answers
    assert status["S-0"] == status["S-2"] == "unparseable_grade"
    assert graded.filter(pl.col("id") == "S-0")["grade_raw"][0].count("I cannot say.") == 2
    assert generator.stats.failures_by_reason == {"empty_answer": 3}  # the ideal one and two top-K
    assert grader.stats.failures_by_reason == {"unparseable_grade": 4}


def test_validate_graded_names_the_breaking_sample():
    row = {"id": "S-0", "subset": "S", "E": "E1", "Nc": 5, "Np": 2, "K": 2, "rank": [0, 1], "inK": [1, 1],
           "answer_ideal": "a", "answer_topK": "b", "grade": 7, "grade_expected": None, "P": 1.0, "R": 1.0,
           "status": "graded", "grade_raw": "7"}
    with pytest.raises(InputError, match=r"^g.parquet: row 1 \(id S-0\): grade must lie in 1..5 or be null: grade = 7$"):
        validate_graded(pl.DataFrame([row]), "g.parquet")
    with pytest.raises(InputError, match="len\\(rank\\) must equal len\\(inK\\)"):
        validate_graded(pl.DataFrame([{**row, "grade": 4, "inK": [1]}]), "g.parquet")
    with pytest.raises(InputError, match="len\\(inK\\) must lie in 1..K"):
        validate_graded(pl.DataFrame([{**row, "grade": 4, "rank": [0, 1, 2], "inK": [1, 1, 0]}]), "g.parquet")


def test_one_positive_design_is_answered_from_its_one_positive_and_graded(tmp_path):
    register_deterministic()
    texts = synthetic_texts(3, n_pos=1)
    ranked = synthetic_ranked(texts, "E1", nc=4, np_=1, ks=[1, 2])
    generator, grader = _clients(tmp_path)
    ideal = pipeline.ideal_answers(ideal_answer_requests(texts, [1]), generator, ANSWER)
    assert ideal.height == 3 and (ideal["Np"] == 1).all() and (ideal["status"] == "ok").all()
    rows = pipeline.topk_selections(ranked, texts)
    assert all(sum(row["inK"]) <= 1 for row in rows.iter_rows(named=True))
    graded = pipeline.grade_answers(pipeline.topk_answers(ranked, texts, generator, ANSWER), ideal, texts, grader, GRADE)
    validate_graded(graded, "graded.parquet")
    assert graded.height == 6 and (graded["status"] == "graded").all()


GRADE_GOLD = load_prompt(REPO / "resources/prompts/grade_gold.txt", GRADE_GOLD_FIELDS, needs_reask=True)


def _gold_grades(messages):
    """Against gold answers: 5 when the answer quotes the first gold answer, an unparseable reply for
    query (2) (re-asked: again unparseable), else 2; other prompts as the default provider."""
    text = messages[-1]["content"]
    first = messages[1]["content"] if len(messages) > 1 else ""
    if "Correct answers:" in first:
        if "(2)?" in first:
            return "It depends."
        gold = first.split("Correct answers:\n- ", 1)[1].split("\n", 1)[0]
        return "5" if gold in first.split("Answer to grade:", 1)[1] else "2"
    return default_answer(messages) if "Reply with" not in text else "3"


def test_gold_reference_grades_each_answer_against_the_gold_answers_and_keeps_every_sample(tmp_path):
    provider = register_deterministic(_gold_grades)
    texts = synthetic_texts(4).with_columns(answers=pl.Series([["Answer"], [], ["Positive"], ["  ", "Answer"]]))
    ranked = synthetic_ranked(texts, "E1", 5, 2, [1, 2])
    generator, grader = _clients(tmp_path)
    ideal = pipeline.ideal_answers(ideal_answer_requests(texts, [2]), generator, ANSWER)
    topk = pipeline.topk_answers(ranked, texts, generator, ANSWER)
    plain = pipeline.grade_answers(topk, ideal, texts, grader, GRADE)
    calls = sum(provider.calls.values())
    graded = pipeline.grade_answers(topk, ideal, texts, grader, GRADE, GRADE_GOLD)
    validate_graded(graded, "graded.parquet")
    assert graded.select(plain.columns).equals(plain)  # the ideal-reference grade is unchanged, from the cache
    assert sum(provider.calls.values()) == calls + 2 + 2 * 2 + 2  # S-0, S-3 once; S-2 twice (re-asked)
    by_id = {i: graded.filter(pl.col("id") == i) for i in ("S-0", "S-1", "S-2", "S-3")}
    assert by_id["S-0"]["grade_gold"].to_list() == [5, 5] and (by_id["S-0"]["status_gold"] == "graded").all()
    assert by_id["S-0"]["grade_gold_expected"].is_not_null().all()
    assert by_id["S-1"]["status_gold"].to_list() == [pipeline.NO_GOLD_ANSWER] * 2  # no gold answer: kept, null
    assert by_id["S-1"]["grade_gold"].is_null().all() and (by_id["S-1"]["status"] == "graded").all()
    assert by_id["S-2"]["status_gold"].to_list() == ["unparseable_grade"] * 2
    assert by_id["S-3"]["grade_gold"].to_list() == [5, 5]  # the blank gold answer is dropped, "Answer" is first
    export_published_json(graded, tmp_path / "samples_graded.json")
    records = json.loads((tmp_path / "samples_graded.json").read_text())
    assert list(records[0])[-3:] == ["grade_gold", "grade_gold_expected", "status_gold"]


def test_gold_grade_breaking_its_status_rule_is_named():
    row = {"id": "S-0", "subset": "S", "E": "E1", "Nc": 5, "Np": 2, "K": 1, "rank": [0], "inK": [1],
           "answer_ideal": "a", "answer_topK": "b", "grade": 4, "grade_expected": None, "P": 1.0, "R": 0.5,
           "status": "graded", "grade_raw": "4", "grade_gold": 3, "grade_gold_expected": None,
           "status_gold": "no_gold_answer", "grade_gold_raw": None}
    with pytest.raises(InputError, match=r"row 1 \(id S-0\): grade_gold must be given exactly when status_gold is 'graded'"):
        validate_graded(pl.DataFrame([row]), "graded.parquet")
    with pytest.raises(InputError, match="missing column 'grade_gold_raw'"):
        validate_graded(pl.DataFrame([row]).drop("grade_gold_raw"), "graded.parquet")
