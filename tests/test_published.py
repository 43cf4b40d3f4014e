"""Readers for the published samples_*.json files, on small fixtures in the published layout."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from conftest import refused_record
from retrieval_response.analysis.correlation_tables import analysis_tables
from retrieval_response.infra.errors import InputError
from retrieval_response.measures.features import add_features
from retrieval_response.tables.human_grades import read_human_grades
from retrieval_response.tables.published import read_graded, read_ranked

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent / "fixtures" / "published"


def test_read_graded_fixture():
    graded = read_graded(FIXTURES / "samples_graded.json")
    assert graded.height == 14
    assert graded.columns[:2] == ["id", "subset"]
    assert {"E", "Nc", "Np", "K", "rank", "inK", "grade", "P", "R", "answer_ideal", "answer_topK"} <= set(graded.columns)
    assert graded.schema["inK"] == pl.List(pl.Int8) and graded.schema["grade"] == pl.Int8
    assert graded["subset"].unique().sort().to_list() == ["A", "Hp"]
    assert graded["grade"].null_count() == 1


def test_json_lines_read_the_same(tmp_path):
    records = json.loads((FIXTURES / "samples_graded.json").read_text())
    path = tmp_path / "samples_graded.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert read_graded(path).equals(read_graded(FIXTURES / "samples_graded.json"))


@pytest.mark.parametrize(
    "change, rule",
    [
        (lambda r: r.update(inK=r["inK"] + [0]), "len(inK)"),
        (lambda r: r.update(grade=6), "grade must lie in 1..5 or be null: grade = 6"),
        (lambda r: r.pop("Np"), "missing field 'Np'"),
        (lambda r: r.update(Np=7), "1 <= Np <= Nc"),
        (lambda r: r.update(inK=[1 - v for v in r["inK"]]), "inK must be 1 exactly where rank < Np"),
        (lambda r: r.update(grade_gold=0, status_gold="graded"), "grade_gold must lie in 1..5 or be null: grade_gold = 0"),
        (lambda r: r.update(grade_gold=4, status_gold="no_gold_answer"),
         "grade_gold must be given exactly when status_gold is 'graded'"),
        (lambda r: r.update(grade_gold=4, status_gold=None), "grade_gold must be null when status_gold is null"),
        (lambda r: r.update(grade_gold_expected=5.5),
         "grade_gold_expected must lie in [1, 5] or be null: grade_gold_expected = 5.5"),
    ],
)
def test_bad_graded_record_names_file_record_and_rule(tmp_path, change, rule):
    records = json.loads((FIXTURES / "samples_graded.json").read_text())
    change(records[2])
    path = tmp_path / "samples_graded.json"
    path.write_text(json.dumps(records))
    refused_record(read_graded, path, "record 3 (id A-1)", rule)


def test_gold_grades_are_read_where_given_and_null_where_not_asked(tmp_path):
    records = json.loads((FIXTURES / "samples_graded.json").read_text())
    for i, record in enumerate(records):
        graded = record["grade"] is not None and i % 3 == 0
        record |= {"grade_gold": 1 + i % 5 if graded else None, "grade_gold_expected": 1.5 if graded else None,
                   "status_gold": "graded" if graded else ("no_gold_answer" if i % 3 == 1 else None)}
    path = tmp_path / "samples_graded.json"
    path.write_text(json.dumps(records))
    graded = read_graded(path)
    assert graded.schema["grade_gold"] == pl.Int8 and graded.schema["status_gold"] == pl.String
    assert graded["grade_gold"].to_list() == [r["grade_gold"] for r in records]
    assert graded["status_gold"].to_list() == [r["status_gold"] for r in records]
    assert "grade_gold" not in read_graded(FIXTURES / "samples_graded.json").columns


def test_bad_json_line_and_duplicate_key(tmp_path):
    records = json.loads((FIXTURES / "samples_graded.json").read_text())
    path = tmp_path / "samples_graded.jsonl"
    path.write_text(json.dumps(records[0]) + "\n" + json.dumps(records[1]) + "\n{oops\n")
    with pytest.raises(InputError, match=r"samples_graded.jsonl: line 3: malformed JSON line"):
        read_graded(path)
    path.write_text(json.dumps([records[0], records[1], records[0]]))
    with pytest.raises(InputError, match=r"record 3 \(id A-1\): duplicate \(id, E, Nc, Np, K\): the key of record 1 \(id A-1\)$"):
        read_graded(path)


def test_read_ranked_and_bad_permutation(tmp_path):
    ranked = read_ranked(FIXTURES / "samples_ranked.json")
    assert ranked.height == 3 and ranked.schema["rank"] == pl.List(pl.Int32)
    records = json.loads((FIXTURES / "samples_ranked.json").read_text())
    records[1]["rank"] = [0, 0, 1, 3, 4]
    path = tmp_path / "samples_ranked.json"
    path.write_text(json.dumps(records))
    with pytest.raises(InputError, match=r"record 2 \(id Hp-e-2\): rank must not repeat a candidate: 0 appears twice$"):
        read_ranked(path)


def test_read_published_human_file():
    human = read_human_grades(FIXTURES / "samples_human.json")
    assert {"id", "E", "Nc", "Np", "K", "grade", "grade_human_1", "grade_human_2", "grade_human_3"} <= set(human.columns)
    assert human["grade_human_3"].null_count() == 1


def test_published_files_run_through_the_analysis():
    graded = read_graded(FIXTURES / "samples_graded.json")
    ranked = read_ranked(FIXTURES / "samples_ranked.json")
    features = add_features(graded, ranked)
    # counted from the ranking and by the paper's partner lookup agree where a partner exists
    both = features.drop_nulls("np_partner")
    assert both["np_2K"].to_list() == both["np_partner"].to_list()
    correlations, _, _ = analysis_tables(
        graded, segmentation="fit", alpha_grid="linear:11", min_segment_samples=3, bootstrap_resamples=20, ranked=ranked
    )
    assert "F_e" in correlations["measure"].to_list()
    assert correlations.height > 0
