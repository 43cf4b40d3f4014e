"""Text budget: candidate texts cut to their first sentences within a word budget, never inside a
word, applied when a dataset is prepared and recorded in its report."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from retrieval_response.datasets import prepare, read_texts
from retrieval_response.datasets.text_budget import apply_text_budget, shorten

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
