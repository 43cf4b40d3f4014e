"""The published ``samples_texts.json`` of primer-ai/retrieval-response (all subsets).

A JSON array (or JSON lines) of ``{id, q, p, n}`` with, for the arXiv subset, the extras
``c1``, ``c2``, ``q2``. Ids are kept (``"Hp-e-12"``) and the subset is the id before its
last "-" (``"Hp-e"``; ``"A-0"`` -> ``"A"``), so the paper's data is rebuilt as published.
Records are validated like the generic layout (ids must be safe names; the optional gold
``answer`` is a string or a list of strings); c1/c2/q2 must be strings where present.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from retrieval_response.datasets import generic
from retrieval_response.datasets.validation import TEXTS_COLUMNS, texts_frame
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import Record, json_type

EXTRAS = ("c1", "c2", "q2")
COLUMNS = (*TEXTS_COLUMNS, "c1", "c2", "q2", "source_id")


def extras(path: Path, record: Record) -> tuple[str | None, ...]:
    """(c1, c2, q2) of a record, None where absent; InputError when present but not a string."""
    values = tuple(record.data.get(key) for key in EXTRAS)
    for key, value in zip(EXTRAS, values, strict=True):
        if value is not None and not isinstance(value, str):
            raise InputError(path, record.label, f"{key!r} must be a string, found {json_type(value)}")
    return values


def read(path: str | Path, level: str | None) -> tuple[pl.DataFrame, dict]:
    """Texts table of a published samples_texts.json (ids and subsets as published); ``level`` is unused."""
    source = Path(path)
    rows = [
        (record_id, generic.id_prefix(source, record, record_id), q, p, n, answers, *extras(source, record), record_id)
        for record, record_id, q, p, n, answers in generic.read_samples(source)
    ]
    return texts_frame(rows, COLUMNS), {}
