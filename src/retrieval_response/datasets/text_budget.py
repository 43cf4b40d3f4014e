"""Long texts shortened for prompts: the first sentences up to a word budget (docs/METHODS.md#text-budget).

``datasets.<name>.text_words`` = B (null: texts kept whole). A text of at most B words is kept
as it is. A longer one is cut at a sentence end: the longest run of its first sentences with at
most B words in all. When the first sentence alone has more than B words, its first B words are
kept. A cut never falls inside a word, and the kept text is the original's prefix with trailing
whitespace removed (inner whitespace untouched).

Words are runs of non-whitespace (Python's ``str.split()``); a sentence ends after ``.``, ``!``
or ``?`` (with any closing quotes or brackets) followed by whitespace. Abbreviations ("e.g. x")
end a sentence too: the budget stays a budget, only the cut comes earlier.
"""

from __future__ import annotations

import re

import polars as pl

SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s)")
WORD = re.compile(r"\S+")
TEXT_COLUMNS = ("p", "n")
"""The texts table's list columns of candidate texts (positives, negatives) that a budget shortens."""


def shorten(text: str, budget: int) -> str:
    """``text`` cut to its first sentences with at most ``budget`` words in all (module docstring)."""
    ends = [match.end() for match in WORD.finditer(text)]
    if len(ends) <= budget:
        return text
    limit = ends[budget - 1]  # the end of the last word within the budget
    cut = 0
    for match in SENTENCE_END.finditer(text, 0, limit + 1):  # + 1: the whitespace after a sentence end
        cut = match.end()
    return text[: cut or limit].rstrip()


def apply_text_budget(texts: pl.DataFrame, budget: int | None) -> tuple[pl.DataFrame, dict]:
    """``texts`` with every candidate text of :data:`TEXTS_COLUMNS` shortened to ``budget`` words, and
    a report ``{"text_words": budget, "texts": n, "shortened": k, "words_before": a, "words_after": b}``
    (word totals over the candidate texts). ``budget`` None returns ``texts`` unchanged."""
    if budget is None:
        return texts, {"text_words": None}
    if budget < 1:
        raise ValueError(f"text_words {budget}: expected an integer >= 1 or null")
    out, before, after, shortened, count = texts, 0, 0, 0, 0
    for column in (c for c in TEXT_COLUMNS if c in texts.columns):
        lists = texts[column].to_list()
        cut = [[shorten(text, budget) for text in items] if items is not None else None for items in lists]
        for items, new in zip(lists, cut, strict=True):
            for text, short in zip(items or (), new or (), strict=True):
                count += 1
                before += len(text.split())
                after += len(short.split())
                shortened += short != text
        out = out.with_columns(pl.Series(column, cut, dtype=texts.schema[column]))
    report = {"text_words": budget, "texts": count, "shortened": shortened, "words_before": before,
              "words_after": after}
    return out, report
