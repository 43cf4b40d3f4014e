"""MS MARCO adapter on the shipped v1.1 sample and the row-layout fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO
from retrieval_response.datasets import prepare, read_texts
from retrieval_response.datasets.layouts import read_with_notes

pytestmark = pytest.mark.unit

SAMPLE = REPO / "resources" / "data" / "msmarco" / "ms_marco_v1.1_train_sample200.json"
ROWS = Path(__file__).resolve().parent / "fixtures" / "datasets" / "msmarco_rows.jsonl"


def test_positives_are_the_selected_passages():
    raw = json.loads(SAMPLE.read_text(encoding="utf-8"))
    texts = read_texts("msmarco", SAMPLE)
    assert texts.height == 200 and texts["subset"].unique().to_list() == ["M"]
    for record, row in zip(raw, texts.iter_rows(named=True), strict=False):
        passages = record["passages"]
        selected = [t for s, t in zip(passages["is_selected"], passages["passage_text"], strict=False) if s == 1]
        others = [t.strip() for s, t in zip(passages["is_selected"], passages["passage_text"], strict=False) if s == 0]
        assert row["p"] == [t.strip() for t in selected]
        assert row["n"] == list(dict.fromkeys(others)), "negatives in source order, repeats dropped"
        assert row["source_id"] == str(record["query_id"]) and row["q"] == record["query"]


def test_twenty_queries_have_two_or_more_positives():
    texts = read_texts("msmarco", SAMPLE)
    assert (texts["p"].list.len() >= 2).sum() == 20


def test_prepare_keeps_the_queries_with_enough_positives_and_negatives():
    texts, report = prepare("msmarco", SAMPLE, n_queries=None, seed=0, designs=[(5, 2)])
    assert report["read"] == 200 and report["usable"] == texts.height == 19
    assert report["skipped"] == {"duplicate_text": 1, "fewer_positives_than_Np": 179, "too_few_candidates": 1}
    assert report["source_notes"]["duplicate_negatives_dropped"] == 4
    assert (texts["p"].list.len() >= 2).all() and (texts["n"].list.len() >= 3).all()


def test_row_layout_of_the_original_release_and_empty_passages():
    texts, notes = read_with_notes("msmarco", ROWS)
    assert texts["p"].list.len().to_list() == [2, 1]
    assert texts.row(0, named=True)["n"] == ["Mars is a rocky planet."]
    assert notes["empty_texts_dropped"] == 1
