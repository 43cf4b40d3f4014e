"""Words that the arXiv abstracts' lost line breaks joined ("economicgrowth", "ofthe", "time.Against"), split again.

Applied by the prepare job to the sampled candidate texts of an arXiv dataset with
``split_joined_words: true`` (``datasets.layouts.prepare``'s ``repair_texts``), before the text
budget; ``python -m retrieval_response.datasets.arxiv_words`` measures it on a source file.

The shipped abstracts lost their line breaks upstream: the last word of a line and the first of
the next became one token. The repair uses the kept library ``wordsegment`` (unigram and bigram
counts of a web corpus, and its English word list as the dictionary, plus the one-letter words
"a" and "i"):

- a *word* is a maximal run of ASCII letters inside a whitespace-separated token; tokens holding
  ``://``, ``www.``, ``@`` or a backslash (URLs, e-mail addresses, LaTeX commands) are left alone;
- a word is split only when it is all lowercase or capitalised (an upper-case first letter, the
  rest lowercase: "Inthis"; acronyms and mixed case such as "LLMs" or "GitHub" stay), has at least
  :data:`MIN_LETTERS` letters and is not a dictionary word, and when ``wordsegment.segment`` splits
  it into two or more parts that are all dictionary words; the parts are joined by spaces, the
  first keeping the word's capital ("Inthis" -> "In this");
- a sentence end joined to the next sentence (two lowercase letters, ``.``, then a capitalised
  word: "time.Against") gets its space back ("time. Against").

Everything else is kept byte for byte. Words outside the dictionary that do not split into
dictionary words (names, technical terms: "Gaussian", "datasets") stay as they are. A split can
still be wrong where a real word is missing from the dictionary and its parts are words
("autoencoder" -> "auto encoder"): :func:`dictionary_report` lists the most frequent splits and a
seeded sample of them for review.
"""

from __future__ import annotations

import functools
import random
import re
import sys
from collections import Counter
from importlib import resources

import polars as pl
import wordsegment

MIN_LETTERS = 4
"""Shorter words are never split (variables and abbreviations such as "iid" stay)."""
_LETTERS = re.compile(r"[A-Za-z]+")
_LEFT_ALONE = re.compile(r"://|www\.|@|\\")
_SENTENCE_JOIN = re.compile(r"(?<=[a-z]{2}\.)(?=[A-Z][a-z])")


@functools.cache
def dictionary() -> frozenset[str]:
    """wordsegment's English word list (lowercase) plus the one-letter words "a" and "i"."""
    words = resources.files("wordsegment").joinpath("words.txt").read_text(encoding="utf-8").split()
    return frozenset(words) | {"a", "i"}


@functools.cache
def _loaded() -> None:
    wordsegment.load()


@functools.cache
def split_word(word: str) -> str:
    """``word`` split into dictionary words by the module's rule, or ``word`` itself."""
    if len(word) < MIN_LETTERS or word.lower() in dictionary():
        return word
    if not (word.islower() or (word[0].isupper() and word[1:].islower())):
        return word
    _loaded()
    parts = wordsegment.segment(word)
    if len(parts) < 2 or not all(part in dictionary() for part in parts):
        return word
    if word[0].isupper():
        parts[0] = parts[0].capitalize()
    return " ".join(parts)


def _repair_token(token: str) -> str:
    if _LEFT_ALONE.search(token):
        return token
    return _LETTERS.sub(lambda m: split_word(m.group()), _SENTENCE_JOIN.sub(" ", token))


def split_joined_words(text: str) -> str:
    """``text`` with its joined words split and joined sentences separated (module docstring);
    whitespace between tokens is kept as it is."""
    return re.sub(r"\S+", lambda m: _repair_token(m.group()), text)


