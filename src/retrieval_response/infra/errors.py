"""Errors raised on bad input: each names the file, the record and the rule broken."""

from __future__ import annotations

import re
from collections.abc import Sequence

from retrieval_response.infra.secrets import redact_secrets

SHOWN_CHARS = 100
"""The longest user value an error line quotes whole; a longer one is cut (:func:`shorten_values`)."""
_VALUE = re.compile(r"""(?<![\w'"])(['"])(.+?)\1(?!\w)|[^\s'"]+""")
_CUT = re.compile(r".*\.\.\.\(\d+( characters\))?", re.DOTALL)
"""A value :func:`shorten_values` cut already (unquoted, it ends where the blank before "characters" is)."""


def shorten_values(text: str) -> str:
    """``text`` with every value longer than :data:`SHOWN_CHARS` characters cut to its first
    :data:`SHOWN_CHARS`, an ellipsis and its length (``'abc...(10000 characters)'``), so that an
    error line quoting a 10,000-character id stays a line. A value is a quoted literal (``'...'`` or
    ``"..."`` opened after no letter, closed before none, as ``repr`` writes it) or else a run of
    characters without blanks or quotes; a file path or an id of up to :data:`SHOWN_CHARS` characters
    is shown whole. A value cut already is left as it is, so cutting twice changes nothing."""
    def shown(match: re.Match) -> str:
        quote, value = (match[1], match[2]) if match[1] else ("", match[0])
        if len(value) <= SHOWN_CHARS or _CUT.fullmatch(value):
            return match[0]
        return f"{quote}{value[:SHOWN_CHARS]}...({len(value)} characters){quote}"

    return _VALUE.sub(shown, text)


class InputError(ValueError):
    """Bad user input: ``<path>: <record>: <rule>``.

    ``record`` is a line number ("line 12"), an id ("id N-5"), or a config key
    ("config key sampling.Np"); ``rule`` says what was expected. A value in any of the three
    that looks like a secret (``infra.secrets.looks_like_secret``: an API key pasted where a
    name belongs, echoed by a check) is replaced by ``REDACTED``, so no error line shows one;
    then a long value in ``record`` or ``rule`` is cut (:func:`shorten_values`).
    """

    def __init__(self, path: object, record: str, rule: str):
        self.path = redact_secrets(str(path))
        self.record = shorten_values(redact_secrets(record))
        self.rule = shorten_values(redact_secrets(rule))
        super().__init__(f"{self.path}: {self.record}: {self.rule}")


class JobFailure(RuntimeError):
    """A workflow job that must fail with one line, without a traceback (for example an LLM job
    whose calls failed beyond ``llm.max_failed_share``): the message says what failed and how to
    go on; a value in it that looks like a secret is replaced by ``REDACTED``, a long one cut
    (:func:`shorten_values`)."""

    def __init__(self, message: str):
        super().__init__(shorten_values(redact_secrets(message)))


class InputErrors(InputError):
    """Several bad records at once: one line ``<path>: <record>: <rule>`` per record, at most
    ``MAX_LINES`` of them, then a line counting the rest. ``path``, ``record`` and ``rule`` are
    the first error's; ``errors`` holds them all."""

    MAX_LINES = 20

    def __init__(self, errors: Sequence[InputError]):
        if not errors:
            raise ValueError("InputErrors needs at least one error")
        self.errors = list(errors)
        first = self.errors[0]
        super().__init__(first.path, first.record, first.rule)
        lines = [str(error) for error in self.errors[: self.MAX_LINES]]
        if len(self.errors) > self.MAX_LINES:
            lines.append(f"{first.path}: ... and {len(self.errors) - self.MAX_LINES} more broken records")
        self.args = ("\n".join(lines),)

    def __str__(self) -> str:
        return self.args[0]


def raise_all(errors: Sequence[InputError]) -> None:
    """Raise ``errors`` (one InputError as itself, several as InputErrors); nothing when empty."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise InputErrors(errors)
