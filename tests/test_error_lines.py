"""Error lines cut a long user value (infra.errors.shorten_values): a 10,000-character id quoted in an
error stays a readable line, in every error class and whatever quotes the value."""

from __future__ import annotations

import pytest

from retrieval_response.infra.errors import SHOWN_CHARS, InputError, InputErrors, JobFailure, shorten_values

pytestmark = pytest.mark.unit

LONG = "x" * 10_000
CUT = "x" * SHOWN_CHARS + "...(10000 characters)"


@pytest.mark.parametrize(("written", "shown"), [
    (f"query {LONG!r} is not in the queries", f"query '{CUT}' is not in the queries"),
    (f'document "{LONG}" repeated', f'document "{CUT}" repeated'),
    (f"query '{LONG}' by system 'bm25' (first at line 1)", f"query '{CUT}' by system 'bm25' (first at line 1)"),
    (f"id {LONG}", f"id {CUT}"),
    (f"feedback {10**400!r} is not a finite number", f"feedback {'1' + '0' * (SHOWN_CHARS - 1)}...(401 characters) is"),
])
@pytest.mark.parametrize("where", ["record", "rule", "job failure"])
def test_a_long_value_is_cut_to_its_head_and_length_wherever_it_is_quoted(written, shown, where):
    if where == "job failure":
        line = str(JobFailure(written))
    else:
        error = InputError("data.jsonl", written, "rule") if where == "record" else InputError("data.jsonl", "line 3",
                                                                                                   written)
        line = str(error)
    assert shown in line and len(line) < 200, line


@pytest.mark.parametrize("text", [
    "/tmp/pytest-of-someone/pytest-123/test_a_rather_long_test_name0/prod logs.jsonl: line 1: ok",
    "query 'q1' has two texts, 'who wrote dune' here: the dataset's feedback_labels (the users' view)",
    "x" * SHOWN_CHARS + " and '" + "y" * SHOWN_CHARS + "'",
])
def test_values_up_to_the_bound_and_prose_apostrophes_are_left_whole(text):
    assert shorten_values(text) == text


def test_several_errors_cut_each_line_and_a_secret_is_redacted_before_any_cut():
    errors = [InputError("f.jsonl", f"line {n}", f"query {LONG!r} is repeated") for n in (1, 2)]
    lines = str(InputErrors(errors)).splitlines()
    assert lines == [f"f.jsonl: line {n}: query '{CUT}' is repeated" for n in (1, 2)]
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 4
    line = str(InputError("config.yaml", "config key llm.generator.model", f"model 'openai/{key}' is unknown"))
    assert "Ab3dEf6h" not in line and "REDACTED" in line


@pytest.mark.parametrize("text", ["id " + "q" * 500 + " here", "id '" + "q" * 500 + "' here",
                                  'a "' + "é" * 300 + '" and ' + "x" * 101])
def test_cutting_a_cut_line_again_changes_nothing(text):
    """An error built from another's rule (errors grouped per rule) keeps the original length."""
    once = shorten_values(text)
    assert shorten_values(once) == once and "500 characters" in once or "300 characters" in once
