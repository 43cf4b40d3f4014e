"""One validator for every ranked and graded table: a row of the workflow's Parquet table and the
same sample as a published JSON record, broken the same way, are refused with the same rule and the
same detail, one line naming the file, the record (its position and id) and the rule."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.errors import InputError, InputErrors
from retrieval_response.llm.pipeline import topk_selections
from retrieval_response.tables.collect import with_top_2k_positives
from retrieval_response.tables.graded import export_published_json
from retrieval_response.tables.published import read_graded, read_ranked
from retrieval_response.tables.sample_rules import MAX_NC
from retrieval_response.tables.workflow_tables import read_analysis_table, read_graded_table, read_ranked_table
from retrieval_response.testing.synthetic import synthetic_ranked, synthetic_texts

pytestmark = pytest.mark.unit

TEXTS = synthetic_texts(6)
RANKED = synthetic_ranked(TEXTS, "ML6", 5, 2, [1, 2, 3, 4])
PUBLISHED_RANKED_COLUMNS = ("id", "E", "Nc", "Np", "K", "P", "R", "rank")


def graded_table() -> pl.DataFrame:
    """The graded table of RANKED (ids S-0..S-5, K = 1..4, Nc = 5, Np = 2), graded against the
    ideal and the gold answers."""
    rows = topk_selections(RANKED, TEXTS).drop("q", "refs")
    return rows.with_columns(
        answer_ideal=pl.lit("ideal"), answer_topK=pl.lit("top"), grade=pl.lit(3, pl.Int8),
        grade_expected=pl.lit(3.0), status=pl.lit("graded"), grade_raw=pl.lit("3"),
        grade_gold=pl.lit(4, pl.Int8), grade_gold_expected=pl.lit(4.0), status_gold=pl.lit("graded"),
        grade_gold_raw=pl.lit("4"),
    )


GRADED = graded_table()
ROW = 11
"""The row broken: S-2 at K = 4, the last of its sample (so no other row stops being a prefix of it)."""


def edited(frame: pl.DataFrame, row: int, change) -> pl.DataFrame:
    """``frame`` with row ``row`` updated by ``change(row as a dict)`` (a hand edit), types kept."""
    rows = frame.to_dicts()
    rows[row] = rows[row] | change(rows[row])
    return pl.DataFrame(rows, schema=frame.schema)


def refused(read, path: Path) -> InputError:
    """The InputError of ``read(path)``, asserted to be one line starting with the file's name."""
    with pytest.raises(InputError) as error:
        read(path)
    assert str(error.value).startswith(f"{path}: ") and "\n" not in str(error.value)
    return error.value


def same_rule(workflow: InputError, published: InputError) -> None:
    """The two errors name the same rule with the same detail (positions are rows in one, records in the other)."""
    assert re.sub(r"\brow (\d+)", r"record \1", workflow.rule) == published.rule


def in_top(rank: list[int], np_: int = 2) -> list[int]:
    return [int(r < np_) for r in rank]


