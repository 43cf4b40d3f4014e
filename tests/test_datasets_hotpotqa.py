"""HotpotQA adapters on the shipped real samples and a small original-layout fixture."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from conftest import REPO
from retrieval_response.datasets import read_texts
from retrieval_response.datasets.layouts import read_with_notes
from retrieval_response.infra.errors import InputError

pytestmark = pytest.mark.unit

DATA = REPO / "resources" / "data" / "hotpotqa"
DISTRACTOR = DATA / "hotpot_dev_distractor_sample100.json"
IRCOT = DATA / "hotpot_dev_ircot_subsample500.jsonl"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "datasets"


def test_distractor_paragraph_level_has_two_positives_and_eight_negatives_per_hard_question():
    texts = read_texts("hotpotqa_hf", DISTRACTOR)
    assert texts.height == 100
    assert texts["subset"].unique().to_list() == ["Hp-h"]
    assert texts["level"].unique().to_list() == ["hard"]
    assert texts["p"].list.len().unique().to_list() == [2]
    assert texts["n"].list.len().unique().to_list() == [8]
    assert texts["id"].is_unique().all()
    assert texts["id"].to_list() == [f"Hp-h-{i}" for i in range(100)]


def test_distractor_sentence_level_positives_are_the_supporting_facts():
    raw = json.loads(DISTRACTOR.read_text(encoding="utf-8"))
    texts = read_texts("hotpotqa_hf", DISTRACTOR, level="sentence")
    assert texts["subset"].unique().to_list() == ["Hs-h"]
    by_source = {row["source_id"]: row for row in texts.iter_rows(named=True)}
    for record in raw:
        sentences = dict(zip(record["context"]["title"], record["context"]["sentences"], strict=False))
        facts = record["supporting_facts"]
        expected = {f"{t}: {sentences[t][s].strip()}" for t, s in zip(facts["title"], facts["sent_id"], strict=False)}
        row = by_source[record["id"]]
        assert set(row["p"]) == expected
        distinct_sentences = {f"{t}: {s.strip()}" for t, body in sentences.items() for s in body if s.strip()}
        assert len(row["p"]) + len(row["n"]) == len(distinct_sentences), "repeated negatives are dropped"
        assert not expected & set(row["n"])


def test_distractor_sentence_level_drops_the_two_empty_sentences():
    texts, notes = read_with_notes("hotpotqa_hf", DISTRACTOR, level="sentence")
    assert notes["empty_texts_dropped"] == 2
    assert texts["p"].list.len().min() == 2 and texts["p"].list.len().max() == 5
    assert not texts.select(pl.col("n").list.eval(pl.element().str.ends_with(": ")).list.any().any()).item()


def test_ircot_layout_reads_500_paragraph_questions_without_level():
    texts = read_texts("hotpotqa_ircot", IRCOT, level="paragraph")
    assert texts.height == 500
    assert texts["subset"].unique().to_list() == ["Hp"]
    assert texts["p"].list.len().unique().to_list() == [2]
    assert texts["n"].list.len().max() == 8
    assert "level" not in texts.columns


def test_ircot_and_distractor_agree_on_the_supporting_paragraphs_of_shared_questions():
    distractor = read_texts("hotpotqa_hf", DISTRACTOR)
    ircot = read_texts("hotpotqa_ircot", IRCOT)
    shared = distractor.join(ircot, on="source_id", suffix="_ircot")
    assert shared.height == 12
    titles = pl.col("p").list.eval(pl.element().str.split(": ").list.first()).list.sort()
    titles_ircot = pl.col("p_ircot").list.eval(pl.element().str.split(": ").list.first()).list.sort()
    assert shared.select((titles == titles_ircot).all()).item()


def test_ircot_sentence_level_is_refused():
    with pytest.raises(InputError, match="config key level: the IRCoT layout has no sentence labels"):
        read_texts("hotpotqa_ircot", IRCOT, level="sentence")


def test_unknown_granularity_is_refused():
    with pytest.raises(InputError, match="config key level: level must be one of paragraph, sentence"):
        read_texts("hotpotqa_hf", DISTRACTOR, level="word")


def test_original_layout_levels_subsets_and_missing_supporting_facts():
    path = FIXTURES / "hotpotqa_original_layout.json"
    paragraphs, notes = read_with_notes("hotpotqa_hf", path)
    assert paragraphs["id"].to_list() == ["Hp-m-0", "Hp-e-1"]
    assert paragraphs["source_id"].to_list() == ["orig-1", "orig-2"]
    assert notes["supporting_facts_missing"] == 1
    first = paragraphs.row(0, named=True)
    assert [text.split(": ")[0] for text in first["p"]] == ["Arthur's Magazine", "First for Women"]
    assert first["p"][0].endswith("It was edited by T.S. Arthur.")
    sentences, notes = read_with_notes("hotpotqa_hf", path, level="sentence")
    assert sentences["subset"].to_list() == ["Hs-m", "Hs-e"]
    assert notes["empty_texts_dropped"] == 1
    assert sentences["p"].list.len().to_list() == [2, 2]