def split_joined_words_table(texts: pl.DataFrame) -> tuple[pl.DataFrame, dict]:
    """``texts`` with every candidate text (``p`` and ``n``) repaired by :func:`split_joined_words`,
    and a report: ``texts_changed`` (distinct texts that changed) of ``texts`` (distinct texts)."""
    distinct = pl.concat([texts["p"].explode(), texts["n"].explode()]).drop_nulls().unique().to_list()
    repaired = {text: split_joined_words(text) for text in distinct}
    changed = sum(text != new for text, new in repaired.items())
    out = texts.with_columns(
        pl.Series(c, [None if texts_ is None else [repaired.get(t, t) for t in texts_] for texts_ in texts[c]],
                  dtype=texts.schema[c])
        for c in ("p", "n"))
    return out, {"texts": len(distinct), "texts_changed": changed}


def dictionary_words(texts: list[str]) -> tuple[int, int]:
    """(words, words outside the dictionary) of ``texts``: every maximal run of ASCII letters,
    compared lowercased with :func:`dictionary`."""
    words = [w.lower() for text in texts for w in _LETTERS.findall(text)]
    vocabulary = dictionary()
    return len(words), sum(w not in vocabulary for w in words)


def dictionary_report(texts: list[str], *, examples: int = 40, seed: int = 0) -> dict:
    """The share of words outside the dictionary before and after :func:`split_joined_words` on
    ``texts``, the texts changed, the distinct words split and how often, the ``examples`` most
    frequent splits and a sample of ``examples`` splits drawn with ``seed`` (for review)."""
    repaired = [split_joined_words(text) for text in texts]
    before, after = dictionary_words(texts), dictionary_words(repaired)
    splits: Counter = Counter()
    for text in texts:
        for token in text.split():
            if not _LEFT_ALONE.search(token):
                splits.update(w for w in _LETTERS.findall(token) if split_word(w) != w)
    ordered = sorted(splits, key=lambda w: (-splits[w], w))
    sample = sorted(random.Random(seed).sample(ordered, min(examples, len(ordered))))
    return {
        "texts": len(texts),
        "texts_changed": sum(a != b for a, b in zip(texts, repaired, strict=True)),
        "words_before": before[0], "outside_dictionary_before": before[1],
        "outside_share_before": before[1] / before[0] if before[0] else None,
        "words_after": after[0], "outside_dictionary_after": after[1],
        "outside_share_after": after[1] / after[0] if after[0] else None,
        "distinct_words_split": len(splits), "words_split": sum(splits.values()),
        "sentence_joins_separated": sum(len(_SENTENCE_JOIN.findall(token)) for text in texts
                                        for token in text.split() if not _LEFT_ALONE.search(token)),
        "most_frequent_splits": [{"word": w, "count": splits[w], "split": split_word(w)} for w in ordered[:examples]],
        "sample_splits": [{"word": w, "count": splits[w], "split": split_word(w)} for w in sample],
    }


def main(argv: list[str]) -> int:
    """Command line ``LAYOUT SOURCE OUT.json``: :func:`dictionary_report` of the distinct candidate
    texts (``p`` and ``n``) of ``SOURCE`` read with the arXiv ``LAYOUT`` (``arxiv_parquet`` or
    ``arxiv_snapshot``), written to ``OUT.json`` with the source and layout; a bad input is one
    line on stderr, status 1."""
    from retrieval_response.datasets.layouts import ARXIV_LAYOUTS, read_texts
    from retrieval_response.infra.atomic import write_json
    from retrieval_response.infra.errors import InputError

    if len(argv) != 3 or argv[0] not in ARXIV_LAYOUTS:
        print(f"usage: python -m retrieval_response.datasets.arxiv_words {{{','.join(ARXIV_LAYOUTS)}}} SOURCE OUT.json",
              file=sys.stderr)
        return 2
    layout, source, out = argv
    try:
        texts = read_texts(layout, source)
    except InputError as error:
        print(error, file=sys.stderr)
        return 1
    distinct = pl.concat([texts["p"].explode(), texts["n"].explode()]).drop_nulls().unique().sort().to_list()
    report = {"source": source, "layout": layout, "command": f"python -m retrieval_response.datasets.arxiv_words "
              f"{layout} {source} {out}", **dictionary_report(distinct)}
    write_json(report, out)
    print(f"{out}: words outside the dictionary {report['outside_share_before']:.4f} -> {report['outside_share_after']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
