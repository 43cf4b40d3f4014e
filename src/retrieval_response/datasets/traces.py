"""The ``traces`` layout: what a deployed RAG system logs, read into the tables the workflow judges
and analyses (docs/TRACES.md).

A traces file holds one object per answered query::

    {"query_id": "q17", "query": "Who wrote Dune?", "docs": [{"id": "d3", "text": "Dune is ..."}],
     "answer": "Frank Herbert.", "feedback": 1, "gold": ["Frank Herbert"], "system": "bm25-v2"}

as JSON lines (``.jsonl``, ``.ndjson``, ``.json``), a JSON array (``.json``, detected by its first
character ``[``), either gzip'd (``.gz``), or Parquet (``.parquet``: the same fields as columns,
``docs`` a list of structs ``{id, text}``); any other file is refused in one line
(:data:`FORMAT_RULE`). Required: ``query_id`` (a non-empty string), ``query`` (a non-blank
string), ``docs`` (a non-empty array of objects, each with a non-empty string ``id`` and a
non-blank string ``text``, in rank order, ids distinct within the trace), ``answer`` (a non-blank
string: what the system answered from those documents). Optional: ``feedback`` (a finite number,
or a string label that ``datasets.<name>.feedback_labels`` maps to one; null, absent or a blank
string = no feedback, unless ``feedback_labels`` maps the empty label ``""``; a number beyond
float64's range is refused), ``gold`` (a string or an array of strings: gold answers), ``time``
(an ISO 8601 date or date and time string, ``2026-03-01``, ``2026-03-01T14:05:00Z`` or
``2026-03-01T15:05:00+01:00``, :func:`iso_time`: when the query was answered, which the monitor's
periods read; null or absent = unknown; in Parquet also a date or datetime column, naive = UTC),
``system`` (a safe name that does not look like a secret, ``infra.secrets.looks_like_secret``: the system or
version, which plays the ranker's role; null or absent = the file's name without its traces
extension, :func:`file_system`). Other fields are ignored.

Reading (:func:`read_trace_file`) is columnar: JSON lines are parsed by Arrow's JSON reader with
the fields' types fixed (a value of another type stops it), ``feedback`` and ``gold`` by polars
(their values are numbers or strings, strings or arrays); a file Arrow cannot read is read again
record by record to name every record of the wrong JSON type (:func:`type_rule`), one line each.
The rules on values (:func:`~retrieval_response.tables.sample_rules.trace_record_rules`) are
polars expressions over all the records of a dataset at once: besides the rules above, a second
trace of one (system, query id), a query id with two query texts and a document id with two texts
across the dataset. Every bad record is reported and nothing is returned: one line per rule broken
and file, naming every record that breaks it (``<file>: line N: <rule>``, ``<file>: lines N, M,
...: <rule>``; ``record N`` in a JSON array, ``row N`` in Parquet; :func:`grouped_errors`), so no
message repeats, at most ``InputErrors.MAX_LINES`` lines and a count of the rest. Before them, one
line per pair of files that a system would silently join: a system taken from one file's name
that another file's records also have (from its name or their ``system`` field), e.g.
``a/bm25.jsonl`` and ``b/bm25.jsonl`` (:func:`joined_systems`).

``sample`` keeps the traces of a sample of the queries only (:func:`sample_queries`: stratified by
system, drawn with ``seed``), so that only those are judged and graded.

Read into (:func:`read_traces`):

- the texts table, one row per query in order of first appearance (``id`` = the team's query id,
  kept as it is, as ``source_id``; ``subset`` = the dataset's subset, in the workflow its ``subset``
  key, else its name): ``p`` = the retrieved documents the qrels judge relevant (none
  without qrels), ``n`` = the other retrieved documents, distinct, in order of first appearance over
  the systems, ``p_doc``/``n_doc`` their ids, ``answers`` the gold answers (union over its
  traces), ``Np_qrels`` the number of the query's relevant documents in the qrels (null without qrels
  or when the qrels do not judge the query), ``n_judged`` whether the qrels judge each of ``n``;
- the traces table, one row per trace, in the ranked layout the document judgments read: ``id,
  subset, E`` (the system), ``Nc = len(p) + len(n)``, ``Np = len(p)`` (the candidate-index
  convention: index i < Np is positive i), ``K = [number of documents of the trace]``, ``rank`` (the
  documents' candidate indexes in rank order), plus ``answer``, ``feedback`` (f64, null = none),
  ``time`` (UTC datetime, null = none), ``file`` and ``record`` (where the trace came from).
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.json as pa_json

from retrieval_response.datasets.judged_corpus import trec_judgements
from retrieval_response.infra.errors import InputError, InputErrors, raise_all
from retrieval_response.infra.json_records import (
    encoding_rule,
    existing_file,
    finite_float,
    json_type,
    load_json,
    quoted_key_counts,
)
from retrieval_response.infra.paths import is_safe_name, safe_name
from retrieval_response.infra.secrets import looks_like_secret
from retrieval_response.tables.sample_rules import FILE, RECORD, TIME_RULE, check_rules, quoted, trace_record_rules

SUBSET = "traces"
"""The subset of traces read without one (the workflow gives the dataset's ``subset``, else its name)."""
MAX_LISTED = 10
"""Records a line of a rule broken by many lists before counting the rest."""

JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")
"""Suffixes of a JSON traces file (JSON lines or a JSON array), each also gzip'd with ``.gz``."""
PARQUET_SUFFIX = ".parquet"
TRACES_EXTENSIONS = (*(s + ".gz" for s in JSON_SUFFIXES), *JSON_SUFFIXES, PARQUET_SUFFIX)
"""The extensions of a readable traces file, which its default system leaves out (:func:`file_system`)."""
NOT_JSON = "traces are JSON lines, JSON or Parquet"
"""The rule a traces file breaks when it is of no traces format (a CSV, say)."""
FORMAT_RULE = f"{NOT_JSON} (.jsonl, .ndjson, .json, each may be .gz, or .parquet)"
"""The one line of a traces file of another format."""

DOC = pl.Struct({"id": pl.String, "text": pl.String})
RECORD_SCHEMA = {
    FILE: pl.String, RECORD: pl.String, "query_id": pl.String, "query": pl.String, "docs": pl.List(DOC),
    "answer": pl.String, "feedback": pl.String, "gold": pl.List(pl.String), "system": pl.String,
    "time": pl.String,
}
"""The records of a traces file as read, before the rules (``feedback`` as written: a number's text or a
label; ``time`` as written, ISO 8601 text)."""
_ARROW_SCHEMA = pa.schema([
    ("query_id", pa.string()), ("query", pa.string()), ("answer", pa.string()), ("system", pa.string()),
    ("time", pa.string()), ("docs", pa.list_(pa.struct([("id", pa.string()), ("text", pa.string())]))),
])
"""The fields Arrow's JSON reader reads with their types fixed (feedback and gold take two types)."""
POLARS_FIELDS = ("feedback", "gold")
"""The fields polars reads as text, beside Arrow's (:data:`_ARROW_SCHEMA`)."""
JSON_BLOCK = 32 << 20
"""Bytes of JSON lines Arrow's reader parses at a time: the longest line it reads."""
_ISO_TIME = r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$"
"""An ISO 8601 date, or date and time (minutes, seconds or fractions of one; ``Z``, an offset or none)."""
_GOLD_ARRAY = r'^\[\s*(?:"(?:[^"\\]|\\.)*"\s*(?:,\s*"(?:[^"\\]|\\.)*"\s*)*)?\]$'
"""A JSON array of strings, as polars writes a ``gold`` array it reads as text."""

TEXTS_SCHEMA = {
    "id": pl.String, "subset": pl.String, "q": pl.String, "p": pl.List(pl.String), "n": pl.List(pl.String),
    "answers": pl.List(pl.String), "p_doc": pl.List(pl.String), "n_doc": pl.List(pl.String),
    "source_id": pl.String, "Np_qrels": pl.Int32, "n_judged": pl.List(pl.Boolean),
}
TRACES_SCHEMA = {
    "id": pl.String, "subset": pl.String, "E": pl.String, "Nc": pl.Int32, "Np": pl.Int32, "K": pl.List(pl.Int32),
    "rank": pl.List(pl.Int32), "answer": pl.String, "feedback": pl.Float64, "time": pl.Datetime("us", "UTC"),
    "file": pl.String, "record": pl.String,
}


def iso_time(text: pl.Expr) -> pl.Expr:
    """Per row, the UTC datetime (``us``) of the ISO 8601 string ``text`` (without surrounding white
    space, :data:`_ISO_TIME`): a date is its midnight, a time without an offset is UTC, ``Z`` is
    UTC, ``+hh:mm``/``-hh:mm`` are converted; null for a null ``text`` and for any other text
    (``yesterday``, ``01/03/2026``, ``2026-13-01``, ``2026-03-01T25:00``)."""
    text = text.str.strip_chars()
    full = (text.str.replace(r"^(\d{4}-\d{2}-\d{2})$", "${1}T00:00").str.replace(r"^(\d{4}-\d{2}-\d{2}) ", "${1}T")
            .str.replace(r"T(\d{2}:\d{2})(Z|[+-]|$)", "T${1}:00${2}").str.replace(r"Z$", "+00:00")
            .str.replace(r"(T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)$", "${1}+00:00").str.replace(",", ".", literal=True))
    return (pl.when(text.str.contains(_ISO_TIME)).then(full).otherwise(pl.lit(None, pl.String))
            .str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%z", time_unit="us", time_zone="UTC", strict=False))


def trace_format(path: str | Path) -> str:
    """``json`` or ``parquet``: the format of the traces file ``path`` by its extension (one of
    :data:`TRACES_EXTENSIONS`, in any case); InputError ``<file>: file: traces are JSON lines, JSON
    or Parquet`` for any other."""
    name = Path(path).name.lower()
    if not name.endswith(TRACES_EXTENSIONS):
        raise InputError(path, "file", FORMAT_RULE)
    return "parquet" if name.endswith(PARQUET_SUFFIX) else "json"


def file_system(path: str | Path) -> str | None:
    """The default system of a traces file: its name without its traces extension (the longest of
    :data:`TRACES_EXTENSIONS` it ends in, in any case; any other suffix stays: ``bm25.v1.jsonl`` and
    ``bm25.v1.jsonl.gz`` are ``bm25.v1``, ``bm25.v1.txt`` is ``bm25.v1.txt``), when that is a safe
    name; None otherwise."""
    name = Path(path).name
    extension = next((e for e in TRACES_EXTENSIONS if name.lower().endswith(e) and len(name) > len(e)), "")
    stem = name[: len(name) - len(extension)]
    return stem if is_safe_name(stem) else None


def joined_systems(systems: Mapping[str, Mapping[str, bool]]) -> list[InputError]:
    """One InputError per pair of files that share a system taken from a file's name:
    ``systems[file][system]`` is True when the file's records took ``system`` from its name (no
    ``system`` field), False when their field names it; the error is raised at the later file of
    the pair and names both. Two files whose records all name their system may share it."""
    errors, files = [], list(systems)
    for later_index, later in enumerate(files):
        for earlier in files[:later_index]:
            shared = sorted(s for s in set(systems[earlier]) & set(systems[later]) if systems[earlier][s] or systems[later][s])
            if not shared:
                continue
            system = shared[0]
            how = {True: "from its name", False: "in its records' system field"}
            errors.append(InputError(later, "file", (
                f"system {system!r} comes from both {earlier} ({how[systems[earlier][system]]}) and this file "
                f"({how[systems[later][system]]}): two files would join into one system; give the records a "
                "system field of their own, or rename a file")))
            break
    return errors


def grouped_errors(errors: Sequence[InputError]) -> list[InputError]:
    """``errors`` with the records breaking one rule of one file in one error, at the place of the
    first: record ``lines N, M, ...`` (at most :data:`MAX_LISTED`, then ``and K more``)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for error in errors:
        groups.setdefault((error.path, error.rule), []).append(error.record)
    out = []
    for (path, rule), records in groups.items():
        if len(records) == 1:
            out.append(InputError(path, records[0], rule))
            continue
        words = [r.split(" ", 1) for r in records]
        kind = words[0][0] if all(len(w) == 2 and w[0] == words[0][0] for w in words) else None
        listed = ", ".join(w[1] for w in words[:MAX_LISTED]) if kind else ", ".join(records[:MAX_LISTED])
        more = f" and {len(records) - MAX_LISTED} more" if len(records) > MAX_LISTED else ""
        out.append(InputError(path, f"{kind}s {listed}{more}" if kind else f"{listed}{more}", rule))
    return out


def _raised(errors: BaseException) -> list[InputError]:
    """The InputErrors one raise holds (one, or the several of an ``InputErrors``)."""
    return list(errors.errors) if isinstance(errors, InputErrors) else [errors]


def _file_bytes(path: Path) -> bytes:
    """The bytes of a JSON traces file, gunzipped when its name ends in ``.gz``, without a UTF-8 byte
    order mark; InputError when it cannot be read or decompressed."""
    try:
        if path.name.lower().endswith(".gz"):
            with gzip.open(path, "rb") as stream:
                data = stream.read()
        else:
            data = path.read_bytes()
    except (OSError, EOFError, zlib.error) as error:
        raise InputError(path, "file", f"cannot be read as {'gzip' if path.suffix == '.gz' else 'a file'}: {error}") from None
    return data.removeprefix(b"\xef\xbb\xbf")


def type_rule(data: object) -> str | None:
    """The first JSON type rule the record ``data`` breaks (an object; ``query_id``, ``query``,
    ``answer``, ``system`` strings; ``docs`` an array of objects with string ``id`` and ``text``;
    ``feedback`` a finite number or a string; ``gold`` a string or an array of strings; ``time`` a
    string; null or absent allowed here), or None. The rules on values are :func:`trace_record_rules`'."""
    if not isinstance(data, dict):
        return f"expected a JSON object, found {json_type(data)}"
    for key in ("query_id", "query", "answer", "system"):
        if data.get(key) is not None and not isinstance(data[key], str):
            return f"{key} must be a string, found {json_type(data[key])}"
    docs = data.get("docs")
    if docs is not None and not isinstance(docs, list):
        return f"docs must be an array of documents, found {json_type(docs)}"
    for position, doc in enumerate(docs or [], start=1):
        if not isinstance(doc, dict):
            return f"docs[{position}] must be an object with id and text, found {json_type(doc)}"
        for key in ("id", "text"):
            if doc.get(key) is not None and not isinstance(doc[key], str):
                return f"docs[{position}].{key} must be a string, found {json_type(doc[key])}"
    feedback = data.get("feedback")
    if isinstance(feedback, bool):
        return "feedback must be a number or a label, not a boolean (map labels with feedback_labels)"
    if feedback is not None and not isinstance(feedback, int | float | str):
        return f"feedback must be a number or a string label, found {json_type(feedback)}"
    if isinstance(feedback, int | float) and finite_float(feedback) is None:
        return f"feedback {feedback!r} is not a finite number (a float64 number: |feedback| < 1.8e308)"
    gold = data.get("gold")
    if gold is not None and not isinstance(gold, str) and not (
            isinstance(gold, list) and all(isinstance(g, str) for g in gold)):
        return f"gold must be a string or an array of strings, found {json_type(gold)}"
    if data.get("time") is not None and not isinstance(data["time"], str):
        return f"{TIME_RULE}: found {json_type(data['time'])}"
    return encoding_rule(data)


def _diagnose(path: Path, records: Sequence[tuple[str, bytes | object]], reason: str | None) -> None:
    """InputError naming every record of ``records`` ((label, JSON line bytes or parsed item)) that
    is not UTF-8, not JSON or breaks a :func:`type_rule`; when none does, one line ``reason`` (the
    reader's own), or nothing when there is no ``reason`` (a suspicion that the records lift). For a
    file the columnar readers refused, or whose values may be of another type: per record, in Python."""
    errors = []
    for label, raw in records:
        if isinstance(raw, bytes):
            try:
                raw = load_json(path, label, raw.decode("utf-8"))
            except InputError as error:
                errors.append(error)
                continue
            except UnicodeDecodeError as error:
                errors.append(InputError(path, label, f"cannot read as UTF-8 text: {error}"))
                continue
            except json.JSONDecodeError as error:
                errors.append(InputError(path, label, f"malformed JSON line: {error.msg}, at column {error.colno}"))
                continue
        rule = type_rule(raw)
        if rule is not None:
            errors.append(InputError(path, label, rule))
    raise_all(grouped_errors(errors))
    if reason is not None:
        raise InputError(path, "file", f"cannot be read as traces: {reason}")


def _line_numbers(data: bytes, rows: int) -> pl.Series:
    """The 1-based line numbers of the ``rows`` non-blank lines of JSON-lines ``data`` (a JSON
    reader skips blank lines): 1..rows unless some line is blank."""
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    if lines == rows:
        return pl.int_range(1, rows + 1, eager=True)
    return pl.Series([n for n, line in enumerate(data.split(b"\n"), start=1) if line.strip()])


def _coerced_fields(data: bytes) -> tuple[pl.DataFrame, bool]:
    """(``feedback`` (a number's text or a label) and ``gold`` (a list of strings) of every record of
    JSON-lines ``data``, whether a value may be of a wrong type): polars reads a value of either
    type as its text; an array of strings is decoded (:data:`_GOLD_ARRAY`), any other text is one
    gold answer. A feedback ``true``/``false`` (a boolean read as text?) or a gold ``[...]`` that is
    no array of strings is a suspicion for :func:`_diagnose`, and so is a field of
    :data:`POLARS_FIELDS` written more often than there are records (polars would keep the first of
    a key given twice; Arrow refuses its own fields given twice)."""
    read = pl.read_ndjson(io.BytesIO(data), schema={"feedback": pl.String, "gold": pl.String}, ignore_errors=True)
    gold = pl.col("gold")
    array = gold.str.contains(_GOLD_ARRAY)
    decoded = pl.when(array).then(gold).otherwise(pl.lit(None, pl.String)).str.json_decode(pl.List(pl.String))
    suspect = read.select((pl.col("feedback").is_in(["true", "false"])
                           | (gold.str.starts_with("[") & ~array)).any()).item()
    suspect = suspect or max(quoted_key_counts([data], POLARS_FIELDS).values()) > read.height
    return read.select("feedback", gold=pl.when(array).then(decoded).otherwise(pl.concat_list(gold))), bool(suspect)


def _json_lines(data: bytes) -> list[tuple[str, bytes]]:
    """(``line N``, line) of every non-blank line of JSON-lines ``data``."""
    return [(f"line {n}", line) for n, line in enumerate(data.split(b"\n"), start=1) if line.strip()]


def _json_records(path: Path) -> pl.DataFrame:
    """The records of a JSON traces file (:data:`RECORD_SCHEMA` without the file); JSON lines read
    columnar, a JSON array parsed whole (then read as JSON lines, labelled ``record N``)."""
    data = _file_bytes(path)
    first = data.lstrip()[:1]
    if first == b"[":
        try:
            items = load_json(path, "file", data.decode("utf-8"), records=True)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise InputError(path, "file", f"malformed JSON array: {error}") from None
        labels = [f"record {n}" for n in range(1, len(items) + 1)] if isinstance(items, list) else []
        if not isinstance(items, list) or any(type_rule(item) is not None for item in items):
            _diagnose(path, list(zip(labels, items, strict=True)) if labels else [("record 1", items)], "not an array")
        data = "\n".join(json.dumps(item, ensure_ascii=False) for item in items).encode("utf-8")
    elif first not in (b"{", b""):
        raise InputError(path, "file", FORMAT_RULE)
    else:
        labels = None
    if not data.strip():
        return pl.DataFrame(schema={k: v for k, v in RECORD_SCHEMA.items() if k != FILE})
    try:
        table = pa_json.read_json(pa.BufferReader(data), read_options=pa_json.ReadOptions(block_size=JSON_BLOCK),
                                  parse_options=pa_json.ParseOptions(explicit_schema=_ARROW_SCHEMA,
                                                                     unexpected_field_behavior="ignore"))
        coerced, suspect = _coerced_fields(data)
    except (pa.ArrowInvalid, pl.exceptions.PolarsError) as error:
        _diagnose(path, _json_lines(data), str(error).splitlines()[0])
    if suspect:
        _diagnose(path, _json_lines(data), None)
    frame = pl.from_arrow(table)
    if coerced.height != frame.height:
        raise InputError(path, "file", "cannot be read as traces: the JSON readers disagree on its records")
    if labels is None:
        labels = pl.select(pl.format("line {}", pl.lit(_line_numbers(data, frame.height)))).to_series()
    return frame.with_columns(coerced).select(pl.lit(pl.Series(RECORD, labels, pl.String)),
                                              *[k for k in RECORD_SCHEMA if k not in (FILE, RECORD)])


PARQUET_TYPES = {
    "query_id": (pl.String,), "query": (pl.String,), "answer": (pl.String,), "system": (pl.String,),
    "docs": (pl.List(DOC),), "feedback": (pl.String, "numeric"), "gold": (pl.String, pl.List(pl.String)),
    "time": (pl.String, pl.Date, "datetimes"),
}
"""The types a Parquet traces file's columns may have (a column of nulls has any)."""


def _parquet_docs(dtype: pl.DataType | None) -> pl.Expr:
    """The ``docs`` column of a Parquet traces file of type ``dtype`` as a list of ``{id, text}``
    structs: cast when its structs hold those two fields, else those two fields picked (null when
    there is no such column)."""
    if dtype is None or dtype == pl.Null:
        return pl.lit(None, pl.List(DOC)).alias("docs")
    if [field.name for field in dtype.inner.fields] == ["id", "text"]:
        return pl.col("docs").cast(pl.List(DOC))
    return pl.col("docs").list.eval(pl.struct(pl.element().struct.field("id").cast(pl.String),
                                              pl.element().struct.field("text").cast(pl.String)))


def _parquet_time(dtype: pl.DataType | None) -> pl.Expr:
    """The ``time`` column of a Parquet traces file of type ``dtype`` as ISO 8601 text (:func:`iso_time`
    reads it): a date as ``YYYY-MM-DD``, a datetime in UTC (a naive one taken as UTC) with ``Z``,
    a string as it is (null when there is no such column)."""
    time = pl.col("time")
    if dtype is None or dtype == pl.Null:
        return pl.lit(None, pl.String).alias("time")
    if dtype == pl.Date:
        return time.dt.strftime("%Y-%m-%d")
    if isinstance(dtype, pl.Datetime):
        time = time.dt.replace_time_zone("UTC") if dtype.time_zone is None else time.dt.convert_time_zone("UTC")
        return time.dt.strftime("%Y-%m-%dT%H:%M:%S%.fZ")
    return time


def _parquet_records(path: Path) -> pl.DataFrame:
    """The records of a Parquet traces file (:data:`RECORD_SCHEMA` without the file), rows labelled
    ``row N``; InputError naming a column of another type (:data:`PARQUET_TYPES`)."""
    try:
        schema = pl.read_parquet_schema(path)
    except (OSError, pl.exceptions.PolarsError) as error:
        raise InputError(path, "file", f"cannot be read as Parquet: {str(error).splitlines()[0]}") from None
    for column, types in PARQUET_TYPES.items():
        dtype = schema.get(column)
        if column == "docs" and isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct):
            fields = {f.name: f.dtype for f in dtype.inner.fields}
            if all(fields.get(key) in (pl.String, pl.Null) for key in ("id", "text")):
                continue
        if (dtype is None or dtype == pl.Null or dtype in types or ("numeric" in types and dtype.is_numeric())
                or ("datetimes" in types and isinstance(dtype, pl.Datetime))):
            continue
        allowed = " or ".join("numbers" if t == "numeric" else str(t) for t in types)
        raise InputError(path, f"column {column}", f"must hold {allowed}, found {dtype}")
    frame = pl.read_parquet(path, columns=[c for c in PARQUET_TYPES if c in schema])
    gold = frame["gold"] if "gold" in frame.columns else None
    return frame.with_columns(
        **{c: pl.lit(None) for c in PARQUET_TYPES if c not in frame.columns},
    ).select(
        pl.format("row {}", pl.int_range(1, pl.len() + 1)).alias(RECORD), "query_id", "query",
        _parquet_docs(schema.get("docs")),
        "answer", pl.col("feedback").cast(pl.String),
        (pl.concat_list(pl.col("gold")) if gold is not None and gold.dtype == pl.String
         else pl.col("gold").cast(pl.List(pl.String))),
        "system", _parquet_time(schema.get("time")),
    ).cast({k: v for k, v in RECORD_SCHEMA.items() if k != FILE})


def read_trace_file(path: str | Path) -> pl.DataFrame:
    """The records of one traces file as read (:data:`RECORD_SCHEMA`, ``_file`` its path, ``_record``
    its label), before the rules on values; InputError for a file of another format
    (:func:`trace_format`), that cannot be read, or with records of the wrong JSON type (each named)."""
    source = existing_file(path)
    records = _parquet_records(source) if trace_format(source) == "parquet" else _json_records(source)
    return records.select(pl.lit(str(path)).alias(FILE), pl.all())


def _doc_clashes(records: pl.DataFrame) -> pl.DataFrame:
    """``_trace, _doc_clash`` of every record one of whose documents has another text than the first
    record that gives its id (where that is): the first such document of the record. The documents
    are compared by 64-bit hashes of their ids and texts, then those of the ids found again by
    their strings (a hash collision reports nothing)."""
    text = pl.col("docs").struct.field("text")
    docs = (records.select("_trace", "docs", _pos=pl.int_ranges(pl.col("docs").list.len()))
            .filter(pl.col("docs").list.len() > 0).explode("docs", "_pos")
            .select("_trace", "_pos", "docs", _key=pl.col("docs").struct.field("id").hash(), _hash=text.hash())
            .filter(pl.col("docs").struct.field("id").is_not_null() & text.is_not_null()))
    suspects = docs.filter(pl.col("_hash") != pl.col("_hash").first().over("_key"))["_key"].unique()
    docs = docs.filter(pl.col("_key").is_in(suspects.implode())).select(
        "_trace", "_pos", _id=pl.col("docs").struct.field("id"), _text=text)
    clashes = (docs.with_columns(_first=pl.col("_trace").first().over("_id"),
                                 _other=pl.col("_text") != pl.col("_text").first().over("_id"))
               .filter("_other").group_by("_trace").agg(pl.all().sort_by("_pos").first()))
    at = records.select(_first="_trace", _at=pl.format("{} {}", pl.col(FILE), pl.col(RECORD)))
    return clashes.join(at, on="_first", how="left").select(
        "_trace", _doc_clash=pl.format("document {} has another text at {}", quoted(pl.col("_id")), pl.col("_at")))


def _file_systems(records: pl.DataFrame) -> dict[str, dict[str, bool]]:
    """{file: {system: taken from the file's name}} of ``records`` (:func:`checked_records`' columns
    before the rules, ``_named`` whether the record has a ``system`` field), for :func:`joined_systems`:
    one row per file and system, safe names that do not look like a secret only."""
    pairs = (records.filter(pl.col("system").is_not_null() & ~pl.col("_secret_system"))
             .group_by(FILE, "system", maintain_order=True).agg(from_name=(~pl.col("_named")).any()))
    systems: dict[str, dict[str, bool]] = {}
    for file, system, from_name in pairs.iter_rows():
        if is_safe_name(system):
            systems.setdefault(file, {})[system] = from_name
    return systems


def checked_records(paths: Sequence[str | Path], labels: Mapping[str, float] | None = None) -> pl.DataFrame:
    """The records of the traces files ``paths`` (one dataset), in file and record order, each
    keeping every rule (:func:`~retrieval_response.tables.sample_rules.trace_record_rules`); every
    bad record raised at once: first one line per pair of files that one system would join
    (:func:`joined_systems`), then one line per rule and file (:func:`grouped_errors`). Columns:
    ``_file, _record, query_id, query`` (without surrounding white space), ``docs, answer, feedback``
    (f64, null = none, a blank string too unless ``labels`` maps ``""``), ``gold`` (without blank
    answers), ``system`` (the file's name where the record has none), ``time`` (UTC datetime, :func:`iso_time`),
    ``_trace`` (0-based, over the files)."""
    labels = {str(k): float(v) for k, v in (labels or {}).items()}
    frames = [read_trace_file(path).with_columns(_default_system=pl.lit(file_system(path), pl.String))
              for path in paths]
    records = pl.concat(frames).with_row_index("_trace")
    if not records.height:
        raise InputError(", ".join(map(str, paths)), "file", "no traces (expected at least one record)")
    feedback = pl.col("feedback")
    blank = (feedback.str.strip_chars() == "") & ~feedback.is_in(list(labels))
    records = records.with_columns(feedback=pl.when(blank).then(pl.lit(None, pl.String)).otherwise(feedback))
    mapped = feedback.is_in(list(labels)) if labels else pl.lit(False)
    records = records.with_columns(_named=pl.col("system").is_not_null(),
                                   system=pl.coalesce("system", "_default_system"))
    secrets = [s for s in records["system"].drop_nulls().unique().to_list() if looks_like_secret(s)]
    records = records.with_columns(
        query=pl.col("query").str.strip_chars(),
        _feedback=pl.when(mapped).then(feedback.replace_strict(labels, default=None, return_dtype=pl.Float64)
                                       if labels else pl.lit(None, pl.Float64))
        .otherwise(feedback.cast(pl.Float64, strict=False)),
        _secret_system=pl.col("system").is_in(secrets),
        _time=iso_time(pl.col("time")),
        gold=pl.col("gold").list.eval(pl.element().str.strip_chars()).list.eval(
            pl.element().filter(pl.element() != "")),
    )
    records = records.join(_doc_clashes(records), on="_trace", how="left", maintain_order="left")
    try:
        check_rules(records, ", ".join(map(str, paths)), trace_record_rules(sorted(labels)))
        broken: list[InputError] = []
    except InputError as error:
        broken = _raised(error)
    raise_all(joined_systems(_file_systems(records)) + grouped_errors(broken))
    return records.select(FILE, RECORD, "query_id", "query", "docs", "answer", pl.col("_feedback").alias("feedback"),
                          "gold", "system", pl.col("_time").alias("time"), "_trace")


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """{query id: {document id: grade}} of a TREC qrels file (``qid iter docno rel``); InputError
    for a malformed line or a repeated (query, document) pair."""
    qrels: dict[str, dict[str, int]] = {}
    for query, doc, grade, label in trec_judgements(Path(path)):
        if doc in qrels.setdefault(query, {}):
            raise InputError(path, label, f"(query {query!r}, document {doc!r}) is judged twice")
        qrels[query][doc] = grade
    return qrels


def sample_queries(traces: pl.DataFrame, n: int, seed: int = 0) -> set[str]:
    """The query ids of a sample of min(``n``, all) queries of ``traces`` (columns ``query_id,
    system``: :func:`checked_records`), stratified by system: the queries in a random order drawn
    with ``seed`` (over the sorted ids), a query is taken while one of the systems that answered it
    has fewer than its quota, round(n x its queries / all queries), then the rest in that order up
    to ``n``. Every system thus keeps its share of the queries, and a query taken keeps its traces
    of every system (the systems are compared on the same queries)."""
    owners = (traces.select("query_id", "system").unique().group_by("query_id").agg(pl.col("system").unique())
              .sort("query_id"))
    queries = owners["query_id"].to_list()
    if n >= len(queries):
        return set(queries)
    sizes = traces.select("query_id", "system").unique().group_by("system").len()
    quota = {system: round(n * size / len(queries)) for system, size in sizes.iter_rows()}
    permutation = np.random.default_rng(seed).permutation(len(queries))
    systems_of = owners["system"].to_list()
    chosen: dict[str, None] = {}
    for index in permutation:
        if len(chosen) == n or not any(q > 0 for q in quota.values()):
            break
        if any(quota[s] > 0 for s in systems_of[index]):
            chosen[queries[index]] = None
            for system in systems_of[index]:
                quota[system] -= 1
    for index in permutation:
        if len(chosen) == n:
            break
        chosen.setdefault(queries[index], None)
    return set(chosen)


def read_traces(paths: Sequence[str | Path], *, feedback_labels: Mapping[str, float] | None = None,
                subset: str | None = None, qrels: str | Path | None = None, sample: int | None = None,
                seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame, dict]:
    """(texts table, traces table, report) of the traces files ``paths`` (module docstring), with the
    optional TREC ``qrels`` (by the traces' query and document ids; grade > 0 is relevant); with
    ``sample``, the traces of :func:`sample_queries`' queries only (the report's ``sample``: queries
    kept, of how many, seed). Columnar: the documents of every trace are one long table, joined to
    their query's candidates."""
    subset = safe_name(subset or SUBSET, "subset")
    records = checked_records(paths, feedback_labels)
    all_queries = records["query_id"].n_unique()
    if sample is not None:
        records = records.filter(pl.col("query_id").is_in(list(sample_queries(records, sample, seed))))
    judged = read_qrels(qrels) if qrels else None
    queries = (records.select("query_id", q="query").unique("query_id", keep="first", maintain_order=True)
               .with_row_index("_query").with_columns(id=pl.col("query_id")))
    docs = (records.select("_trace", "query_id", "docs", _pos=pl.int_ranges(pl.col("docs").list.len()))
            .explode("docs", "_pos")
            .select("_trace", "query_id", "_pos", doc=pl.col("docs").struct.field("id"),
                    text=pl.col("docs").struct.field("text")))
    candidates = docs.select("query_id", "doc", "text").unique(["query_id", "doc"], keep="first", maintain_order=True)
    candidates = candidates.with_row_index("_first").join(queries.select("query_id", "_query"), on="query_id")
    grades = pl.DataFrame([(q, d, g) for q, docs_of in (judged or {}).items() for d, g in docs_of.items()],
                          schema={"query_id": pl.String, "doc": pl.String, "grade": pl.Int64}, orient="row")
    candidates = candidates.join(grades, on=["query_id", "doc"], how="left", maintain_order="left")
    positive = pl.col("grade").fill_null(0) > 0
    candidates = (candidates.with_columns(_positive=positive).sort("_query", ~pl.col("_positive"), "_first")
                  .with_columns(_index=pl.int_range(pl.len()).over("_query").cast(pl.Int32)))
    per_query = candidates.group_by("_query", maintain_order=True).agg(
        p=pl.col("text").filter("_positive"), n=pl.col("text").filter(~pl.col("_positive")),
        p_doc=pl.col("doc").filter("_positive"), n_doc=pl.col("doc").filter(~pl.col("_positive")),
        n_judged=pl.col("grade").is_not_null().filter(~pl.col("_positive")),
        Nc=pl.len().cast(pl.Int32), Np=pl.col("_positive").sum().cast(pl.Int32))
    answers = (records.select("query_id", "gold").explode("gold").drop_nulls()
               .unique(keep="first", maintain_order=True).group_by("query_id", maintain_order=True)
               .agg(answers="gold"))
    in_qrels = grades.group_by("query_id").agg(Np_qrels=(pl.col("grade") > 0).sum().cast(pl.Int32))
    texts = (queries.join(per_query, on="_query", maintain_order="left")
             .join(answers, on="query_id", how="left", maintain_order="left")
             .join(in_qrels, on="query_id", how="left", maintain_order="left")
             .select(*[pl.col("query_id").alias("source_id") if c == "source_id" else
                       pl.col("answers").fill_null([]) if c == "answers" else
                       pl.lit(subset).alias("subset") if c == "subset" else pl.col(c) for c in TEXTS_SCHEMA])
             .cast(TEXTS_SCHEMA))
    ranks = (docs.join(candidates.select("query_id", "doc", "_index"), on=["query_id", "doc"], how="left",
                       maintain_order="left")
             .group_by("_trace", maintain_order=True).agg(rank="_index"))
    table = (records.join(ranks, on="_trace", maintain_order="left")
             .join(queries.select("query_id", "_query", "id"), on="query_id", maintain_order="left")
             .join(per_query.select("_query", "Nc", "Np"), on="_query", maintain_order="left")
             .select("id", subset=pl.lit(subset), E="system", Nc="Nc", Np="Np",
                     K=pl.concat_list(pl.col("docs").list.len()), rank="rank", answer="answer",
                     feedback="feedback", time="time", file=FILE, record=RECORD)
             .cast(TRACES_SCHEMA).sort("id", "E"))
    report = {
        "source": [str(p) for p in paths], "layout": "traces", "traces": table.height, "queries": texts.height,
        "systems": sorted(table["E"].unique().to_list()), "with_feedback": int(table["feedback"].is_not_null().sum()),
        "with_time": int(table["time"].is_not_null().sum()),
        "with_gold": int(texts["answers"].list.len().gt(0).sum()),
        "distinct_documents": int(candidates.height),
        "qrels": str(qrels) if qrels else None,
        "queries_in_qrels": int(texts["Np_qrels"].is_not_null().sum()) if qrels else 0,
        "sample": None if sample is None else {"queries": texts.height, "of": all_queries, "seed": seed},
    }
    return texts, table, report
