"""HotpotQA in the Hugging Face layout (also the original JSON layout), paragraph or sentence level.

Accepted records (JSON array, JSON lines or Parquet):

- Hugging Face ``hotpot_qa`` (distractor or fullwiki): ``id``, ``question``, ``level``,
  ``supporting_facts {title: [str], sent_id: [int]}``, ``context {title: [str], sentences: [[str]]}``;
- original HotpotQA JSON: ``_id``, ``question``, ``level``, ``supporting_facts [[title, sent_id]]``,
  ``context [[title, [sentences]]]``.

Both carry the gold ``answer`` (a string; absent or null in test splits -> no gold answer).

Paragraph level: positives = paragraphs whose title is a supporting-fact title, negatives =
the other paragraphs, both in context order. Sentence level: positives = the supporting
sentences, negatives = every other sentence of the context, in context order. Supporting
facts that point at no sentence of the context (a known glitch of the release) are counted
as ``supporting_facts_missing``. Ids are ``<subset>-<n>`` with n the record's 0-based
position in the file.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from retrieval_response.datasets import hotpotqa
from retrieval_response.datasets.records import read_records
from retrieval_response.datasets.validation import (
    TEXTS_COLUMNS,
    check_unique,
    optional_answers,
    required,
    required_id,
    required_string,
    texts_frame,
    with_id,
)
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import Record, json_type

Paragraph = tuple[str, list[str]]


def column_pairs(path: Path, record: Record, key: str, first: str, second: str) -> list[tuple]:
    """``record[key]`` as pairs, from either layout: Hugging Face's {first: [...], second: [...]}
    (lists of equal length) or the original [[first, second], ...]; InputError otherwise."""
    value = required(path, record, key)
    if isinstance(value, dict):
        firsts, seconds = value.get(first), value.get(second)
        if not isinstance(firsts, list) or not isinstance(seconds, list) or len(firsts) != len(seconds):
            raise InputError(path, record.label, f"{key!r} must hold lists {first!r} and {second!r} of equal length")
        return list(zip(firsts, seconds, strict=True))
    if isinstance(value, list) and all(isinstance(item, list) and len(item) == 2 for item in value):
        return [tuple(item) for item in value]
    raise InputError(path, record.label, f"{key!r} must be {{{first}: [...], {second}: [...]}} or [[{first}, {second}]]")


def paragraphs(path: Path, record: Record) -> list[Paragraph]:
    """The context as (title, sentences) pairs, from either layout; InputError on wrong types."""
    pairs = column_pairs(path, record, "context", "title", "sentences")
    for index, (title, body) in enumerate(pairs):
        if not isinstance(title, str) or not isinstance(body, list) or not all(isinstance(s, str) for s in body):
            raise InputError(
                path, record.label, f"context paragraph {index} must be a title string with a list of sentence strings"
            )
    return pairs


def supporting_facts(path: Path, record: Record) -> set[tuple[str, int]]:
    """The (title, sentence index) pairs of the supporting facts, from either layout."""
    pairs = column_pairs(path, record, "supporting_facts", "title", "sent_id")
    if not all(isinstance(title, str) and isinstance(sid, int) for title, sid in pairs):
        raise InputError(path, record.label, "supporting facts must pair a title string with an integer sentence index")
    return set(pairs)


def split_paragraphs(context: list[Paragraph], facts: set[tuple[str, int]]) -> tuple[list[str], list[str], int]:
    """(positives, negatives, empty paragraphs dropped) at paragraph level."""
    support_titles = {title for title, _ in facts}
    kept = [(title, "".join(body)) for title, body in context if "".join(body).strip()]
    positives = [hotpotqa.titled(title, body) for title, body in kept if title in support_titles]
    negatives = [hotpotqa.titled(title, body) for title, body in kept if title not in support_titles]
    return positives, negatives, len(context) - len(kept)


def split_sentences(context: list[Paragraph], facts: set[tuple[str, int]]) -> tuple[list[str], list[str], int]:
    """(positives, negatives, empty sentences dropped) at sentence level."""
    labelled = [((title, index) in facts, title, sentence) for title, body in context for index, sentence in enumerate(body)]
    kept = [item for item in labelled if item[2].strip()]
    positives = [hotpotqa.titled(title, sentence) for support, title, sentence in kept if support]
    negatives = [hotpotqa.titled(title, sentence) for support, title, sentence in kept if not support]
    return positives, negatives, len(labelled) - len(kept)


def missing_facts(context: list[Paragraph], facts: set[tuple[str, int]]) -> int:
    """How many supporting facts name a (title, sentence index) absent from the context."""
    present = {(title, index) for title, body in context for index in range(len(body))}
    return len(facts - present)


def gold_answer(path: Path, record: Record) -> list[str]:
    """The record's ``answer`` as a list of at most one gold answer; InputError when it is not a string."""
    value = record.data.get("answer")
    if value is not None and not isinstance(value, str):
        raise InputError(path, record.label, f"'answer' must be a string, found {json_type(value)}")
    return optional_answers(path, record, "answer")


COLUMNS = (*TEXTS_COLUMNS, "level", "source_id")


def read(path: str | Path, level: str | None) -> tuple[pl.DataFrame, dict]:
    """Texts table and source notes (empty texts dropped, supporting facts missing) of a HotpotQA HF/original file."""
    source = Path(path)
    grain = hotpotqa.granularity(source, level)
    split = split_paragraphs if grain == "paragraph" else split_sentences
    rows, labels, dropped, missing = [], [], 0, 0
    for position, raw in enumerate(read_records(source)):
        key = "_id" if "_id" in raw.data and "id" not in raw.data else "id"
        source_id = required_id(source, raw, key)
        record = with_id(raw, source_id)
        difficulty = required_string(source, record, "level")
        if difficulty not in hotpotqa.LEVEL_SUFFIX:
            raise InputError(source, record.label, f"'level' must be easy, medium or hard, got {difficulty!r}")
        question = required_string(source, record, "question")
        context, facts = paragraphs(source, record), supporting_facts(source, record)
        positives, negatives, empty = split(context, facts)
        subset = hotpotqa.subset_name(grain, difficulty)
        answers = gold_answer(source, record)
        rows.append((f"{subset}-{position}", subset, question, positives, negatives, answers, difficulty, source_id))
        labels.append(record.label)
        dropped += empty
        missing += missing_facts(context, facts)
    check_unique(source, [row[-1] for row in rows], labels, "question id")
    notes = {"granularity": grain, "empty_texts_dropped": dropped, "supporting_facts_missing": missing}
    return texts_frame(rows, COLUMNS), notes
