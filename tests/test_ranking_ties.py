"""Ties never decided by relevance: every ranker orders tied candidates by a rule blind to which
of them are positives (the candidates' texts for cosine, BM25 and what a run does not rank; the
run's own lines for what it ranks), so P@1 of an all-tied ranking is Np/Nc on average, not 1."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from retrieval_response.ranking.cosine_ranking import rank_samples
from retrieval_response.ranking.lexical import bm25_rank_samples
from retrieval_response.ranking.run_file import read_run, run_rank_samples

pytestmark = pytest.mark.unit

NC, NP = 5, 2
DOCS = [f"d{i}" for i in range(NC)]


def texts_table(queries: list[tuple[list[int], list[str]]]) -> pl.DataFrame:
    """One query per (positive document indexes, texts of d0..d4): its positives those documents,
    its negatives the others, each list in document order; ids Q-<n>, source ids q<n>."""
    rows = []
    for number, (positives, texts) in enumerate(queries):
        negatives = [i for i in range(NC) if i not in positives]
        rows.append({"id": f"Q-{number}", "subset": "Q", "source_id": f"q{number}", "q": "zzz qqq",
                     "p": [texts[i] for i in positives], "n": [texts[i] for i in negatives],
                     "p_doc": [DOCS[i] for i in positives], "n_doc": [DOCS[i] for i in negatives]})
    return pl.DataFrame(rows)


def constant_encode(strings: list[str], kind: str) -> np.ndarray:
    """Every text the same vector: every cosine ties."""
    return np.ones((len(strings), 4), dtype=np.float32)


def write_run(tmp_path: Path, lines: list[str]) -> pl.DataFrame:
    path = tmp_path / "run.trec"
    path.write_text("\n".join(lines) + "\n")
    return read_run(path)


def tied_run(tmp_path: Path, n_queries: int, order: list[int]) -> pl.DataFrame:
    """A run ranking every candidate of every query at score 1 and rank 1, lines in ``order``."""
    return write_run(tmp_path, [f"q{q} Q0 {DOCS[i]} 1 1.0 r" for q in range(n_queries) for i in order])


def no_candidate_run(tmp_path: Path, n_queries: int) -> pl.DataFrame:
    """A run that ranks only documents that are no candidate: every candidate is not in the run."""
    return write_run(tmp_path, [f"q{q} Q0 other{q} 1 1.0 r" for q in range(n_queries)])


RANKERS = {
    "cosine": lambda texts, tmp_path: rank_samples(texts, constant_encode, ranker_code="E", Nc=NC, Np=NP, Ks=[1]),
    "bm25": lambda texts, tmp_path: bm25_rank_samples(texts, {}, ranker_code="E", Nc=NC, Np=NP, Ks=[1]),
    "run, nothing ranked": lambda texts, tmp_path: run_rank_samples(
        texts, no_candidate_run(tmp_path, texts.height), ranker_code="r", Nc=NC, Np=NP, Ks=[1]),
}
LABELLINGS = [list(pair) for pair in itertools.combinations(range(NC), NP)]
"""Every choice of the two positives among five candidates: the adversary picks which are relevant."""


def ranked_docs(texts: pl.DataFrame, ranked: pl.DataFrame) -> list[list[str]]:
    """Each ranked sample's candidates as document ids, in ranked order."""
    out = []
    for row in ranked.join(texts, on="id").iter_rows(named=True):
        candidates = row["p_doc"][:NP] + row["n_doc"][:NC - NP]
        out.append([candidates[i] for i in row["rank"]])
    return out


@pytest.mark.parametrize("ranker", RANKERS)
def test_the_order_of_tied_candidates_is_the_same_whichever_are_relevant(ranker, tmp_path):
    texts = [f"alpha {word}" for word in ("one", "two", "three", "four", "five")]
    table = texts_table([(positives, texts) for positives in LABELLINGS])
    orders = ranked_docs(table, RANKERS[ranker](table, tmp_path)[0])
    assert len(orders) == len(LABELLINGS) and all(order == orders[0] for order in orders)


@pytest.mark.parametrize("ranker", RANKERS)
def test_an_all_tied_ranking_has_the_precision_of_chance(ranker, tmp_path):
    queries = [([0, 1], [f"text {q} {d}" for d in range(NC)]) for q in range(400)]
    ranked, _ = RANKERS[ranker](texts_table(queries), tmp_path)
    p_at_1 = ranked["P"].list.first().mean()
    assert abs(p_at_1 - NP / NC) < 0.08, p_at_1


@pytest.mark.parametrize("order", [[2, 3, 4, 0, 1], [0, 1, 2, 3, 4], [4, 0, 3, 1, 2]])
@pytest.mark.parametrize("positives", LABELLINGS)
def test_a_run_with_every_score_and_rank_tied_keeps_its_own_line_order(tmp_path, order, positives):
    texts = [f"t{i}" for i in range(NC)]
    table = texts_table([(positives, texts)])
    ranked, _ = run_rank_samples(table, tied_run(tmp_path, 1, order), ranker_code="r", Nc=NC, Np=NP, Ks=[1])
    assert ranked_docs(table, ranked) == [[DOCS[i] for i in order]]
    assert ranked["P"][0][0] == (1.0 if order[0] in positives else 0.0)
