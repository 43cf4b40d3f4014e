"""Names from data or config never escape their folder: safe_name accepts only single, plain path components."""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import polars as pl
import pytest

from retrieval_response.infra.paths import (
    MAX_NAME_LENGTH,
    NAME_PATTERN,
    UnsafeNameError,
    is_safe_name,
    safe_name,
    safe_name_expr,
)

pytestmark = pytest.mark.unit

HOSTILE_NAMES = [
    "",
    ".",
    "..",
    "../escaped",
    "x/../../../../../escaped-1",
    "a/b",
    "a\\b",
    "/etc/passwd",
    "/abs-1",
    "C:\\x-1",
    "a\x00b",
    "a\nb",
    "a\rb",
    "tab\tname",
    "a b",
    "-rf",
    "--help-1",
    ".hidden",
    "..-1",
    "a..b",
    "x..",
    "a\u2215b",  # division slash
    "a\u2044b",  # fraction slash
    "a\uff0fb",  # fullwidth solidus
    "a\u29f8b",  # big solidus
    "\u00e9t\u00e9-1",
    "~user",
    "$HOME",
    "a*b",
    "a:b",
    "x" * (MAX_NAME_LENGTH + 1),
]
"""Separators, traversal, absolute paths, control characters, unicode slashes, options, hidden and
too long: the whole matrix, against safe_name (the other entry points try ``conftest.HOSTILE_NAME_PAIR``)."""

ALPHABET = "aZ09._+-/\\:~ \x00\n\t\u2215\u2044\uff0f\u00e9$*"
"""Characters random names are drawn from: the allowed ones and many that are not."""


def random_names(count: int, seed: int) -> list[str]:
    """``count`` random strings over ALPHABET, lengths 0..120, dots and slashes over-represented."""
    rng = random.Random(seed)
    pieces = list(ALPHABET) + ["..", "../", "/..", "./"]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(count)] + [
        "".join(rng.choice("ab.-") for _ in range(rng.randint(1, 120))) for _ in range(count)
    ]


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=repr)
def test_hostile_names_are_refused_with_one_line(name):
    with pytest.raises(UnsafeNameError) as caught:
        safe_name(name, "dataset name")
    message = str(caught.value)
    assert message.startswith("dataset name ") and "\n" not in message and "\r" not in message and "\x00" not in message
    assert len(message) < 300
    assert not is_safe_name(name)


@pytest.mark.parametrize("value", [None, 3, ["a"], b"abc"])
def test_non_strings_are_refused(value):
    with pytest.raises(UnsafeNameError):
        safe_name(value, "id")


@pytest.mark.parametrize(
    "name", ["A", "hotpotqa_sentences", "ML6", "Hp-e-12", "a.b", "x+y", "v1.1-train", "9", "a" * MAX_NAME_LENGTH]
)
def test_plain_names_are_returned_unchanged(name):
    assert safe_name(name, "dataset name") == name


def test_accepted_names_always_stay_inside_the_base_folder(tmp_path):
    """Property: any name safe_name accepts, alone or as several nested components, resolves under base."""
    base = tmp_path.resolve()
    accepted = 0
    for name in random_names(3000, seed=11) + HOSTILE_NAMES:
        if not is_safe_name(name):
            with pytest.raises(UnsafeNameError):
                safe_name(name, "name")
            continue
        accepted += 1
        child = (base / name).resolve()
        assert child.parent == base and child.name == name
        assert os.path.normpath(os.path.join(str(base), name, f"{name}.parquet")).startswith(str(base) + os.sep)
        assert not name.startswith(("-", ".")) and ".." not in name and len(name) <= MAX_NAME_LENGTH
    assert accepted > 100, "the generator must also produce safe names"


def test_the_wildcard_pattern_is_the_same_rule():
    """Snakemake wildcard_constraints use NAME_PATTERN: it matches exactly the safe names (length aside)."""
    for name in random_names(2000, seed=5) + HOSTILE_NAMES:
        matches = re.fullmatch(NAME_PATTERN, name) is not None
        assert matches == is_safe_name(name) or len(name) > MAX_NAME_LENGTH


def test_the_vectorised_rule_is_the_same_rule():
    """safe_name_expr, which checks a whole column at once (the sample tables' ids and E), accepts
    exactly the names is_safe_name accepts, the length bound included."""
    names = random_names(2000, seed=6) + HOSTILE_NAMES + ["a" * MAX_NAME_LENGTH, "a" * (MAX_NAME_LENGTH + 1), "a.", "a.-b"]
    accepted = pl.DataFrame({"name": names}).select(safe_name_expr(pl.col("name")))["name"].to_list()
    assert accepted == [is_safe_name(name) for name in names]
    assert any(accepted) and not all(accepted)


def test_message_shows_control_characters_escaped():
    with pytest.raises(UnsafeNameError, match=re.escape("'a\\nb'")):
        safe_name("a\nb", "id")


def test_relative_join_of_safe_names_never_climbs(tmp_path):
    """Every output template of the workflow is results/<names...>: joined safe names stay under results/."""
    results = (tmp_path / "results").resolve()
    names = [n for n in random_names(500, seed=3) if is_safe_name(n)]
    for first, second in zip(names, reversed(names), strict=False):
        assert results in Path(results, first, second, "Nc5_Np2.parquet").resolve().parents