GRADED_BREAKS = {
    # case: (change of the row, the rule's message, a rule of every sample: the analysis table's too)
    "Nc above the bound": (lambda r: {"Nc": MAX_NC + 1}, f"Nc must lie in 1..{MAX_NC}: Nc = {MAX_NC + 1}", True),
    "Np above Nc": (lambda r: {"Np": 6}, "need 1 <= Np <= Nc: Np = 6, Nc = 5", True),
    "E not a safe name": (lambda r: {"E": "a/b"}, "ranker label E must be a safe name: 'a/b' cannot be used", True),
    "K = 0": (lambda r: {"K": 0}, "K must lie in 1..1000000: K = 0", True),
    "inK not 0/1": (lambda r: {"inK": [2, *r["inK"][1:]]}, "inK must hold only 0 and 1: [2, ", True),
    "inK longer than K": (lambda r: {"K": 3}, "len(inK) must lie in 1..K: len(inK) = 4, K = 3", True),
    "K beyond Nc, top K full": (lambda r: {"K": 6, "rank": [0, 1, 2, 3, 4, 0], "inK": [1, 1, 0, 0, 0, 1]},
                                "K must be at most Nc unless the top K is short", True),
    "more positives than Np": (lambda r: {"inK": [1, 1, 1, 0]}, "sum(inK) (the positives in the top K) must be at most Np", True),
    "more negatives than Nc - Np": (lambda r: {"inK": [0, 0, 0, 0]},
                                    "the top K must hold at most Nc - Np negatives (0 in inK): 4 zeros, Nc - Np = 3", True),
    "rank outside 0..Nc-1": (lambda r: {"rank": [9, *r["rank"][1:]]}, "rank values must lie in 0..Nc-1: 9 with Nc = 5", True),
    "rank repeats": (lambda r: {"rank": [r["rank"][1], *r["rank"][1:]]}, "rank must not repeat a candidate: ", True),
    "rank shorter than inK": (lambda r: {"rank": r["rank"][:3]},
                              "len(rank) must equal len(inK): len(rank) = 3, len(inK) = 4", True),
    "inK against rank": (lambda r: {"rank": [*r["rank"][1::-1], *r["rank"][2:]]}, "inK must be 1 exactly where rank < Np", True),
    "short top K without every negative": (lambda r: {"rank": r["rank"][:1], "inK": r["inK"][:1]},
                                           "a top K shorter than K must hold every index >= Np", True),
    "grade 7": (lambda r: {"grade": 7}, "grade must lie in 1..5 or be null: grade = 7", True),
    "grade_expected 5.5": (lambda r: {"grade_expected": 5.5},
                           "grade_expected must lie in [1, 5] or be null: grade_expected = 5.5", False),
    "status empty": (lambda r: {"status": ""}, "status must be a non-empty string: ''", False),
    "a grade without status 'graded'": (lambda r: {"status": "unparsed"},
                                        "grade must be given exactly when status is 'graded': status 'unparsed', grade 3", False),
    "status 'graded' without a grade": (
        lambda r: {"grade": None}, "grade must be given exactly when status is 'graded': status 'graded', grade null", False),
    "grade_gold 0": (lambda r: {"grade_gold": 0}, "grade_gold must lie in 1..5 or be null: grade_gold = 0", False),
    "grade_gold_expected 0.5": (lambda r: {"grade_gold_expected": 0.5},
                                "grade_gold_expected must lie in [1, 5] or be null: grade_gold_expected = 0.5", False),
    "a gold grade without status_gold 'graded'": (lambda r: {"status_gold": "no_gold_answer"},
                                                  "grade_gold must be given exactly when status_gold is 'graded'", False),
    "duplicate sample": (lambda r: GRADED.row(ROW - 1, named=True),
                         "duplicate (id, E, Nc, Np, K): the key of row 11 (id S-2)", False),
    "not a prefix of the smaller K": (lambda r: {"rank": (rank := [r["rank"][0], r["rank"][2], r["rank"][1], r["rank"][3]]),
                                                 "inK": in_top(rank)},
                                      "the samples of one (id, E, Nc, Np) at several K must be prefixes of one ranking (rank): "
                                      "rank[:3] = ", False),
}


@pytest.mark.parametrize("case", GRADED_BREAKS, ids=list(GRADED_BREAKS))
def test_a_broken_graded_sample_gets_the_same_line_from_parquet_and_published_json(tmp_path, case):
    change, rule, every_sample = GRADED_BREAKS[case]
    table = edited(GRADED, ROW, change)
    parquet, published = tmp_path / "graded.parquet", tmp_path / "samples_graded.json"
    write_parquet(table, parquet)
    export_published_json(table, published)
    workflow, record = refused(read_graded_table, parquet), refused(read_graded, published)
    assert workflow.record == f"row {ROW + 1} (id S-2)" and record.record == f"record {ROW + 1} (id S-2)"
    assert workflow.rule.startswith(rule.replace("record ", "row "))
    same_rule(workflow, record)
    if every_sample:
        analysis = tmp_path / "analysis.parquet"
        write_parquet(with_top_2k_positives(table, RANKED), analysis)
        assert refused(read_analysis_table, analysis).rule == workflow.rule


RANKED_ROW = 2
RANKED_BREAKS = {
    "Nc above the bound": (lambda r: {"Nc": MAX_NC + 1}, f"Nc must lie in 1..{MAX_NC}: Nc = {MAX_NC + 1}"),
    "Np = 0": (lambda r: {"Np": 0}, "need 1 <= Np <= Nc: Np = 0, Nc = 5"),
    "E not a safe name": (lambda r: {"E": "a b"}, "ranker label E must be a safe name: 'a b' cannot be used"),
    "rank outside 0..Nc-1": (lambda r: {"rank": [-1, *r["rank"][1:]]}, "rank values must lie in 0..Nc-1: -1 with Nc = 5"),
    "rank repeats": (lambda r: {"rank": [r["rank"][1], *r["rank"][1:]]}, "rank must not repeat a candidate: "),
    "rank of some candidates": (lambda r: {"rank": r["rank"][:3]},
                                "rank must be a permutation of 0..Nc-1 (all Nc candidates): 3 values, Nc = 5"),
    "K beyond Nc": (lambda r: {"K": [1, 2, 3, 9]}, "K must be increasing values in 1..Nc: K = [1, 2, 3, 9], Nc = 5"),
    "K unsorted": (lambda r: {"K": [3, 2, 1, 4]}, "K must be increasing values in 1..Nc: K = [3, 2, 1, 4]"),
    "K empty": (lambda r: {"K": [], "P": [], "R": []}, "K must be increasing values in 1..Nc: K = [], Nc = 5"),
    "P shorter than K": (lambda r: {"P": [0.5]}, "P and R must be as long as K: len(K) = 4, len(P) = 1, len(R) = 4"),
    "P not counted from rank": (lambda r: {"P": [p + 0.5 for p in r["P"]]},
                                "P and R must equal n_p/K and n_p/Np, n_p the positives (rank < Np) in rank[:K]: K = [1, "),
    "duplicate sample": (lambda r: {"id": "S-0"}, "duplicate (id, E, Nc, Np): the key of row 1 (id S-0)"),
}


