"""The arXiv line-break repair: joined words split into dictionary words, everything else kept."""

from __future__ import annotations

import json

import polars as pl
import pytest

from conftest import REPO
from retrieval_response.datasets import arxiv_words
from retrieval_response.datasets.arxiv_words import dictionary, dictionary_report, split_joined_words
from retrieval_response.datasets.layouts import check_options, prepare
from retrieval_response.infra.errors import InputError

pytestmark = pytest.mark.unit

SHIPPED = REPO / "resources/data/arxiv/arxiv_2023-09_abstracts.parquet"


@pytest.mark.parametrize("joined, repaired", [
    ("accelerate global economicgrowth by", "accelerate global economic growth by"),
    ("the effects ofthe Industrial Revolution", "the effects of the Industrial Revolution"),
    ("Inthis work", "In this work"),  # the capital stays with the first part
    ("a regime of increasingreturns to scale,", "a regime of increasing returns to scale,"),
    ("over a brief period of time.Against this backdrop", "over a brief period of time. Against this backdrop"),
    ("(machinelearning)", "(machine learning)"),
])
def test_joined_words_and_sentences_are_split(joined, repaired):
    assert split_joined_words(joined) == repaired


@pytest.mark.parametrize("kept", [
    "We examine whether substantial AI automation could accelerate growth.",  # dictionary words
    "LLMs on GitHub and DeepMind models",  # acronyms and mixed case
    "see https://github.com/ofthe/code or ofthe@example.org",  # URLs and e-mail addresses
    r"$x \in \mathbb{R}$ and \mathcal{O}",  # LaTeX commands
    "iid xyz qwv",  # shorter than MIN_LETTERS
    "Gaussian Bayesian datasets",  # not dictionary words, but no split into dictionary words
    "e.g.The U.S.A. Fig.1 growth:1) a  b\tc",  # no two lowercase letters before the period; whitespace kept
])
def test_text_without_joined_words_is_kept_byte_for_byte(kept):
    assert split_joined_words(kept) == kept


def test_the_repair_is_idempotent_and_only_splits_into_dictionary_words():
    texts = pl.read_parquet(SHIPPED, columns=["abstract"])["abstract"].head(60).to_list()
    for text in texts:
        repaired = split_joined_words(text)
        assert split_joined_words(repaired) == repaired
        assert repaired.replace(" ", "") == text.replace(" ", "")  # only spaces were added
        original = set(arxiv_words._LETTERS.findall(text))
        for word in set(arxiv_words._LETTERS.findall(repaired)) - original:
            assert word.lower() in dictionary(), word  # a new word is a dictionary word


def test_the_table_repairs_positives_and_negatives_and_counts_changed_texts():
    texts = pl.DataFrame({"id": ["A-0", "A-1"], "p": [["ofthe a", "clean text"], ["inthe b"]],
                          "n": [["clean text", "tothe c"], []]})
    repaired, report = arxiv_words.split_joined_words_table(texts)
    assert repaired["p"].to_list() == [["of the a", "clean text"], ["in the b"]]
    assert repaired["n"].to_list() == [["clean text", "to the c"], []]
    assert report == {"texts": 4, "texts_changed": 3}


def test_dictionary_report_counts_words_outside_the_dictionary_before_and_after():
    report = dictionary_report(["ofthe cat", "Inthis qwzx", "time.Against it"], examples=5)
    # before: ofthe, cat, Inthis, qwzx, time, Against, it -> 7 words, 3 outside (ofthe, inthis, qwzx)
    assert (report["words_before"], report["outside_dictionary_before"]) == (7, 3)
    # after: of, the, cat, In, this, qwzx, time, Against, it -> 9 words, 1 outside (qwzx)
    assert (report["words_after"], report["outside_dictionary_after"]) == (9, 1)
    assert report["texts_changed"] == 3 and report["sentence_joins_separated"] == 1
    assert report["words_split"] == 2 and {s["word"] for s in report["sample_splits"]} == {"ofthe", "Inthis"}


def test_prepare_repairs_the_arxiv_texts_before_the_text_budget():
    kwargs = {"n_queries": 3, "seed": 1, "designs": [(6, 2)], "text_words": 40}
    plain, plain_report = prepare("arxiv_parquet", SHIPPED, **kwargs)
    repaired, report = prepare("arxiv_parquet", SHIPPED, repair_texts=arxiv_words.split_joined_words_table, **kwargs)
    assert plain_report["text_repair"] is None
    assert report["text_repair"]["texts_changed"] > 0
    assert repaired["id"].to_list() == plain["id"].to_list()
    joined = [t for texts in plain["p"] for t in texts if "ofthe " in t]
    assert joined and not any("ofthe " in t for texts in repaired["p"] for t in texts)


def test_split_joined_words_applies_to_the_arxiv_layouts_only():
    check_options("config.yaml", "arxiv_snapshot", level=None, subset=None, split_joined_words=True)
    with pytest.raises(InputError, match="config.yaml: config key split_joined_words: .*arxiv_parquet and arxiv_snapshot"):
        check_options("config.yaml", "hotpotqa_hf", level=None, subset=None, split_joined_words=True)


def test_the_committed_measurement_is_the_commands_output():
    committed = json.loads((REPO / "docs/findings/arxiv_words.json").read_text())
    assert committed["command"].startswith("python -m retrieval_response.datasets.arxiv_words arxiv_parquet")
    assert committed["outside_share_after"] < committed["outside_share_before"]
    sample = committed["sample_splits"]
    assert all(arxiv_words.split_word(s["word"]) == s["split"] for s in sample)
