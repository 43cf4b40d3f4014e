"""Answer scores equal the official SQuAD v1.1 evaluate script on generated strings; F1 levels."""

from __future__ import annotations

import re
import string
from collections import Counter

import numpy as np
import polars as pl
import pytest

from retrieval_response.analysis.answer_scores import best_scores, f1_level, normalized

pytestmark = pytest.mark.unit


# --- a direct transcription of the official SQuAD v1.1 evaluate-v1.1.py -----------------------
def normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def f1_score(prediction, ground_truth):
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def exact_match_score(prediction, ground_truth):
    return normalize_answer(prediction) == normalize_answer(ground_truth)


# --- instruct-qa's Recall and RecallEM over the same normalisation, except that a gold answer that
# normalises to the empty text scores 0 (instruct-qa gives it 1: see the module docstring) -----
def recall_score(prediction, ground_truth):
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    if not ground_truth_tokens:
        return 0
    return sum(common.values()) / len(ground_truth_tokens)


def contains_score(prediction, ground_truth):
    gold = normalize_answer(ground_truth)
    return gold != "" and gold in normalize_answer(prediction)


def metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    scores_for_ground_truths = []
    for ground_truth in ground_truths:
        score = metric_fn(prediction, ground_truth)
        scores_for_ground_truths.append(score)
    return max(scores_for_ground_truths)


# --- generated strings ------------------------------------------------------------------------
WORDS = ["a", "an", "the", "The", "A", "AN", "theory", "and", "ana", "Paris", "paris", "1,000", "U.S.", "don't",
         "x", "yes", "No", "éclair", "Éclair", "straße", "ΟΔΟΣ", "東京", "an-the", "a_b", "42", "İstanbul", "🙂"]
GLUE = [" ", "  ", "\t", "\n", ".", ",", "-", "'", '"', "(", ")", "!?", "", "\u00a0", "\u2003", "\x1c", "_", "—", "/"]


def generated_strings(rng: np.random.Generator, count: int) -> list[str]:
    texts = []
    for _ in range(count):
        parts = [str(rng.choice(GLUE))] if rng.random() < 0.3 else []
        for _ in range(int(rng.integers(0, 7))):
            parts += [str(rng.choice(WORDS)), str(rng.choice(GLUE))]
        texts.append("".join(parts))
    return texts


@pytest.fixture(scope="module")
def generated():
    rng = np.random.default_rng(20250611)
    answers = generated_strings(rng, 3000)
    pool = generated_strings(rng, 400) + ["Paris", "the U.S.", "1,000", "yes", ""]
    gold = [[str(g) for g in rng.choice(pool, size=int(rng.integers(1, 4)))] for _ in answers]
    # Answers that share words with their gold, so that partial and full matches are frequent.
    answers = [
        f"{a} {g[0]}" if i % 3 == 0 else g[-1] if i % 7 == 0 else a
        for i, (a, g) in enumerate(zip(answers, gold, strict=True))
    ]
    return answers, gold


def test_normalisation_equals_the_official_script(generated):
    answers, gold = generated
    texts = answers + [g for golds in gold for g in golds]
    ours = pl.select(normalized(pl.Series(texts, dtype=pl.String))).to_series().to_list()
    assert ours == [normalize_answer(text) for text in texts]


@pytest.mark.parametrize(("graded", "scorer", "hit", "matcher"), [
    ("f1", f1_score, "em", exact_match_score),  # the official script's
    ("recall", recall_score, "contains", contains_score),
], ids=["f1-em", "recall-contains"])
def test_scores_equal_the_reference_maximised_over_gold(generated, graded, scorer, hit, matcher):
    answers, gold = generated
    scores = best_scores(pl.Series(answers), pl.Series(gold))
    expected_graded = [metric_max_over_ground_truths(scorer, a, g) for a, g in zip(answers, gold, strict=True)]
    expected_hit = [metric_max_over_ground_truths(matcher, a, g) for a, g in zip(answers, gold, strict=True)]
    assert scores[graded].to_list() == [float(x) for x in expected_graded]
    assert scores[hit].to_list() == expected_hit
    assert 0 < sum(expected_hit) < len(answers) and 0 < sum(0 < x < 1 for x in expected_graded)


@pytest.mark.parametrize(
    ("answer", "gold", "recall", "contains"),
    [
        ("It is Paris, in France.", ["paris"], 1.0, True),
        ("The capital is Paris.", ["Paris, France"], 0.5, False),
        ("paris paris", ["Paris and Paris"], 2 / 3, False),
        ("He played art rock.", ["art"], 1.0, True),
        ("A start.", ["art"], 0.0, True),
        ("London", ["Paris", "london!"], 1.0, True),
        ("Paris", ["The."], 0.0, False),
        ("", ["Paris"], 0.0, False),
    ],
)
def test_recall_counts_gold_tokens_and_contains_is_a_substring_of_the_normalised_answer(answer, gold, recall, contains):
    scores = best_scores(pl.Series([answer]), pl.Series([gold]))
    assert scores["recall"][0] == pytest.approx(recall)
    assert scores["contains"][0] is contains


def test_missing_answer_or_gold_gives_null_and_row_order_is_kept():
    answers = pl.Series(["Paris", None, "the Paris", "Paris", "", "Paris"], dtype=pl.String)
    gold = pl.Series([["Paris"], ["Paris"], [], None, ["Paris"], ["London", "paris!"]], dtype=pl.List(pl.String))
    scores = best_scores(answers, gold)
    assert scores.schema == pl.Schema({"f1": pl.Float64, "em": pl.Boolean, "recall": pl.Float64, "contains": pl.Boolean})
    assert scores["f1"].to_list() == [1.0, None, None, None, 0.0, 1.0]
    assert scores["em"].to_list() == [True, None, None, None, False, True]
    assert scores["recall"].to_list() == [1.0, None, None, None, 0.0, 1.0]
    assert scores["contains"].to_list() == [True, None, None, None, False, True]


def test_partial_overlap_counts_repeated_tokens_once_per_gold_occurrence():
    scores = best_scores(pl.Series(["paris paris paris london"]), pl.Series([["Paris and Paris"]]))
    precision, recall = 2 / 4, 2 / 3
    assert scores["f1"][0] == pytest.approx(2 * precision * recall / (precision + recall))


@pytest.mark.parametrize(
    ("f1", "level"),
    [(0.0, 1), (1e-9, 2), (0.25, 2), (0.2500001, 3), (0.5, 3), (0.6, 4), (0.75, 4), (0.76, 5), (1.0, 5), (None, None)],
)
def test_f1_levels_close_on_the_right_and_zero_has_its_own(f1, level):
    assert pl.select(f1_level(pl.lit(f1, dtype=pl.Float64))).item() == level


def test_f1_levels_are_monotone_over_the_unit_interval():
    grid = pl.Series(np.linspace(0, 1, 1001))
    levels = pl.select(f1_level(pl.lit(grid))).to_series().to_numpy()
    assert levels.dtype == np.int8 and set(levels) == {1, 2, 3, 4, 5} and (np.diff(levels) >= 0).all()
