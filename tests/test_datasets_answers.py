"""Gold answers: every layout's texts table has ``answers: list[str]``, filled from the source where it has them."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from conftest import REPO
from retrieval_response.datasets import read_texts

pytestmark = pytest.mark.unit

DATA = REPO / "resources" / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "datasets"
ANSWERS = pl.List(pl.String)

EVERY_LAYOUT_FILE = [
    ("hotpotqa_hf", DATA / "hotpotqa" / "hotpot_dev_distractor_sample100.json"),
    ("hotpotqa_hf", FIXTURES / "hotpotqa_original_layout.json"),
    ("hotpotqa_ircot", DATA / "hotpotqa" / "hotpot_dev_ircot_subsample500.jsonl"),
    ("msmarco", DATA / "msmarco" / "ms_marco_v1.1_train_sample200.json"),
    ("msmarco", FIXTURES / "msmarco_rows.jsonl"),
    ("natural_questions", FIXTURES / "nq_simplified.jsonl"),
    ("natural_questions", FIXTURES / "nq_prepared.jsonl"),
    ("published_texts", FIXTURES / "published_samples_texts.json"),
    ("generic", FIXTURES / "generic.jsonl"),
    ("arxiv_parquet", DATA / "arxiv" / "arxiv_2023-09_abstracts.parquet"),
    ("arxiv_snapshot", FIXTURES / "arxiv_snapshot_sample.jsonl"),
]


@pytest.mark.parametrize(("layout", "path"), EVERY_LAYOUT_FILE, ids=[f"{lay}-{p.name}" for lay, p in EVERY_LAYOUT_FILE])
def test_every_layout_has_an_answers_column_of_clean_distinct_strings(layout, path):
    texts = read_texts(layout, path)
    assert texts.schema["answers"] == ANSWERS
    assert texts.columns.index("answers") == 5
    assert texts["answers"].null_count() == 0
    flat = texts["answers"].list.explode().drop_nulls()
    assert (flat.str.strip_chars() == flat).all() and (flat.str.len_chars() > 0).all()
    assert (texts["answers"].list.len() == texts["answers"].list.unique().list.len()).all()


def test_hotpotqa_hf_answer_is_the_record_answer():
    path = DATA / "hotpotqa" / "hotpot_dev_distractor_sample100.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    texts = read_texts("hotpotqa_hf", path)
    assert texts["answers"].to_list() == [[record["answer"].strip()] for record in raw]


def test_hotpotqa_ircot_answers_are_the_spans_of_answers_objects():
    path = DATA / "hotpotqa" / "hotpot_dev_ircot_subsample500.jsonl"
    raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    texts = read_texts("hotpotqa_ircot", path)
    assert texts["answers"].to_list() == [record["answers_objects"][0]["spans"] for record in raw]
    assert texts["answers"].list.len().min() == 1


def test_ircot_answer_object_without_spans_gives_its_number_or_its_date(tmp_path):
    base = json.loads((DATA / "hotpotqa" / "hotpot_dev_ircot_subsample500.jsonl").open(encoding="utf-8").readline())
    empty_date = {"day": "", "month": "", "year": ""}
    objects = [
        [{"spans": [], "number": "12", "date": empty_date}],
        [{"spans": [], "number": "", "date": {"day": "4", "month": "July", "year": "1776"}}],
        [{"spans": [], "number": "", "date": empty_date}],
        [{"spans": ["Paris"], "number": "3", "date": empty_date}, {"spans": [" Paris "], "number": "", "date": empty_date}],
    ]
    path = tmp_path / "ircot.jsonl"
    path.write_text(
        "".join(json.dumps(base | {"question_id": f"q{i}", "answers_objects": obj}) + "\n" for i, obj in enumerate(objects))
    )
    assert read_texts("hotpotqa_ircot", path)["answers"].to_list() == [["12"], ["4 July 1776"], [], ["Paris"]]


def test_msmarco_well_formed_answers_first_then_answers_without_placeholder(tmp_path):
    rows = [json.loads(line) for line in (FIXTURES / "msmarco_rows.jsonl").read_text().splitlines()]
    well_formed = "A gas giant is a large planet made of gas."
    rows[0] |= {"wellFormedAnswers": [well_formed], "answers": ["A large planet made of gas.", ""]}
    rows[1] |= {"wellFormedAnswers": "[]", "answers": ["No Answer Present."]}
    path = tmp_path / "msmarco.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    texts = read_texts("msmarco", path)
    assert texts["answers"].to_list() == [[well_formed, "A large planet made of gas."], []]


def test_msmarco_shipped_sample_keeps_every_answer():
    path = DATA / "msmarco" / "ms_marco_v1.1_train_sample200.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    texts = read_texts("msmarco", path)
    expected = [list(dict.fromkeys(a.strip() for a in r["wellFormedAnswers"] + r["answers"] if a.strip())) for r in raw]
    assert texts["answers"].to_list() == expected
    assert texts["answers"].list.len().sum() > 0


def test_natural_questions_short_answers_are_token_spans_without_html_and_yes_no(tmp_path):
    record = json.loads((FIXTURES / "nq_simplified.jsonl").read_text().splitlines()[0])
    tokens = record["document_text"].split(" ")
    record["annotations"][0]["short_answers"] = [{"start_token": 0, "end_token": 3}]
    record["annotations"][1]["short_answers"] = [{"start_token": 4, "end_token": 5}, {"start_token": 0, "end_token": 3}]
    record["annotations"][2]["yes_no_answer"] = "NO"
    path = tmp_path / "nq.jsonl"
    path.write_text(json.dumps(record) + "\n")
    texts = read_texts("natural_questions", path)
    assert tokens[:5] == ["<H1>", "Jupiter", "</H1>", "<P>", "Jupiter"]
    assert texts["answers"].to_list() == [["Jupiter", "no"]]


def test_natural_questions_without_short_answers_has_none():
    assert read_texts("natural_questions", FIXTURES / "nq_simplified.jsonl")["answers"].to_list() == [[]]


@pytest.mark.parametrize("layout", ["generic", "published_texts", "natural_questions"])
def test_optional_answer_field_is_a_string_or_a_list_of_strings(layout, tmp_path):
    source = {"generic": "generic.jsonl", "published_texts": "published_samples_texts.json",
              "natural_questions": "nq_prepared.jsonl"}[layout]
    text = (FIXTURES / source).read_text()
    rows = json.loads(text) if text.lstrip().startswith("[") else [json.loads(line) for line in text.splitlines()]
    given = ["  Settings  ", ["a", "b", "a", " "], None, []]
    for row, answer in zip(rows, given, strict=False):
        if answer is not None:
            row["answer"] = answer
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    expected = ([["Settings"], ["a", "b"]] + [[]] * len(rows))[: len(rows)]
    assert read_texts(layout, path)["answers"].to_list() == expected


def test_arxiv_has_no_gold_answers():
    texts = read_texts("arxiv_parquet", DATA / "arxiv" / "arxiv_2023-09_abstracts.parquet")
    assert texts.height > 0 and texts["answers"].list.len().max() == 0
