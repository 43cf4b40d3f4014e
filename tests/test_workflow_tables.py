"""The workflow's own Parquet tables, edited by hand, are refused in one line naming the file, the
row and the rule (never an OutOfBoundsError or another polars traceback naming no file); the rules of
the ranked and graded tables, broken one by one: test_sample_rules.py."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.errors import InputError
from retrieval_response.llm.pipeline import topk_selections
from retrieval_response.tables.collect import collect_workflow, with_top_2k_positives
from retrieval_response.tables.workflow_tables import (
    check_candidates,
    read_analysis_table,
    read_graded_table,
    read_ranked_table,
    read_texts_table,
)
from retrieval_response.testing.synthetic import synthetic_ranked, synthetic_texts

pytestmark = pytest.mark.unit

TEXTS = synthetic_texts(6)
RANKED = synthetic_ranked(TEXTS, "ML6", 5, 2, [1, 2, 3, 4])


def graded_table() -> pl.DataFrame:
    rows = topk_selections(RANKED, TEXTS).drop("q", "refs")
    return rows.with_columns(
        answer_ideal=pl.lit("ideal"), answer_topK=pl.lit("top"), grade=pl.lit(3, pl.Int8),
        grade_expected=pl.lit(3.0), status=pl.lit("graded"), grade_raw=pl.lit("3"),
    )


def edit_row(frame: pl.DataFrame, row: int, **values) -> pl.DataFrame:
    """``frame`` with the columns of row ``row`` set to ``values`` (a hand edit)."""
    out = frame.with_row_index("_row")
    for column, value in values.items():
        dtype = frame.schema[column]
        out = out.with_columns(pl.when(pl.col("_row") == row).then(pl.lit(pl.Series([value], dtype=dtype)).first())
                               .otherwise(pl.col(column)).alias(column))
    return out.drop("_row")


def refused(read, path: Path, *args) -> InputError:
    with pytest.raises(InputError) as error:
        read(path, *args)
    assert str(error.value).startswith(f"{path}: ") and "\n" not in str(error.value)
    return error.value


@pytest.mark.parametrize("k, retrieved", [(12, 3), (5, 4)], ids=["K > Nc", "K <= Nc"])
def test_a_short_top_k_of_a_ranker_that_retrieved_no_more_is_read(tmp_path, k, retrieved):
    """A corpus-level ranker that retrieved fewer than K documents gives a top K of what it retrieved
    (every negative: only positives go unretrieved), which extends its top K at a smaller K."""
    table = graded_table()
    rank, ink = table["rank"][3].to_list(), table["inK"][3].to_list()  # S-0 at K = 4
    assert {2, 3, 4} <= set(rank[:3])  # its top 3 holds every negative (Nc = 5, Np = 2)
    path = tmp_path / "graded.parquet"
    write_parquet(edit_row(table, 3, K=k, rank=rank[:retrieved], inK=ink[:retrieved]), path)
    assert read_graded_table(path)["rank"][3].to_list() == rank[:retrieved]


@pytest.mark.parametrize("np_2k", [0, 3, None], ids=["below sum(inK)", "above Np", "null"])
def test_analysis_table_positives_in_the_top_2k_hold_those_of_the_top_k(tmp_path, np_2k):
    table = with_top_2k_positives(graded_table(), RANKED)
    row = table.with_row_index().filter(pl.col("inK").list.sum() > 0)["index"][0]
    path = tmp_path / "graded.parquet"
    write_parquet(edit_row(table, row, np_2K=np_2k), path)
    if np_2k is None:  # a sample without a ranking: np_2K not counted, F_e null
        assert read_analysis_table(path).height == table.height
    else:
        assert "np_2K (positives in the top 2K) must lie in sum(inK)..Np" in refused(read_analysis_table, path).rule


@pytest.mark.parametrize("ks", [[1], [5], [1, 5], [2, 3, 4]])
def test_valid_ranked_tables_pass_whatever_their_cutoffs(tmp_path, ks):
    path = tmp_path / "ranked.parquet"
    write_parquet(synthetic_ranked(TEXTS, "ML6", 5, 2, ks), path)
    assert read_ranked_table(path)["K"].to_list() == [ks] * TEXTS.height


@pytest.mark.parametrize("damage", ["not parquet", "missing column", "empty file"])
def test_an_unreadable_or_incomplete_table_is_one_line(tmp_path, damage):
    path = tmp_path / "table.parquet"
    if damage == "not parquet":
        path.write_text("id,rank\nS-0,1\n")
    elif damage == "empty file":
        path.write_bytes(b"")
    else:
        write_parquet(RANKED.drop("rank"), path)
    for read in (read_ranked_table, read_graded_table, read_analysis_table, read_texts_table):
        error = refused(read, path)
        assert error.record in ("file", "columns")


@pytest.mark.parametrize("texts_edit, rule", [
    (lambda t: t.filter(pl.col("id") != "S-3"), "not a query of"),
    (lambda t: edit_row(t, 3, p=["only one positive"]), "fewer than Np positives or Nc - Np negatives"),
    (lambda t: edit_row(t, 3, n=["one", "two"]), "fewer than Np positives or Nc - Np negatives"),
])
def test_ranked_ids_need_their_candidates_in_the_texts_table(tmp_path, texts_edit, rule):
    texts_path = tmp_path / "texts.parquet"
    write_parquet(texts_edit(TEXTS), texts_path)
    with pytest.raises(InputError) as error:
        check_candidates(RANKED, read_texts_table(texts_path), "ranked.parquet", texts_path)
    assert str(error.value).startswith("ranked.parquet: row 4 (id S-3): ") and rule in error.value.rule


def test_texts_table_ids_are_unique(tmp_path):
    path = tmp_path / "texts.parquet"
    write_parquet(edit_row(TEXTS, 4, id="S-1"), path)
    error = refused(read_texts_table, path)
    assert (error.record, error.rule) == ("row 5 (id S-1)", "duplicate id: the key of row 2 (id S-1)")


def test_collect_names_the_hand_edited_ranked_file(tmp_path):
    graded, ranked, texts = tmp_path / "graded.parquet", tmp_path / "ranked.parquet", tmp_path / "texts.parquet"
    write_parquet(graded_table(), graded)
    write_parquet(TEXTS, texts)
    write_parquet(RANKED, ranked)
    assert collect_workflow([graded], [ranked], [texts]).height == graded_table().height
    write_parquet(edit_row(RANKED, 1, rank=[9, 9, 9, 9]), ranked)
    with pytest.raises(InputError, match=rf"^{ranked}: row 2 \(id S-1\): rank values must lie in 0..Nc-1: 9 with Nc = 5$"):
        collect_workflow([graded], [ranked], [texts])
