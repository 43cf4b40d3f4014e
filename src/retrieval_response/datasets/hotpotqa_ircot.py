"""HotpotQA in IRCoT's processed layout, paragraph level only.

Records (JSON lines, JSON array or Parquet): ``question_id``, ``question_text``,
``contexts [{title, paragraph_text, is_supporting}]`` and the gold answers in IRCoT's
DROP-style ``answers_objects [{spans: [str], number: str, date: {day, month, year}}]``:
each object gives its spans (one gold answer each; HotpotQA has exactly one), else its
non-empty number, else its date as its non-empty parts ``"<day> <month> <year>"``.
Positives = contexts with ``is_supporting`` true, negatives = the others, in file order;
text = ``"<title>: <paragraph_text>"``. The layout carries neither sentence labels nor
the HotpotQA difficulty level: only ``level: paragraph`` is possible and the subset is ``Hp``.
Ids are ``Hp-<n>`` with n the record's 0-based position in the file.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from retrieval_response.datasets import hotpotqa
from retrieval_response.datasets.validation import (
    TEXTS_COLUMNS,
    distinct_answers,
    identified_rows,
    required,
    required_string,
    split_candidates,
    texts_frame,
)
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import Record, json_type

COLUMNS = (*TEXTS_COLUMNS, "source_id")
DATE_PARTS = ("day", "month", "year")


def labelled_paragraphs(path: Path, record: Record) -> list[tuple[bool, str, str]]:
    """(is_supporting, title, paragraph_text) of each context paragraph; InputError on a malformed context."""
    contexts = required(path, record, "contexts")
    if not isinstance(contexts, list):
        raise InputError(path, record.label, f"'contexts' must be a list of objects, found {json_type(contexts)}")
    labelled = []
    for index, context in enumerate(contexts):
        if not isinstance(context, dict):
            raise InputError(path, record.label, f"contexts[{index}] must be an object")
        title, body, support = context.get("title"), context.get("paragraph_text"), context.get("is_supporting")
        if not isinstance(title, str) or not isinstance(body, str) or not isinstance(support, bool):
            raise InputError(
                path, record.label, f"contexts[{index}] needs title (str), paragraph_text (str), is_supporting (bool)"
            )
        labelled.append((support, title, body))
    return labelled


def object_answers(path: Path, record: Record, index: int, answer: object) -> list[str]:
    """The gold answers of ``answers_objects[index]``: its spans, else its number, else its date."""
    if not isinstance(answer, dict):
        raise InputError(path, record.label, f"answers_objects[{index}] must be an object, found {json_type(answer)}")
    spans, number, date = answer.get("spans") or [], answer.get("number") or "", answer.get("date") or {}
    rule = f"answers_objects[{index}] needs spans (list of str), number (str), date ({{day, month, year}} of str)"
    if not isinstance(spans, list) or not all(isinstance(span, str) for span in spans) or not isinstance(number, str):
        raise InputError(path, record.label, rule)
    if not isinstance(date, dict) or not all(isinstance(date.get(part) or "", str) for part in DATE_PARTS):
        raise InputError(path, record.label, rule)
    date_text = " ".join(date[part].strip() for part in DATE_PARTS if (date.get(part) or "").strip())
    return spans if any(span.strip() for span in spans) else [number] if number.strip() else [date_text]


def gold_answers(path: Path, record: Record) -> list[str]:
    """The gold answers of all ``answers_objects`` (absent or null -> none), via ``distinct_answers``."""
    objects = record.data.get("answers_objects")
    if objects is None:
        return []
    if not isinstance(objects, list):
        raise InputError(path, record.label, f"'answers_objects' must be a list of objects, found {json_type(objects)}")
    answers = [text for index, answer in enumerate(objects) for text in object_answers(path, record, index, answer)]
    return distinct_answers(answers)


def read(path: str | Path, level: str | None) -> tuple[pl.DataFrame, dict]:
    """Texts table and source notes (empty paragraphs dropped) of an IRCoT HotpotQA file."""
    source = Path(path)
    if hotpotqa.granularity(source, level) != "paragraph":
        raise InputError(source, "config key level", "the IRCoT layout has no sentence labels; use level: paragraph")
    subset = hotpotqa.subset_name("paragraph", None)

    def row_of(position: int, record: Record, source_id: str) -> tuple[tuple, int]:
        question = required_string(source, record, "question_text")
        candidates = [
            (support, hotpotqa.titled(title, body) if body.strip() else "")
            for support, title, body in labelled_paragraphs(source, record)
        ]
        positives, negatives, dropped = split_candidates(candidates)
        return (f"{subset}-{position}", subset, question, positives, negatives, gold_answers(source, record),
                source_id), dropped

    rows, dropped = identified_rows(source, "question_id", "question id", row_of)
    return texts_frame(rows, COLUMNS), {"granularity": "paragraph", "empty_texts_dropped": dropped}
