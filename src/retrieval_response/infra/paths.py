"""Names from data or config that become parts of file paths: one rule, checked in one place.

A dataset name, a ranker code, a design name, a subset (id prefix), a query id or an
ranker label ``E`` may end up in an output path. Each is accepted only when it is a *safe
name*: it matches :data:`NAME_PATTERN` (an ASCII letter or digit, then letters, digits and
``. _ + -``, never two dots in a row) and has at most :data:`MAX_NAME_LENGTH` characters.
Such a name is one path component that is neither ``.`` nor ``..``, holds no separator
(``/``, ``\\``, unicode slashes are not ASCII), no NUL or newline, cannot be mistaken for an
option (no leading ``-``), and is never hidden (no leading ``.``); so ``base / name`` always
names a direct child of ``base``.
"""

from __future__ import annotations

import re

import polars as pl

NAME_PATTERN = r"[A-Za-z0-9](?:[A-Za-z0-9_+-]|\.(?!\.))*"
"""Regular expression of a safe name (also the workflow's wildcard constraint for such names)."""

MAX_NAME_LENGTH = 100
"""Longest safe name, well under the 255-byte file-name limit once prefixes and suffixes are added."""

_SAFE_NAME = re.compile(NAME_PATTERN)

SAFE_NAME_RULE = (f"use 1 to {MAX_NAME_LENGTH} ASCII letters, digits and . _ + -, starting with a letter or digit, "
                  "without '..'")
"""What a safe name is, in the words of every message that refuses one."""

_SAFE_NAME_WITHOUT_LOOKAHEAD = r"^[A-Za-z0-9](?:[A-Za-z0-9_+-]|\.[A-Za-z0-9_+-])*\.?$"
"""NAME_PATTERN, whole string, without its look-ahead (which polars' regular expressions lack)."""


class UnsafeNameError(ValueError):
    """A value that cannot be used as a path component."""


def is_safe_name(value: object) -> bool:
    """True when ``value`` is a string matching NAME_PATTERN with at most MAX_NAME_LENGTH characters."""
    return isinstance(value, str) and len(value) <= MAX_NAME_LENGTH and _SAFE_NAME.fullmatch(value) is not None


def safe_name_expr(value: pl.Expr) -> pl.Expr:
    """Per row of the String expression ``value``: :func:`is_safe_name` of it (null for a null), vectorised."""
    return value.str.contains(_SAFE_NAME_WITHOUT_LOOKAHEAD) & (value.str.len_chars() <= MAX_NAME_LENGTH)


def shown_value(value: object) -> str:
    """``repr(value)`` cut to 60 characters: one line, NUL, newlines and unicode slashes visible."""
    return repr(value) if len(repr(value)) <= 60 else f"{repr(value)[:57]}..."


def safe_name(value: object, what: str) -> str:
    """``value`` unchanged when it is a safe name; UnsafeNameError naming ``what`` otherwise.

    The message is one line: the value is shown with ``repr`` (so NUL, newlines and unicode
    slashes are visible and cannot break the line), cut to 60 characters when longer.
    """
    if is_safe_name(value):
        return value
    raise UnsafeNameError(f"{what} {shown_value(value)} cannot be used in a file name: {SAFE_NAME_RULE}")
