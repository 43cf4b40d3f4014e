"""Errors raised on bad input: each names the file, the record and the rule broken."""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input: ``<path>: <record>: <rule>``.

    ``record`` is a line number ("line 12"), an id ("id N-5"), or a config key
    ("config key sampling.Np"); ``rule`` says what was expected.
    """

    def __init__(self, path: object, record: str, rule: str):
        self.path = str(path)
        self.record = record
        self.rule = rule
        super().__init__(f"{self.path}: {record}: {rule}")


class JobFailure(RuntimeError):
    """A workflow job that must fail with one line, without a traceback (for example an LLM job
    whose calls failed beyond ``llm.max_failed_share``): the message says what failed and how to
    go on."""