@pytest.mark.parametrize("case", RANKED_BREAKS, ids=list(RANKED_BREAKS))
def test_a_broken_ranked_sample_gets_the_same_line_from_parquet_and_published_json(tmp_path, case):
    change, rule = RANKED_BREAKS[case]
    table = edited(RANKED, RANKED_ROW, change)
    parquet, published = tmp_path / "ranked.parquet", tmp_path / "samples_ranked.json"
    write_parquet(table, parquet)
    table.select(PUBLISHED_RANKED_COLUMNS).write_json(published)
    workflow, record = refused(read_ranked_table, parquet), refused(read_ranked, published)
    sample = "S-0" if case == "duplicate sample" else "S-2"
    assert workflow.record == f"row 3 (id {sample})" and record.record == f"record 3 (id {sample})"
    assert workflow.rule.startswith(rule)
    same_rule(workflow, record)


@pytest.mark.parametrize("read, write, table", [
    (read_graded_table, write_parquet, GRADED),
    (read_graded, export_published_json, GRADED),
    (read_ranked_table, write_parquet, RANKED),
    (read_ranked, lambda t, p: t.select(PUBLISHED_RANKED_COLUMNS).write_json(p), RANKED),
], ids=["graded parquet", "graded json", "ranked parquet", "ranked json"])
def test_an_id_that_is_no_safe_name_is_not_echoed_as_the_record(tmp_path, read, write, table):
    path = tmp_path / "table"
    row = 2 if table is RANKED else ROW
    write(edited(table, row, lambda r: {"id": "S-2\nx"}), path)
    error = refused(read, path)
    assert error.record in (f"row {row + 1}", f"record {row + 1}")
    assert error.rule.startswith("id must be a safe name: 'S-2\\nx' cannot be used in a file name")


@pytest.mark.parametrize("read, write", [(read_graded_table, write_parquet), (read_graded, export_published_json)],
                         ids=["parquet", "json"])
def test_every_broken_row_gets_its_line_in_file_order(tmp_path, read, write):
    """One line per broken row, in file order, each with its first broken rule; at most
    InputErrors.MAX_LINES, then a count of the rest."""
    rows = GRADED.to_dicts()
    for i in range(0, len(rows), 2):
        rows[i] |= {"grade": 9} if i % 4 else {"Np": 0}
    path = tmp_path / "graded"
    write(pl.DataFrame(rows, schema=GRADED.schema), path)
    with pytest.raises(InputErrors) as error:
        read(path)
    where = "row" if read is read_graded_table else "record"
    assert str(error.value).splitlines()[:3] == [
        f"{path}: {where} 1 (id S-0): need 1 <= Np <= Nc: Np = 0, Nc = 5",
        f"{path}: {where} 3 (id S-0): grade must lie in 1..5 or be null: grade = 9",
        f"{path}: {where} 5 (id S-1): need 1 <= Np <= Nc: Np = 0, Nc = 5"]
    assert len(error.value.errors) == len(rows) // 2
    many = pl.concat([pl.DataFrame(rows, schema=GRADED.schema)] * 4).with_columns(
        id=pl.format("S-{}", pl.int_range(pl.len())))
    write(many, path)
    with pytest.raises(InputErrors) as error:
        read(path)
    lines = str(error.value).splitlines()
    assert len(lines) == InputErrors.MAX_LINES + 1
    assert lines[-1] == f"{path}: ... and {2 * len(rows) - InputErrors.MAX_LINES} more broken records"


@pytest.mark.parametrize("table, read", [(GRADED, read_graded_table), (RANKED, read_ranked_table)], ids=["graded", "ranked"])
@pytest.mark.parametrize("column", ["id", "Nc", "rank"])
def test_a_null_in_a_workflow_table_is_refused_naming_the_column(tmp_path, table, read, column):
    """The published reader refuses a null where a value is required while it builds the frame
    (``field ... must be ...``); a Parquet table holds its nulls, refused by the rules."""
    path = tmp_path / "table.parquet"
    write_parquet(edited(table, 2, lambda r: {column: None}), path)
    assert refused(read, path).rule == f"{column} must not be null"


def test_a_published_id_must_name_its_subset(tmp_path):
    path = tmp_path / "samples_graded.json"
    export_published_json(edited(GRADED, ROW, lambda r: {"id": "S2"}), path)
    assert refused(read_graded, path).rule == "id must be '<subset>-<number>': 'S2'"
