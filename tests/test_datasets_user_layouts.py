"""Natural Questions, published samples_texts.json and generic layouts on the fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from retrieval_response.datasets import LAYOUTS, read_texts
from retrieval_response.datasets.layouts import read_with_notes

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "datasets"


def test_layout_names():
    assert LAYOUTS == (
        "hotpotqa_hf",
        "hotpotqa_ircot",
        "arxiv_parquet",
        "arxiv_snapshot",
        "msmarco",
        "natural_questions",
        "published_texts",
        "generic",
        "beir",
        "trec",
        "ir_datasets",
        "traces",
    )


def test_unknown_layout_is_a_value_error():
    with pytest.raises(ValueError, match="unknown layout 'csv'"):
        read_texts("csv", FIXTURES / "generic.jsonl")


def test_natural_questions_prepared_layout():
    raw = [json.loads(line) for line in (FIXTURES / "nq_prepared.jsonl").read_text().splitlines()]
    texts = read_texts("natural_questions", FIXTURES / "nq_prepared.jsonl")
    assert texts["id"].to_list() == ["N-0", "N-1", "N-2"]
    assert texts["subset"].unique().to_list() == ["N"]
    assert texts["p"].to_list() == [r["positives"] for r in raw]
    assert texts["n"].to_list() == [r["negatives"] for r in raw]
    assert texts["source_id"].to_list() == ["nq-dev-1", "nq-dev-2", None]


def test_natural_questions_simplified_layout_takes_the_annotators_long_answers():
    texts, notes = read_with_notes("natural_questions", FIXTURES / "nq_simplified.jsonl")
    row = texts.row(0, named=True)
    assert row["p"] == [
        "Jupiter is the fifth planet from the Sun and the largest in the Solar System .",
        "It is a gas giant with a mass more than two and a half times that of all the other planets combined .",
    ]
    assert row["n"] == ["Mass 1.9 e27 kg", "Jupiter has been known to astronomers since antiquity ."]
    assert notes["empty_texts_dropped"] == 1
    assert row["source_id"] == "5655493461695504401"


def test_published_texts_keep_ids_subsets_and_arxiv_extras():
    raw = json.loads((FIXTURES / "published_samples_texts.json").read_text())
    texts = read_texts("published_texts", FIXTURES / "published_samples_texts.json")
    assert texts["id"].to_list() == [r["id"] for r in raw]
    assert texts["subset"].to_list() == ["A", "Hp-e", "Hs-m", "M", "N"]
    arxiv = texts.row(0, named=True)
    assert (arxiv["c1"], arxiv["c2"], arxiv["q2"]) == ("math.ca", "math.pr", "probability")
    assert texts.filter(pl.col("subset") != "A")["c1"].null_count() == 4
    assert texts["p"].to_list() == [r["p"] for r in raw]


def test_published_texts_as_json_lines_give_the_same_table(tmp_path):
    raw = json.loads((FIXTURES / "published_samples_texts.json").read_text())
    lines = tmp_path / "samples_texts.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in raw))
    assert read_texts("published_texts", lines).equals(read_texts("published_texts", FIXTURES / "published_samples_texts.json"))


def test_generic_json_lines_and_parquet_give_the_same_table(tmp_path):
    from_lines = read_texts("generic", FIXTURES / "generic.jsonl")
    assert from_lines["id"].to_list() == ["faq-0", "faq-1", "faq-2"]
    assert from_lines["subset"].unique().to_list() == ["faq"]
    parquet = tmp_path / "mine.parquet"
    from_lines.select("id", "q", "p", "n").write_parquet(parquet)
    assert read_texts("generic", parquet).equals(from_lines)


def test_generic_subset_from_the_config_overrides_the_id_prefix():
    texts = read_texts("generic", FIXTURES / "generic.jsonl", subset="support")
    assert texts["subset"].unique().to_list() == ["support"]
    assert texts["id"].to_list() == ["faq-0", "faq-1", "faq-2"]


def test_subset_is_refused_for_layouts_that_name_their_subsets():
    with pytest.raises(ValueError, match="'subset' applies to generic, beir, trec, ir_datasets, traces only"):
        read_texts("published_texts", FIXTURES / "published_samples_texts.json", subset="X")
