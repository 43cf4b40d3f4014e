"""Text budget: candidate texts cut to their first sentences within a word budget, never inside a
word, applied when a dataset is prepared and recorded in its report."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from retrieval_response.datasets import prepare, read_texts
from retrieval_response.datasets.text_budget import apply_text_budget, shorten
from retrieval_response.infra.errors import InputError

pytestmark = pytest.mark.unit

SNAPSHOT = Path(__file__).resolve().parent / "fixtures" / "datasets" / "arxiv_snapshot_sample.jsonl"
ABSTRACT = "We study X. It works well! Does it scale? (Yes.) Proofs follow in the appendix."


@pytest.mark.parametrize("budget, expected", [
    (100, ABSTRACT),
    (15, ABSTRACT),  # exactly the word count: kept whole
    (14, "We study X. It works well! Does it scale? (Yes.)"),
    (10, "We study X. It works well! Does it scale? (Yes.)"),
    (9, "We study X. It works well! Does it scale?"),
    (8, "We study X. It works well!"),
    (3, "We study X."),
    (2, "We study"),  # the first sentence is longer than the budget: its first words
    (1, "We"),
])
def test_first_sentences_within_the_budget(budget, expected):
    assert shorten(ABSTRACT, budget) == expected


def test_never_inside_a_word_and_whitespace_kept():
    text = "Alpha\u00a0beta  gamma.\nDelta-epsilon zeta.   Eta"
    assert shorten(text, 3) == "Alpha\u00a0beta  gamma."
    assert shorten(text, 4) == "Alpha\u00a0beta  gamma."
    assert shorten(text, 5) == "Alpha\u00a0beta  gamma.\nDelta-epsilon zeta."
    assert shorten("e.g.x is one word", 1) == "e.g.x"
    assert shorten("3.14 is pi. Right.", 3) == "3.14 is pi."
    for budget in range(1, 9):
        short = shorten(text, budget)
        assert text.startswith(short) and len(short.split()) <= budget
        assert short == text or text[len(short)].isspace()


def test_the_texts_table_and_its_report():
    texts = pl.DataFrame({"id": ["A-0", "A-1"], "q": ["q0", "q1"],
                          "p": [["One two. Three four five.", "Short."], ["Six seven eight nine."]],
                          "n": [["Ten. Eleven twelve thirteen."], []]})
    same, report = apply_text_budget(texts, None)
    assert same is texts and report == {"text_words": None}
    short, report = apply_text_budget(texts, 3)
    assert short["p"].to_list() == [["One two.", "Short."], ["Six seven eight"]]
    assert short["n"].to_list() == [["Ten."], []] and short["q"].equals(texts["q"])
    assert short.schema == texts.schema
    assert report == {"text_words": 3, "texts": 4, "shortened": 3, "words_before": 14, "words_after": 7}
    with pytest.raises(ValueError, match="text_words 0"):
        apply_text_budget(texts, 0)


def test_prepare_applies_the_budget_to_the_sampled_queries():
    whole, whole_report = prepare("arxiv_snapshot", SNAPSHOT, n_queries=None, seed=0, designs=[(4, 2)])
    short, report = prepare("arxiv_snapshot", SNAPSHOT, n_queries=None, seed=0, designs=[(4, 2)], text_words=7)
    assert whole_report["text_budget"] == {"text_words": None}
    assert report["text_budget"]["text_words"] == 7 and report["text_budget"]["shortened"] > 0
    assert whole["id"].equals(short["id"]) and whole["q"].equals(short["q"])
    for column in ("p", "n"):
        for texts, cut in zip(whole[column].to_list(), short[column].to_list(), strict=True):
            for text, kept in zip(texts, cut, strict=True):
                assert text.startswith(kept) and 0 < len(kept.split()) <= 7
    assert read_texts("arxiv_snapshot", SNAPSHOT).height >= whole.height


COLLISIONS = {
    "positive and negative": (["Shared start. Positive tail goes on and on.", "Otherpositive text."],
                              ["Shared start. Negative tail goes on and on.", "n1 text.", "n2 text."]),
    "two positives": (["Shared start. First positive goes on and on.", "Shared start. Second positive goes on."],
                      ["n0 text.", "n1 text.", "n2 text."]),
    "words cut mid-sentence": (["Alpha beta gamma delta epsilon positive", "Otherpositive text."],
                               ["Alpha beta gamma delta epsilon negative", "n1 text.", "n2 text."]),
}
"""Texts of one query that differ in full and become one text within a budget of 2-4 words."""


def collision_file(path: Path, case: str, n_queries: int) -> Path:
    """A generic file: query c-0 has the colliding texts of ``case``, queries c-1.. distinct texts."""
    positives, negatives = COLLISIONS[case]
    lines = [json.dumps({"id": "c-0", "q": "question zero", "p": positives, "n": negatives})]
    lines += [json.dumps({"id": f"c-{i}", "q": f"question {i}", "p": [f"P{i}a text.", f"P{i}b text."],
                          "n": [f"N{i}a text.", f"N{i}b text.", f"N{i}c text."]}) for i in range(1, n_queries)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("budget", [2, 3, 4])
@pytest.mark.parametrize("case", COLLISIONS)
def test_texts_that_become_one_within_the_budget_are_a_duplicate_text(tmp_path, case, budget):
    path = collision_file(tmp_path / "c.jsonl", case, 6)
    whole, _ = prepare("generic", path, n_queries=None, seed=0, designs=[(5, 2)])
    assert "c-0" in whole["id"].to_list()
    short, report = prepare("generic", path, n_queries=None, seed=0, designs=[(5, 2)], text_words=budget)
    assert "c-0" not in short["id"].to_list() and short.height == 5
    assert report["skipped"]["duplicate_text"] == 1
    for row in short.iter_rows(named=True):
        assert len(set(row["p"])) == len(row["p"]) and not set(row["p"]) & set(row["n"])


@pytest.mark.parametrize("case", COLLISIONS)
def test_a_sampled_query_lost_to_a_collision_gives_its_place_to_the_next(tmp_path, case):
    path = collision_file(tmp_path / "c.jsonl", case, 30)
    whole, _ = prepare("generic", path, n_queries=29, seed=3, designs=[(5, 2)])
    short, _ = prepare("generic", path, n_queries=29, seed=3, designs=[(5, 2)], text_words=2)
    assert short.height == 29 and "c-0" not in short["id"].to_list()
    assert set(whole["id"]) - {"c-0"} <= set(short["id"])


def test_a_file_whose_only_query_collides_is_one_error(tmp_path):
    path = collision_file(tmp_path / "c.jsonl", "positive and negative", 1)
    with pytest.raises(InputError) as error:
        prepare("generic", path, n_queries=None, seed=0, designs=[(5, 2)], text_words=2)
    assert error.value.path == str(path) and error.value.record == "id c-0" and "\n" not in str(error.value)
    assert error.value.rule.startswith("two of its texts become one within the text budget")
