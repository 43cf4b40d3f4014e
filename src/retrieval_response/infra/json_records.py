"""The one reader of JSON records: a JSON array of objects or JSON lines, detected from the content.

A file whose first non-blank character is ``[`` is a JSON array; any other is JSON lines (one
object per line, blank lines skipped; lines end at ``\n`` only, so raw U+2028, U+2029, U+0085 and
other Unicode line separators inside strings are text, as JSON allows). Every record carries a 1-based label for error messages:
``record N`` (the N-th object of a JSON array) or ``line N`` (the line of a JSON-lines file).
A missing or unreadable file, malformed JSON and a record that is not an object raise
:class:`~retrieval_response.infra.errors.InputError` naming the file, the line or record, and the
rule broken. So does a string that cannot be written as UTF-8 (a lone surrogate such as
``"\ud800"``, which JSON escapes can spell but no text column can hold), and an object, at any
depth, that gives a key twice (JSON readers disagree on which value counts: json keeps the last,
polars the first).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from retrieval_response.infra.errors import InputError, raise_all
from retrieval_response.infra.paths import shown_value


@dataclass(frozen=True)
class Record:
    """One record: ``label`` locates it in its file (``record N``, ``line N``, ``row N``), ``data`` is its object."""

    label: str
    data: dict


JSON_TYPE_NAMES = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def json_type(value: object) -> str:
    """The JSON name of ``value``'s type (``null``, ``integer``, ``array`` ...) for error messages."""
    return JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def finite_float(value: object) -> float | None:
    """The float64 value of a number (an int or a float, not a boolean) when it is finite, else None:
    inf, -inf, NaN and an integer beyond float64's range (|n| >= 2^1024, e.g. 401 digits) are no
    finite float64 number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def existing_file(path: str | Path) -> Path:
    """``path`` as a Path; InputError when it is missing or not a regular file."""
    source = Path(path)
    if not source.is_file():
        raise InputError(source, "file", "file not found (expected a readable regular file)")
    return source


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``, without the byte order mark that some editors put first (so a
    header or first record after one reads as itself); InputError when it cannot be read or decoded."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(path, "file", f"cannot read as UTF-8 text: {error}") from error


SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A JSON escape of a UTF-16 surrogate: only texts holding one can decode to a lone surrogate."""


def encoding_rule(data: object) -> str | None:
    """The rule the parsed JSON ``data`` breaks when one of its strings (keys included) is not
    encodable as UTF-8 (a lone surrogate), else None."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as error:
        bad = error.object[error.start:error.end].encode("utf-8", "backslashreplace").decode("ascii")
        return f"text holds {bad}, a lone surrogate that is not valid Unicode text"
    return None


def check_encodable(path: Path, record: Record) -> None:
    """InputError naming ``record`` when it breaks :func:`encoding_rule`."""
    rule = encoding_rule(record.data)
    if rule is not None:
        raise InputError(path, record.label, rule)


def check_texts_encodable(path: Path, text: str, records: Iterable[Record]) -> list[Record]:
    """``records`` as a list, each checked by :func:`check_encodable` when ``text`` escapes a surrogate."""
    records = list(records)
    if SURROGATE_ESCAPE.search(text):
        for record in records:
            check_encodable(path, record)
    return records


class _LongInteger(ValueError):
    """A JSON integer with more digits than Python converts (``sys.get_int_max_str_digits``)."""


def _json_int(digits: str) -> int:
    """``int(digits)``, or :class:`_LongInteger` past Python's digit limit (json would raise a bare ValueError)."""
    if len(digits.lstrip("-")) > INT_DIGITS:
        raise _LongInteger(f"an integer of {len(digits.lstrip('-'))} digits, more than the {INT_DIGITS} a number "
                           "is read with (no finite float64 number has more than 309)")
    return int(digits)


INT_DIGITS = 4300
"""The most digits a JSON integer is read with (Python's default limit of int conversion)."""


class _RepeatedKeys(dict):
    """A JSON object in which a key was given twice (holding the last value, as json keeps it);
    ``repeated`` is the first key given twice."""

    repeated: str


