"""arXiv queries from a table of papers: what both arXiv layouts share.

A query is a category: q = the category's name, p = abstracts of the papers whose primary
category it is, n = abstracts of the papers of a related category of the same archive
(the part of the code before the dot: ``math`` for ``math.CA``; ``hep-th`` is its own archive
and so has no related category). The related category is a deterministic choice: among the
other categories of the archive found in the file, the one with the most papers; ties go to
the smallest code. Recorded as c1 (query category), c2 (negatives' category) and q2 (c2's name). arXiv has no
gold answers: ``answers`` is always empty.

One query per category with at least ``MIN_PAPERS`` papers and a related category; the
others are counted in the source notes. Abstracts are whitespace-normalised (runs of
whitespace -> one space, stripped); papers with an empty abstract or a repeated paper id
(first kept) are dropped and counted. Within p and n, papers are ordered by paper id.
Ids are ``A-<n>`` with n the 0-based position of c1 among all primary categories of the
file in code order. Codes and names keep arXiv's spelling (the published dataset lowercases
them, e.g. c1 "math.ca", q "classical analysis and ODEs").
"""

from __future__ import annotations

from importlib import resources

import polars as pl

from retrieval_response.datasets.validation import TEXTS_COLUMNS

SUBSET = "A"
MIN_PAPERS = 2
COLUMNS = (*TEXTS_COLUMNS, "c1", "c2", "q2", "source_id")
WHITESPACE_RUN = r"\s{2,}|[^\S ]"
r"""Runs of whitespace: same replacements as ``\s+`` -> " ", but never matching a lone space (4x faster)."""


def category_names() -> pl.DataFrame:
    """The built-in table of arXiv category names (``code``, ``name``), from ``arxiv_categories.tsv``."""
    table = resources.files("retrieval_response.datasets").joinpath("arxiv_categories.tsv").read_text(encoding="utf-8")
    rows = [line.split("\t") for line in table.splitlines()[1:] if line.strip()]
    return pl.DataFrame(rows, schema={"code": pl.String, "name": pl.String}, orient="row")


def clean_papers(papers: pl.DataFrame) -> tuple[pl.DataFrame, dict]:
    """Papers (paper_id, code, name, abstract) with normalised abstracts, minus empty abstracts and repeated ids."""
    normalised = papers.with_columns(pl.col("abstract").str.replace_all(WHITESPACE_RUN, " ").str.strip_chars())
    non_empty = normalised.filter(pl.col("abstract").str.len_chars() > 0)
    unique = non_empty.unique("paper_id", keep="first", maintain_order=True)
    notes = {
        "empty_abstracts_dropped": papers.height - non_empty.height,
        "duplicate_papers_dropped": non_empty.height - unique.height,
    }
    return unique, notes


def related_categories(counts: pl.DataFrame) -> pl.DataFrame:
    """For each category (``c1``) the related one (``c2``, ``q2``): most papers in the same archive, ties by code."""
    with_archive = counts.with_columns(pl.col("code").str.split(".").list.first().alias("archive"))
    pairs = with_archive.join(with_archive, on="archive", suffix="_2").filter(pl.col("code") != pl.col("code_2"))
    best = (
        pairs.sort(["code", "papers_2", "code_2"], descending=[False, True, False]).group_by("code", maintain_order=True).first()
    )
    return best.select(pl.col("code").alias("c1"), pl.col("code_2").alias("c2"), pl.col("name_2").alias("q2"))


def abstracts_by_category(papers: pl.DataFrame) -> pl.DataFrame:
    """One row per category code: its name, paper count and abstracts ordered by paper id."""
    return (
        papers.sort("paper_id")
        .group_by("code", maintain_order=True)
        .agg(pl.col("name").first(), pl.len().alias("papers"), pl.col("abstract").alias("abstracts"))
        .sort("code")
        .with_row_index("position")
    )


def queries(papers: pl.DataFrame) -> tuple[pl.DataFrame, dict]:
    """Texts table (COLUMNS) and source notes from papers with columns paper_id, code, name, abstract."""
    cleaned, notes = clean_papers(papers)
    categories = abstracts_by_category(cleaned)
    related = related_categories(categories.select("code", "name", "papers"))
    candidates = categories.filter(pl.col("papers") >= MIN_PAPERS)
    texts = (
        candidates.join(related, left_on="code", right_on="c1", how="inner")
        .join(categories.select(pl.col("code").alias("c2"), pl.col("abstracts").alias("n")), on="c2")
        .sort("position")
        .select(
            pl.format("{}-{}", pl.lit(SUBSET), pl.col("position")).alias("id"),
            pl.lit(SUBSET).alias("subset"),
            pl.col("name").alias("q"),
            pl.col("abstracts").alias("p"),
            pl.col("n"),
            pl.lit([], dtype=pl.List(pl.String)).alias("answers"),
            pl.col("code").alias("c1"),
            pl.col("c2"),
            pl.col("q2"),
            pl.col("code").alias("source_id"),
        )
    )
    notes |= {
        "papers_kept": cleaned.height,
        "categories": categories.height,
        "categories_with_too_few_papers": categories.height - candidates.height,
        "categories_without_related_category": candidates.height - texts.height,
    }
    return texts, notes
