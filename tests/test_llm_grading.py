"""Strict grade parsing, the probability-weighted grade, and prompt files."""

from __future__ import annotations

import math

import pytest

from conftest import REPO
from retrieval_response.infra.errors import InputError
from retrieval_response.llm.grading import expected_grade, parse_grade
from retrieval_response.llm.prompts import ANSWER_FIELDS, GRADE_FIELDS, format_references, load_prompt

pytestmark = pytest.mark.unit



@pytest.mark.parametrize("text, grade", [
    ("4", 4), (" 4 \n", 4), ("Grade: 4", 4), ("grade=2", 2), ("GRADE 5", 5), ("**3**", 3),
    ("4/5", 4), ("4 out of 5", 4), ("1.", 1), ("Grade: 4\nThe answer covers both facts.", 4),
    ("\n\n2\n", 2),
])
def test_parse_grade_accepts_a_lone_grade(text, grade):
    assert parse_grade(text) == grade


@pytest.mark.parametrize("text", [
    "4.5", "45", "0", "6", "between 3 and 4", "The grade is 4", "3-4", "4 or 5", "", None,
    "Grade:", "five", "I would say 4", "4, maybe 3",
])
def test_parse_grade_rejects_anything_else(text):
    assert parse_grade(text) is None


def _entry(token, alternatives):
    return {"token": token, "logprob": math.log(alternatives.get(token, 1e-9)),
            "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in alternatives.items()]}


def test_expected_grade_weights_grades_of_the_first_grade_token():
    logprobs = [_entry("Grade", {"Grade": 1.0}), _entry(":", {":": 1.0}),
                _entry("4", {"4": 0.5, "3": 0.25, " 5": 0.15, "x": 0.1}),
                _entry("2", {"2": 1.0})]
    # the non-grade token "x" is left out and the weights renormalised over 3, 4, 5
    assert expected_grade(logprobs) == pytest.approx((4 * 0.5 + 3 * 0.25 + 5 * 0.15) / 0.9)


def test_expected_grade_is_none_without_logprobs_or_grade_token():
    assert expected_grade(None) is None
    assert expected_grade([_entry("hello", {"hello": 1.0})]) is None


def test_shipped_prompts_load_and_fill(tmp_path):
    answer = load_prompt(REPO / "resources/prompts/answer.txt", ANSWER_FIELDS)
    grade = load_prompt(REPO / "resources/prompts/grade.txt", GRADE_FIELDS, needs_reask=True)
    msgs = answer.messages(query="Who?", references=format_references(["a $1 text", "b"]))
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert "[1] a $1 text\n\n[2] b" in msgs[1]["content"] and "Who?" in msgs[1]["content"]
    first = grade.messages(query="Q", ideal_answer="I", answer="A")
    again = grade.reask_messages(first, "maybe 4")
    assert again[:2] == first and again[2] == {"role": "assistant", "content": "maybe 4"}
    assert again[3]["role"] == "user" and again[3]["content"] == grade.reask


def test_prompt_with_unknown_placeholder_or_missing_section_is_rejected(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("[system]\nS\n[user]\n$query $context\n")
    with pytest.raises(InputError, match=r"bad.txt: section \[user\]: unknown placeholder \$context"):
        load_prompt(bad, ANSWER_FIELDS)
    no_reask = tmp_path / "grade.txt"
    no_reask.write_text("[system]\nS\n[user]\n$query $answer $ideal_answer\n")
    with pytest.raises(InputError, match=r"section \[reask\]: missing"):
        load_prompt(no_reask, GRADE_FIELDS, needs_reask=True)
