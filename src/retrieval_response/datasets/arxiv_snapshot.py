"""arXiv abstracts in the public ``arxiv-metadata-oai-snapshot.json`` layout (Kaggle / Hugging Face).

JSON lines with at least ``id``, ``categories`` (space-separated codes, primary first, e.g.
"cs.CL cs.AI") and ``abstract``; other keys are ignored. Only these three columns are
parsed (polars, lazily), so the 4 GB snapshot fits in memory; a line that gives one of them
twice, which polars would read as its first value, is refused (the file's key counts, then the
line-by-line reader, ``infra.json_records``). Category names come from the
built-in table ``arxiv_categories.tsv``; papers whose primary code is not in it (retired
archives such as ``alg-geom``) are dropped and counted as ``unknown_category_dropped``.
Queries are then built as described in ``retrieval_response.datasets.arxiv``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl

from retrieval_response.datasets import arxiv
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import existing_file, iter_json_lines, quoted_key_counts

SCHEMA = {"id": pl.String, "categories": pl.String, "abstract": pl.String}


def first_bad_line(path: Path) -> InputError | None:
    """The InputError for the first line of ``path`` that is not a JSON object or gives a key twice
    (:func:`~retrieval_response.infra.json_records.iter_json_lines`), else None."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        try:
            for _ in iter_json_lines(path, handle):
                pass
        except InputError as error:
            return error
    return None


def file_chunks(path: Path, size: int = 64 << 20) -> Iterator[bytes]:
    """The bytes of ``path``, ``size`` at a time."""
    with path.open("rb") as handle:
        while chunk := handle.read(size):
            yield chunk


def line_of_row(path: Path, row: int) -> int:
    """The 1-based line number of the ``row``-th (0-based) non-blank line of ``path``."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        non_blank = (number for number, line in enumerate(handle, start=1) if line.strip())
        for index, number in enumerate(non_blank):
            if index == row:
                return number
    raise IndexError(row)


def parse(path: Path) -> pl.DataFrame:
    """The id, categories and abstract columns; InputError naming the first malformed line, a line
    that gives one of them twice, or a missing key."""
    try:
        frame = pl.scan_ndjson(path, schema=SCHEMA).collect()
    except pl.exceptions.PolarsError as error:
        raise first_bad_line(path) or InputError(path, "file", "cannot be parsed as JSON lines") from error
    # polars keeps the first value of a key given twice: a column key written more often than
    # there are records may be one, which the line-by-line reader names
    if max(quoted_key_counts(file_chunks(path), SCHEMA).values()) > frame.height and (bad := first_bad_line(path)):
        raise bad
    if frame.height == 0:
        raise InputError(path, "file", "no records (expected JSON lines with id, categories, abstract)")
    for column in SCHEMA:
        missing = frame.with_row_index("row").filter(pl.col(column).is_null())
        if missing.height:
            row = missing["row"][0]
            raise InputError(path, f"line {line_of_row(path, row)}", f"missing key {column!r} (required, not null)")
    return frame


def papers(frame: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """(paper_id, code, name, abstract) of papers whose primary category is in the built-in table, and how many were not."""
    primary = frame.select(
        pl.col("id").alias("paper_id"),
        pl.col("categories").str.strip_chars().str.split(" ").list.first().alias("code"),
        "abstract",
    )
    known = primary.join(arxiv.category_names(), on="code", how="inner", maintain_order="left")
    return known.select("paper_id", "code", "name", "abstract"), primary.height - known.height


def read(path: str | Path, level: str | None) -> tuple[pl.DataFrame, dict]:
    """Texts table (subset A) and source notes of an arXiv metadata snapshot; ``level`` is unused."""
    source = existing_file(path)
    frame = parse(source)
    known, unknown = papers(frame)
    texts, notes = arxiv.queries(known)
    return texts, {"papers_read": frame.height, "unknown_category_dropped": unknown} | notes
