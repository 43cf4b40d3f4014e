"""Users' own query-texts samples: JSON lines, a JSON array or Parquet of ``{id, q, p, n}``.

``id`` is a string (an integer is converted) and is kept as given; ``q`` a non-blank string;
``p`` and ``n`` lists of non-blank strings; the optional ``answer`` (a string or a list of
strings) gives the query's gold answers. Other keys are ignored. The subset is the ``subset``
argument (from the config) when given, else the id's prefix before its last "-"
(``"faq-12"`` -> ``"faq"``); an id without "-" then is an error. Ids and subsets end up in
output file names, so both must be safe names (``retrieval_response.infra.paths``: ASCII letters,
digits and ``. _ + -``, starting with a letter or digit, no ``..``, at most 100 characters).
Ids must be unique. ``source_id`` repeats the id.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from retrieval_response.datasets.records import read_records
from retrieval_response.datasets.validation import (
    TEXTS_COLUMNS,
    check_unique,
    optional_answers,
    path_name,
    required_id,
    required_string,
    text_list,
    texts_frame,
    with_id,
)
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import Record

COLUMNS = (*TEXTS_COLUMNS, "source_id")
Sample = tuple[Record, str, str, list[str], list[str], list[str]]


def sample(path: Path, raw: Record) -> Sample:
    """(record labelled with its id, id, q, p, n, gold answers) of one query-texts record, validated."""
    record_id = path_name(path, raw.label, required_id(path, raw, "id"), "id")
    record = with_id(raw, record_id)
    q, p, n = required_string(path, record, "q"), text_list(path, record, "p"), text_list(path, record, "n")
    return record, record_id, q, p, n, optional_answers(path, record, "answer")


def id_prefix(path: Path, record: Record, record_id: str) -> str:
    """The part of ``record_id`` before its last "-"; InputError when there is none."""
    prefix, dash, _ = record_id.rpartition("-")
    if not dash or not prefix:
        raise InputError(path, record.label, "id must look like '<subset>-<n>' (or set a subset name for this dataset)")
    return prefix


def read_samples(path: Path) -> list[Sample]:
    """All validated records of ``path``; InputError at the first bad record or repeated id."""
    samples = [sample(path, raw) for raw in read_records(path)]
    check_unique(path, [item[1] for item in samples], [item[0].label for item in samples], "id")
    return samples


def read(path: str | Path, level: str | None, subset: str | None = None) -> tuple[pl.DataFrame, dict]:
    """Texts table of a generic {id, q, p, n} file; ``level`` is unused, ``subset`` names the subset."""
    source = Path(path)
    if subset is not None:
        path_name(source, "config key subset", subset, "subset name")
    rows = [
        (record_id, subset or id_prefix(source, record, record_id), q, p, n, answers, record_id)
        for record, record_id, q, p, n, answers in read_samples(source)
    ]
    return texts_frame(rows, COLUMNS), {}
