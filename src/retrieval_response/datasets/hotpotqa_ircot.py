"""HotpotQA in IRCoT's processed layout, paragraph level only.

Records (JSON lines, JSON array or Parquet): ``question_id``, ``question_text``,
``contexts [{title, paragraph_text, is_supporting}]`` (``answers_objects`` is ignored).
Positives = contexts with ``is_supporting`` true, negatives = the others, in file order;
text = ``"<title>: <paragraph_text>"``. The layout carries neither sentence labels nor
the HotpotQA difficulty level: only ``level: paragraph`` is possible and the subset is ``Hp``.
Ids are ``Hp-<n>`` with n the record's 0-based position in the file.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from retrieval_response.datasets import hotpotqa
from retrieval_response.datasets.records import Record, json_type, read_records
from retrieval_response.datasets.validation import (
    check_unique,
    required,
    required_id,
    required_string,
    texts_frame,
    with_id,
)
from retrieval_response.errors import InputError

COLUMNS = ("id", "subset", "q", "p", "n", "source_id")


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


def read(path: str | Path, level: str | None) -> tuple[pl.DataFrame, dict]:
    """Texts table and source notes (empty paragraphs dropped) of an IRCoT HotpotQA file."""
    source = Path(path)
    if hotpotqa.granularity(source, level) != "paragraph":
        raise InputError(source, "config key level", "the IRCoT layout has no sentence labels; use level: paragraph")
    subset = hotpotqa.subset_name("paragraph", None)
    rows, labels, dropped = [], [], 0
    for position, raw in enumerate(read_records(source)):
        source_id = required_id(source, raw, "question_id")
        record = with_id(raw, source_id)
        question = required_string(source, record, "question_text")
        labelled = labelled_paragraphs(source, record)
        kept = [(support, hotpotqa.titled(title, body)) for support, title, body in labelled if body.strip()]
        positives = [text for support, text in kept if support]
        negatives = [text for support, text in kept if not support]
        rows.append((f"{subset}-{position}", subset, question, positives, negatives, source_id))
        labels.append(record.label)
        dropped += len(labelled) - len(kept)
    check_unique(source, [row[-1] for row in rows], labels, "question id")
    return texts_frame(rows, COLUMNS), {"granularity": "paragraph", "empty_texts_dropped": dropped}