def repeated_key(value: object) -> str | None:
    """The first key given twice in an object of the parsed JSON ``value`` (depth first), else None."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _RepeatedKeys):
            return item.repeated
        if isinstance(item, dict):
            stack.extend(reversed(item.values()))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return None


def repeated_key_rule(key: str) -> str:
    """The rule broken by a JSON object that gives ``key`` twice."""
    return f"key {shown_value(key)} is given twice in one object (JSON readers disagree on which value counts)"


def quoted_key_counts(chunks: Iterable[bytes], keys: Iterable[str]) -> dict[str, int]:
    """How often each of ``keys`` occurs as a JSON string (``"key"``, quotes included) in the JSON
    text read as ``chunks`` of bytes, an occurrence split between two chunks counted once. A
    columnar reader's cheap guard: in JSON lines whose N records give a key at most once each, no
    count of a key that is no value exceeds N; a larger count means a record may give it twice."""
    patterns = {key: json.dumps(key).encode("utf-8") for key in keys}
    counts = dict.fromkeys(patterns, 0)
    keep = max((len(p) for p in patterns.values()), default=1) - 1
    tail = b""
    for chunk in chunks:
        text = tail + chunk
        for key, pattern in patterns.items():
            # occurrences that end in the new chunk: those inside the kept tail were counted before
            counts[key] += text.count(pattern) - tail.count(pattern)
        tail = text[-keep:] if keep else b""
    return counts


class _KeyRepeated(ValueError):
    """An object gave a key twice (raised by the fast decoder, which then hands over to the marking one)."""


def _unique_object(pairs: list[tuple[str, object]]) -> dict:
    data = dict(pairs)
    if len(data) != len(pairs):
        raise _KeyRepeated
    return data


def _marked_object(pairs: list[tuple[str, object]]) -> dict:
    data = dict(pairs)
    if len(data) == len(pairs):
        return data
    seen: set[str] = set()
    marked = _RepeatedKeys(data)
    marked.repeated = next(key for key, _ in pairs if key in seen or seen.add(key))
    return marked


_DECODER = json.JSONDecoder(parse_int=_json_int, object_pairs_hook=_unique_object)
"""The decoder of every JSON text read: it stops at the first object that gives a key twice."""
_MARKING_DECODER = json.JSONDecoder(parse_int=_json_int, object_pairs_hook=_marked_object)
"""The decoder of a text in which a key was given twice: each such object a :class:`_RepeatedKeys`."""


def load_json(path: str | Path, where: str, text: str, *, records: bool = False) -> object:
    """``json.loads(text)``; InputError at ``where`` for an integer longer than :data:`INT_DIGITS`,
    and for an object (at any depth) that gives a key twice, which json would read as its last
    value. With ``records`` (``text`` is a JSON array of records), the repeated key's error names
    the record: ``record N``, 1-based."""
    try:
        try:
            return _DECODER.decode(text)
        except _KeyRepeated:
            value = _MARKING_DECODER.decode(text)
    except _LongInteger as error:
        raise InputError(path, where, str(error)) from None
    if records and isinstance(value, list):
        raise_all([InputError(path, f"record {number}", repeated_key_rule(key))
                   for number, item in enumerate(value, start=1) if (key := repeated_key(item)) is not None])
    raise InputError(path, where, repeated_key_rule(repeated_key(value)))


def parse_json_array(path: Path, text: str) -> list[Record]:
    """Records of a JSON array document, labelled ``record 1`` ...; each item must be a JSON object."""
    try:
        items = load_json(path, "file", text, records=True)
    except json.JSONDecodeError as error:
        raise InputError(path, f"line {error.lineno}", f"malformed JSON: {error.msg}, at column {error.colno}") from error
    if not isinstance(items, list):
        raise InputError(path, "line 1", "expected a JSON array of objects or JSON lines")
    records = [Record(f"record {number}", item) for number, item in enumerate(items, start=1)]
    for record in records:
        if not isinstance(record.data, dict):
            raise InputError(path, record.label, f"expected a JSON object, found {json_type(record.data)}")
    return records


def text_lines(text: str) -> list[str]:
    """The lines of a text file's ``text``: split at ``\n`` only (a ``\r`` before it dropped), so
    that U+2028, U+2029, U+0085, form feeds and other Unicode line separators stay inside the
    line, as JSON strings and TSV fields may hold them. The one line splitter of every reader of
    JSON lines, TSV and qrels files, whatever the layout."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def iter_json_lines(path: Path, lines: Iterable[str]) -> Iterator[Record]:
    """Records of JSON-lines text, labelled ``line N`` (1-based, blank lines skipped but counted), parsed lazily."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = load_json(path, f"line {number}", line)
        except json.JSONDecodeError as error:
            raise InputError(path, f"line {number}", f"malformed JSON line: {error.msg}, at column {error.colno}") from error
        if not isinstance(item, dict):
            raise InputError(path, f"line {number}", f"expected a JSON object, found {json_type(item)}")
        yield Record(f"line {number}", item)


def parse_json_records(path: Path, text: str) -> list[Record]:
    """Records of ``text``: :func:`parse_json_array` when it starts with ``[`` (after white space), else
    JSON lines (:func:`iter_json_lines`, lines of :func:`text_lines`); InputError on a lone surrogate."""
    if text.lstrip().startswith("["):
        return check_texts_encodable(path, text, parse_json_array(path, text))
    return check_texts_encodable(path, text, iter_json_lines(path, text_lines(text)))


def read_json_records(path: str | Path) -> list[Record]:
    """All records of the JSON array or JSON-lines file ``path`` (possibly none)."""
    source = existing_file(path)
    return parse_json_records(source, read_text(source))
