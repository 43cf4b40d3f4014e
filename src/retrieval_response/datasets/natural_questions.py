"""Natural Questions: two accepted record layouts (JSON lines, JSON array or Parquet), told apart per record.

1. Prepared layout (for NQ-derived files with several relevant passages per question)::

       {"id": "optional, str or int", "question": "who ...?",
        "positives": ["passage", ...], "negatives": ["passage", ...]}

   Every positive and negative must be a non-blank string. The optional ``answer`` (a
   string or a list of strings) gives the gold answers.

2. Simplified NQ (``simplified-nq-*.jsonl`` of Google's release), recognised by ``document_text``::

       {"example_id": 123, "question_text": "...", "document_text": "<P> tokens ... </P>",
        "long_answer_candidates": [{"start_token": 0, "end_token": 9, "top_level": true}, ...],
        "annotations": [{"long_answer": {"candidate_index": 3, ...}, ...}, ...]}

   Positives = the distinct long-answer candidates chosen by the annotators (the dev split
   has up to 5 annotators, so up to 5 positives), in candidate order; negatives = the other
   top-level candidates. A candidate's text is its token span without HTML tokens
   (``<P>``, ``</Td>`` ...), joined by spaces; candidates with no text left are dropped and
   counted as ``empty_texts_dropped``. Gold answers are the annotators' short answers: the
   text of each ``short_answers [{start_token, end_token}]`` span (HTML tokens removed, as
   above), and ``yes`` / ``no`` for a ``yes_no_answer`` of ``YES`` / ``NO``.

Ids are ``N-<n>`` with n the record's 0-based position in the file; ``source_id`` is the
record's ``id`` / ``example_id`` when it has one.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from retrieval_response.datasets.records import read_records
from retrieval_response.datasets.validation import (
    TEXTS_COLUMNS,
    check_unique,
    distinct_answers,
    optional_answers,
    required,
    required_id,
    required_string,
    split_candidates,
    text_list,
    texts_frame,
    with_id,
)
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import Record

SUBSET = "N"
COLUMNS = (*TEXTS_COLUMNS, "source_id")
YES_NO = {"YES": "yes", "NO": "no"}
HTML_TOKEN = re.compile(r"^<[^>]*>$")


def optional_id(path: Path, record: Record, key: str) -> str | None:
    """``record.data[key]`` as an id string, or None when the key is absent."""
    return required_id(path, record, key) if record.data.get(key) is not None else None


def span_text(tokens: list[str], start: int, end: int) -> str:
    """The tokens ``tokens[start:end]`` without HTML tokens, joined by single spaces."""
    return " ".join(token for token in tokens[start:end] if not HTML_TOKEN.match(token))


def candidate_spans(path: Path, record: Record) -> list[tuple[int, int, bool]]:
    """(start_token, end_token, top_level) of each long-answer candidate; InputError on wrong types."""
    candidates = required(path, record, "long_answer_candidates")
    if not isinstance(candidates, list):
        raise InputError(path, record.label, "'long_answer_candidates' must be a list of objects")
    spans = []
    for index, candidate in enumerate(candidates):
        start, end = (candidate.get("start_token"), candidate.get("end_token")) if isinstance(candidate, dict) else (None, None)
        if not isinstance(start, int) or not isinstance(end, int) or not 0 <= start <= end:
            raise InputError(path, record.label, f"long_answer_candidates[{index}] needs integer start_token <= end_token")
        spans.append((start, end, bool(candidate.get("top_level", True))))
    return spans


def chosen_candidates(path: Path, record: Record, count: int) -> list[int]:
    """Distinct candidate indexes chosen as long answers by the annotators, ascending (-1 = no answer, skipped)."""
    annotations = required(path, record, "annotations")
    if not isinstance(annotations, list):
        raise InputError(path, record.label, "'annotations' must be a list of objects")
    chosen = set()
    for index, annotation in enumerate(annotations):
        long_answer = annotation.get("long_answer") if isinstance(annotation, dict) else None
        candidate = long_answer.get("candidate_index") if isinstance(long_answer, dict) else None
        if not isinstance(candidate, int) or not -1 <= candidate < count:
            raise InputError(
                path, record.label, f"annotations[{index}].long_answer.candidate_index must be -1 or a candidate index < {count}"
            )
        if candidate >= 0:
            chosen.add(candidate)
    return sorted(chosen)


def annotation_answers(path: Path, record: Record, index: int, annotation: dict, tokens: list[str]) -> list[str]:
    """Short answers of ``annotations[index]``: its span texts and its yes/no answer; InputError on bad spans."""
    spans = annotation.get("short_answers") or []
    if not isinstance(spans, list):
        raise InputError(path, record.label, f"annotations[{index}].short_answers must be a list of objects")
    answers = []
    for number, span in enumerate(spans):
        start, end = (span.get("start_token"), span.get("end_token")) if isinstance(span, dict) else (None, None)
        if not isinstance(start, int) or not isinstance(end, int) or not 0 <= start <= end <= len(tokens):
            rule = f"annotations[{index}].short_answers[{number}] needs integer start_token <= end_token <= tokens"
            raise InputError(path, record.label, rule)
        answers.append(span_text(tokens, start, end))
    yes_no = annotation.get("yes_no_answer")
    return answers + ([YES_NO[yes_no]] if yes_no in YES_NO else [])


def short_answers(path: Path, record: Record, tokens: list[str]) -> list[str]:
    """Gold answers of a simplified-NQ record: every annotation's short answers, via ``distinct_answers``."""
    annotations = required(path, record, "annotations")
    return distinct_answers(
        [
            text
            for index, annotation in enumerate(annotations)
            if isinstance(annotation, dict)
            for text in annotation_answers(path, record, index, annotation, tokens)
        ]
    )


def simplified_texts(path: Path, record: Record) -> tuple[list[str], list[str], list[str], int]:
    """(positives, negatives, gold answers, empty candidates dropped) of a simplified-NQ record."""
    tokens = required_string(path, record, "document_text").split(" ")
    spans = candidate_spans(path, record)
    chosen = chosen_candidates(path, record, len(spans))
    labelled = [
        (index in chosen, span_text(tokens, start, end))
        for index, (start, end, top) in enumerate(spans)
        if top or index in chosen
    ]
    positives, negatives, dropped = split_candidates(labelled)
    return positives, negatives, short_answers(path, record, tokens), dropped


def read(path: str | Path, level: str | None) -> tuple[pl.DataFrame, dict]:
    """Texts table (subset N) and source notes of a Natural Questions file in either layout; ``level`` is unused."""
    source = Path(path)
    rows, labels, dropped = [], [], 0
    for position, raw in enumerate(read_records(source)):
        simplified = "document_text" in raw.data
        source_id = optional_id(source, raw, "example_id" if simplified else "id")
        record = with_id(raw, source_id) if source_id is not None else raw
        if simplified:
            question = required_string(source, record, "question_text")
            positives, negatives, answers, empty = simplified_texts(source, record)
        else:
            question = required_string(source, record, "question")
            positives, negatives, empty = text_list(source, record, "positives"), text_list(source, record, "negatives"), 0
            answers = optional_answers(source, record, "answer")
        rows.append((f"{SUBSET}-{position}", SUBSET, question, positives, negatives, answers, source_id))
        labels.append(record.label)
        dropped += empty
    identified = [(row[-1], label) for row, label in zip(rows, labels, strict=True) if row[-1] is not None]
    check_unique(source, [value for value, _ in identified], [label for _, label in identified], "id")
    return texts_frame(rows, COLUMNS), {"empty_texts_dropped": dropped}
