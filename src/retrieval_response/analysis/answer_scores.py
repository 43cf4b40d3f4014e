"""Answers scored against gold answers: SQuAD v1.1 / HotpotQA normalisation; token F1, exact match, recall, containment.

Normalisation (the official ``normalize_answer``): lower-case, delete ASCII punctuation
(Python's ``string.punctuation``), replace the words ``a``, ``an``, ``the`` by a space (regex
``\\b(a|an|the)\\b``), collapse whitespace runs to one space and strip. Tokens are the
normalised text split at spaces.

For an answer a and one gold answer g with token multisets A and G:

- exact match EM(a, g) = [normalise(a) == normalise(g)];
- common = |A ∩ G| (multiset intersection); F1(a, g) = 0 when common = 0, else
  2 P R / (P + R) with P = common / |A|, R = common / |G| (so an empty answer or gold scores 0);
- token recall Recall(a, g) = common / |G| (the share of the gold's tokens, counted with
  multiplicity, found in the answer: McGill-NLP instruct-qa's ``Recall``), 0 when |G| = 0;
- containment Contains(a, g) = [normalise(g) is a substring of normalise(a)] (instruct-qa's
  ``RecallEM``, Self-RAG's ``match``), false when normalise(g) is empty.

A gold answer that normalises to the empty text (say "The.") says nothing about an answer, so it
scores 0 / false under every score here; instruct-qa gives such a gold a recall of 1 and a
containment of 1. Containment is a character substring test, as there: the gold "art" is
contained in the answer "start".

An answer's score is the maximum over the gold answers of its query: F1 = max_g F1(a, g),
EM = max_g EM(a, g), recall = max_g Recall(a, g), contains = max_g Contains(a, g). Each is null
when the answer is null or the query has no gold answer.
HotpotQA's extra rule (a yes/no/noanswer prediction scores 0 unless it equals the gold) is
not applied: it is meant for extracted short answers, not for generated sentences.

Whitespace is Unicode White_Space plus U+001C..U+001F, as Python's ``str.split()``; ``\\b``
uses Unicode word characters, which agree with Python's for letters, decimal digits and ``_``
(they differ only for combining marks and non-decimal numerals next to an article).
"""

from __future__ import annotations

import polars as pl

PUNCTUATION = r"""[!-/:-@\[-`{-~]"""
"""Python's ``string.punctuation`` (the ASCII punctuation characters) as a regex class."""
ARTICLES = r"\b(?:a|an|the)\b"
WHITESPACE = r"[\s\x1c-\x1f]+"
SCORES = {"f1": pl.Float64, "em": pl.Boolean, "recall": pl.Float64, "contains": pl.Boolean}
"""The scores :func:`best_scores` gives each answer, with their dtypes."""
F1_LEVEL_EDGES = (0.25, 0.5, 0.75)
"""Upper edges of F1 levels 2, 3, 4: level 1 is F1 = 0, 2 is (0, .25], 3 (.25, .5], 4 (.5, .75], 5 (.75, 1]."""


def normalized(text: pl.Expr) -> pl.Expr:
    """SQuAD's ``normalize_answer``: lower-case, drop punctuation, articles -> " ", whitespace runs -> " ", strip."""
    lowered = text.str.to_lowercase().str.replace_all(PUNCTUATION, "")
    return lowered.str.replace_all(ARTICLES, " ").str.replace_all(WHITESPACE, " ").str.strip_chars(" ")


def tokens(normalized_text: pl.Expr) -> pl.Expr:
    """The tokens of a normalised text: split at spaces; the empty text has none."""
    return normalized_text.str.split(" ").list.eval(pl.element().filter(pl.element() != ""))


def pair_scores(pairs: pl.DataFrame) -> pl.DataFrame:
    """``pairs`` (distinct ``answer``, ``gold`` strings) with ``f1``, ``recall`` (Float64), ``em``, ``contains`` (Boolean).

    The four scores of each pair as the module docstring defines them.
    """
    texts = pairs.with_row_index("pair").with_columns(
        normalized(pl.col("answer")).alias("answer_norm"), normalized(pl.col("gold")).alias("gold_norm")
    )
    texts = texts.with_columns(tokens(pl.col("answer_norm")).alias("a"), tokens(pl.col("gold_norm")).alias("g"))
    gold_counts = texts.select("pair", token=pl.col("g")).explode("token").drop_nulls("token").group_by("pair", "token").len("g")
    answer_tokens = texts.select("pair", token=pl.col("a")).explode("token")
    common = (
        answer_tokens.join(gold_counts, on=["pair", "token"], how="inner")  # answer tokens found in the gold only
        .group_by("pair", "token")
        .agg(pl.len().alias("a"), pl.col("g").first())
        .group_by("pair")
        .agg(pl.min_horizontal("a", "g").sum().alias("common"))
    )
    scored = texts.join(common, on="pair", how="left").with_columns(pl.col("common").fill_null(0))
    precision = pl.col("common") / pl.col("a").list.len()
    recall = pl.col("common") / pl.col("g").list.len()
    f1 = pl.when(pl.col("common") > 0).then(2 * precision * recall / (precision + recall)).otherwise(0.0)
    token_recall = pl.when(pl.col("common") > 0).then(recall).otherwise(0.0)
    em = pl.col("answer_norm") == pl.col("gold_norm")
    contains = (pl.col("gold_norm") != "") & pl.col("answer_norm").str.contains(pl.col("gold_norm"), literal=True)
    return scored.select(
        "answer",
        "gold",
        f1.cast(pl.Float64).alias("f1"),
        em.alias("em"),
        token_recall.cast(pl.Float64).alias("recall"),
        contains.alias("contains"),
    )


def best_scores(answers: pl.Series, gold: pl.Series) -> pl.DataFrame:
    """Per row, ``f1, em, recall, contains`` of ``answers[i]`` (str) against its gold answers ``gold[i]`` (list[str]).

    Each is the maximum over the row's gold answers of token F1, exact match, token recall and
    containment (module docstring); all null when the answer is null or the gold list is null or
    empty. Each distinct (answer, gold answer) pair is scored once.
    """
    rows = pl.DataFrame({"answer": answers, "gold": gold}, schema={"answer": pl.String, "gold": pl.List(pl.String)})
    exploded = rows.with_row_index("row").explode("gold").drop_nulls(["answer", "gold"])
    scores = pair_scores(exploded.select("answer", "gold").unique())
    best = (
        exploded.join(scores, on=["answer", "gold"], how="left")
        .group_by("row")
        .agg(pl.col(list(SCORES)).max())
    )
    return (
        rows.with_row_index("row")
        .join(best, on="row", how="left", maintain_order="left")
        .select(pl.col(name).cast(dtype) for name, dtype in SCORES.items())
    )


def f1_level(f1: pl.Expr) -> pl.Expr:
    """Token F1 on the five-level grade scale: 0 -> 1, (0, .25] -> 2, (.25, .5] -> 3, (.5, .75] -> 4, (.75, 1] -> 5.

    F1 = 0 (no common token) has its own level; the rest of (0, 1] is cut into quarters,
    closed on the right, so a perfect answer (F1 = 1) is level 5. Null stays null.
    """
    level = pl.when(f1 <= 0).then(1)
    for index, edge in enumerate(F1_LEVEL_EDGES, start=2):
        level = level.when(f1 <= edge).then(index)
    return level.when(f1.is_not_null()).then(5).otherwise(None).cast(pl.Int8)
