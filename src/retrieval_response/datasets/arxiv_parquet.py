"""arXiv abstracts in the shipped Parquet layout (ResearchFinder scrape).

Columns used: ``paper_id``, ``subjects`` ("Name (code); Name (code); ..." with the primary
category first) and ``abstract``; other columns are ignored. The category name comes from
the subjects string itself. Rows whose subjects do not start with a "Name (code)" entry
(in the shipped file, 443 rows where a "Journal-ref: ..." note shifted the fields, so the
abstract holds the subjects) are dropped and counted as ``unparsed_subjects_dropped``.
Queries are then built as described in ``retrieval_response.datasets.arxiv``.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from retrieval_response.datasets import arxiv
from retrieval_response.datasets.records import read_parquet_frame
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import existing_file

REQUIRED_COLUMNS = ("paper_id", "subjects", "abstract")
PRIMARY_SUBJECT = r"^([^;]*?) \(([a-z-]+(?:\.[A-Za-z-]+)?)\)(?:;|$)"
"""First "Name (code)" entry of ``subjects``: group 1 = name, group 2 = code."""


def papers(path: Path, frame: pl.DataFrame) -> pl.DataFrame:
    """(paper_id, code, name, abstract) of the rows whose primary subject parses; InputError on a bad schema."""
    for column in REQUIRED_COLUMNS:
        if column not in frame.columns:
            raise InputError(path, f"column {column}", f"missing column (required: {', '.join(REQUIRED_COLUMNS)})")
        if frame.schema[column] != pl.String:
            raise InputError(path, f"column {column}", f"must hold strings, found {frame.schema[column]}")
    return frame.select(
        "paper_id",
        pl.col("subjects").str.extract(PRIMARY_SUBJECT, 2).alias("code"),
        pl.col("subjects").str.extract(PRIMARY_SUBJECT, 1).str.strip_chars().alias("name"),
        "abstract",
    ).filter(pl.all_horizontal(pl.all().is_not_null()))


def read(path: str | Path, level: str | None) -> tuple[pl.DataFrame, dict]:
    """Texts table (subset A) and source notes of the shipped arXiv Parquet file; ``level`` is unused."""
    source = existing_file(path)
    frame = read_parquet_frame(source)
    parsed = papers(source, frame)
    texts, notes = arxiv.queries(parsed)
    return texts, {"papers_read": frame.height, "unparsed_subjects_dropped": frame.height - parsed.height} | notes
