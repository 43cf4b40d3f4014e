"""arXiv adapters: the shipped Parquet, the snapshot layout, the related-category choice."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from conftest import REPO
from retrieval_response.datasets import read_texts
from retrieval_response.datasets.arxiv import category_names
from retrieval_response.datasets.arxiv_parquet import PRIMARY_SUBJECT
from retrieval_response.datasets.layouts import read_with_notes

pytestmark = pytest.mark.unit

PARQUET = REPO / "resources" / "data" / "arxiv" / "arxiv_2023-09_abstracts.parquet"
SNAPSHOT = Path(__file__).resolve().parent / "fixtures" / "datasets" / "arxiv_snapshot_sample.jsonl"


@pytest.fixture(scope="module")
def parquet_texts() -> pl.DataFrame:
    return read_texts("arxiv_parquet", PARQUET)


@pytest.fixture(scope="module")
def parsed_papers() -> pl.DataFrame:
    """Rows of the shipped file whose primary subject parses, first row per paper id."""
    raw = pl.read_parquet(PARQUET)
    return (
        raw.select(
            "paper_id",
            pl.col("subjects").str.extract(PRIMARY_SUBJECT, 2).alias("code"),
            pl.col("subjects").str.extract(PRIMARY_SUBJECT, 1).alias("name"),
            "abstract",
        )
        .drop_nulls()
        .unique("paper_id", keep="first", maintain_order=True)
    )


def test_one_query_per_category_with_two_papers_and_a_related_category(parquet_texts, parsed_papers):
    counts = Counter(parsed_papers["code"].to_list())
    archive = {code: code.split(".")[0] for code in counts}
    expected = {c for c, k in counts.items() if k >= 2 and any(archive[o] == archive[c] and o != c for o in counts)}
    assert set(parquet_texts["c1"].to_list()) == expected
    assert parquet_texts["subset"].unique().to_list() == ["A"]
    assert parquet_texts["p"].list.len().min() >= 2
    assert parquet_texts["n"].list.len().min() >= 1


def test_related_category_is_the_largest_other_category_of_the_archive(parquet_texts, parsed_papers):
    counts = Counter(parsed_papers["code"].to_list())
    for row in parquet_texts.iter_rows(named=True):
        archive = row["c1"].split(".")[0]
        others = [(-k, code) for code, k in counts.items() if code.split(".")[0] == archive and code != row["c1"]]
        assert row["c2"] == min(others)[1]
        assert len(row["p"]) == counts[row["c1"]] and len(row["n"]) == counts[row["c2"]]


def test_query_and_q2_are_category_names_from_the_subjects(parquet_texts, parsed_papers):
    names = dict(parsed_papers.select("code", "name").unique().iter_rows())
    for row in parquet_texts.iter_rows(named=True):
        assert row["q"] == names[row["c1"]] and row["q2"] == names[row["c2"]]
    cs_cl = parquet_texts.filter(pl.col("c1") == "cs.CL").row(0, named=True)
    assert cs_cl["q"] == "Computation and Language"


def test_positives_are_the_abstracts_of_the_category_by_paper_id(parquet_texts, parsed_papers):
    row = parquet_texts.filter(pl.col("c1") == "math.NT").row(0, named=True)
    expected = parsed_papers.filter(pl.col("code") == "math.NT").sort("paper_id")["abstract"].str.strip_chars()
    assert row["p"] == [" ".join(text.split()) for text in expected.to_list()]


def test_reading_twice_gives_the_same_table(parquet_texts):
    assert read_texts("arxiv_parquet", PARQUET).equals(parquet_texts)


def test_shifted_rows_and_repeated_papers_are_counted():
    _, notes = read_with_notes("arxiv_parquet", PARQUET)
    assert notes["papers_read"] == 5296
    assert notes["unparsed_subjects_dropped"] == 443
    assert notes["papers_kept"] == 3662
    assert notes["categories"] == 127


def test_builtin_names_cover_every_category_of_the_shipped_file(parsed_papers):
    table = dict(category_names().iter_rows())
    shipped = dict(parsed_papers.select("code", "name").unique().iter_rows())
    assert {code: table.get(code) for code in shipped} == shipped
    assert len(table) == category_names().height


def test_snapshot_layout_of_the_same_papers_gives_the_same_queries(tmp_path, parquet_texts, parsed_papers):
    snapshot = tmp_path / "arxiv-metadata-oai-snapshot.json"
    with snapshot.open("w", encoding="utf-8") as handle:
        for paper_id, code, _, abstract in parsed_papers.iter_rows():
            handle.write(json.dumps({"id": paper_id, "categories": f"{code} cs.AI", "abstract": f"\n  {abstract}\n"}) + "\n")
    from_snapshot = read_texts("arxiv_snapshot", snapshot)
    assert from_snapshot.equals(parquet_texts)


def test_snapshot_fixture_ties_unknown_codes_and_whitespace():
    texts, notes = read_with_notes("arxiv_snapshot", SNAPSHOT)
    related = dict(texts.select("c1", "c2").iter_rows())
    assert related["math.CA"] == "math.NT"  # math.NT and math.PR both have 3 papers: the smaller code wins
    assert related["math.NT"] == "math.PR" and related["math.PR"] == "math.NT"
    assert related["cs.CL"] == "cs.LG"  # cs.LG has one paper: a negative category, not a query
    assert "hep-th" not in related  # its own archive: no related category
    assert notes["unknown_category_dropped"] == 1
    assert notes["categories_with_too_few_papers"] == 1 and notes["categories_without_related_category"] == 1
    math_ca = texts.filter(pl.col("c1") == "math.CA").row(0, named=True)
    assert math_ca["p"][0] == "We prove sharp bounds for oscillatory integrals."
    assert math_ca["q"] == "Classical Analysis and ODEs" and math_ca["q2"] == "Number Theory"


def test_abstract_whitespace_is_normalised_like_a_split_and_join():
    from retrieval_response.datasets.arxiv import clean_papers

    abstracts = ["  a\u00a0b  c\n\nd\te \u2003 f\n", "single spaces stay", " \n\t "]
    papers = pl.DataFrame({"paper_id": ["1", "2", "3"], "code": ["x.A"] * 3, "name": ["X"] * 3, "abstract": abstracts})
    cleaned, notes = clean_papers(papers)
    assert cleaned["abstract"].to_list() == [" ".join(text.split()) for text in abstracts[:2]]
    assert notes["empty_abstracts_dropped"] == 1
