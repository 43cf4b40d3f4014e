"""MS MARCO v1.1 / v2.1 question answering, Hugging Face ``ms_marco`` layout.

Records (JSON array, JSON lines or Parquet): ``query_id``, ``query`` and ``passages`` as the
Hugging Face columns ``{is_selected: [0|1], passage_text: [str], url: [str]}``; the row
layout of the original release, ``passages: [{is_selected, passage_text, url}]``, is read too.
Positives = passages with ``is_selected`` 1, negatives = the others, in source order.
Empty passages are dropped and counted as ``empty_texts_dropped``. Gold answers are
``wellFormedAnswers`` then ``answers`` (each optional, a list of strings), without the
placeholders ``No Answer Present.`` and ``[]`` (the original release's empty
``wellFormedAnswers``), deduplicated. Ids are ``M-<n>`` with n
the record's 0-based position in the file; ``source_id`` is the query_id.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from retrieval_response.datasets.validation import (
    TEXTS_COLUMNS,
    distinct_answers,
    identified_rows,
    optional_answers,
    required,
    required_string,
    split_candidates,
    texts_frame,
)
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import Record, json_type

SUBSET = "M"
COLUMNS = (*TEXTS_COLUMNS, "source_id")
ANSWER_KEYS = ("wellFormedAnswers", "answers")
PLACEHOLDERS = ("No Answer Present.", "[]")


def labelled_passages(path: Path, record: Record) -> list[tuple[int, str]]:
    """(is_selected, passage_text) of each passage, from the column or the row layout."""
    passages = required(path, record, "passages")
    if isinstance(passages, dict):
        selected, texts = passages.get("is_selected"), passages.get("passage_text")
        if not isinstance(selected, list) or not isinstance(texts, list) or len(selected) != len(texts):
            raise InputError(path, record.label, "'passages' must hold lists 'is_selected' and 'passage_text' of equal length")
        pairs = list(zip(selected, texts, strict=True))
    elif isinstance(passages, list) and all(isinstance(item, dict) for item in passages):
        pairs = [(item.get("is_selected"), item.get("passage_text")) for item in passages]
    else:
        raise InputError(path, record.label, "'passages' must be {is_selected: [...], passage_text: [...]} or a list of objects")
    for index, (flag, text) in enumerate(pairs):
        if flag not in (0, 1) or isinstance(flag, float):
            raise InputError(path, record.label, f"passage {index}: is_selected must be 0 or 1, got {flag!r}")
        if not isinstance(text, str):
            raise InputError(path, record.label, f"passage {index}: passage_text must be a string, found {json_type(text)}")
    return pairs


def gold_answers(path: Path, record: Record) -> list[str]:
    """``wellFormedAnswers`` then ``answers`` of a record, placeholders dropped; InputError on wrong types."""
    answers = [text for key in ANSWER_KEYS for text in optional_answers(path, record, key)]
    return [text for text in answers if text not in PLACEHOLDERS]


def read(path: str | Path, level: str | None) -> tuple[pl.DataFrame, dict]:
    """Texts table (subset M) and source notes (empty passages dropped) of an MS MARCO file; ``level`` is unused."""
    source = Path(path)

    def row_of(position: int, record: Record, source_id: str) -> tuple[tuple, int]:
        query = required_string(source, record, "query")
        candidates = [(flag == 1, text.strip()) for flag, text in labelled_passages(source, record)]
        positives, negatives, dropped = split_candidates(candidates)
        answers = distinct_answers(gold_answers(source, record))
        return (f"{SUBSET}-{position}", SUBSET, query, positives, negatives, answers, source_id), dropped

    rows, dropped = identified_rows(source, "query_id", "query_id", row_of)
    return texts_frame(rows, COLUMNS), {"empty_texts_dropped": dropped}
