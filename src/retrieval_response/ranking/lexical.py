"""BM25 as a ranker, through the ``bm25s`` library (docs/CORPUS.md#bm25 says why bm25s).

A registry entry ``{backend: bm25, k1, b, method}`` (defaults 1.5, 0.75, ``lucene``: bm25s's
own) ranks texts lexically where a dense embedder ranks them by cosine. Texts are tokenised by
``bm25s.tokenize``: lower-cased, words of two or more word characters, English stop words
removed, no stemming. The collection whose statistics (document frequencies, mean length) BM25
uses is every distinct candidate text of the dataset's texts table (all queries, positives and
negatives), so a query's scores do not depend on the design. For a design (Nc, Np), ``rank``
lists each query's candidates by descending BM25 score, ties (a score 0 for every candidate
sharing no word with the query) by ``cosine_ranking.tie_keys``, as the cosine ranking orders them.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from retrieval_response.infra.errors import InputError
from retrieval_response.ranking.cosine_ranking import (
    RankingReport,
    design_ks,
    order_by_score,
    ranked_table,
    select_serving,
    tie_keys,
)

DEFAULTS = {"k1": 1.5, "b": 0.75, "method": "lucene"}
METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")


def bm25_settings(code: str, spec: Mapping, source: str = "config") -> dict:
    """``{"k1", "b", "method"}`` of the bm25 registry entry ``spec`` (defaults filled in).

    InputError ``(source, "config key rankers.<code>.<key>", rule)`` for a key of a dense
    backend (``model``, ``query_prompt``, ``passage_prompt``, ``batch_size``, ``device``,
    ``cache_dir``: BM25 adds no prompt and encodes nothing), k1 <= 0, b outside [0, 1] or an
    unknown method.
    """
    unknown = sorted(set(spec) - {"backend"} - set(DEFAULTS))
    if unknown:
        raise InputError(source, f"config key rankers.{code}.{unknown[0]}",
                         f"does not apply to the bm25 backend (its keys: {', '.join(DEFAULTS)})")
    settings = {**DEFAULTS, **{key: spec[key] for key in DEFAULTS if key in spec}}
    k1, b = settings["k1"], settings["b"]
    if isinstance(k1, bool) or not isinstance(k1, int | float) or not k1 > 0:
        raise InputError(source, f"config key rankers.{code}.k1", f"must be a number > 0, got {k1!r}")
    if isinstance(b, bool) or not isinstance(b, int | float) or not 0 <= b <= 1:
        raise InputError(source, f"config key rankers.{code}.b", f"must be a number in [0, 1], got {b!r}")
    if settings["method"] not in METHODS:
        raise InputError(source, f"config key rankers.{code}.method",
                         f"unknown method {settings['method']!r}; expected one of {', '.join(METHODS)}")
    return settings


NO_INDEXED_WORD = ("no text of the collection has a word BM25 indexes (two or more word characters, not an English "
                   "stop word), so every score would be 0: rank this dataset with a dense embedder")


class BM25Index:
    """A bm25s index over ``documents`` (in their order); ``scores`` of queries against all of them.
    InputError ``(source, "file", NO_INDEXED_WORD)`` when no document holds a word the tokeniser
    keeps (stop words, punctuation and one-letter words only), where bm25s itself would fail."""

    def __init__(self, documents: list[str], settings: Mapping, source: str = "the texts table"):
        import bm25s

        self._bm25s = bm25s
        self.size = len(documents)
        self.retriever = bm25s.BM25(k1=float(settings["k1"]), b=float(settings["b"]), method=settings["method"])
        tokens = bm25s.tokenize(documents, stopwords="en", show_progress=False)
        if not tokens.vocab:
            raise InputError(source, "file", NO_INDEXED_WORD)
        self.retriever.index(tokens, show_progress=False)

    def query_token_ids(self, queries: list[str]) -> list[list[int]]:
        """Each query's token ids in the index's vocabulary (tokens the documents lack are dropped)."""
        tokens = self._bm25s.tokenize(queries, stopwords="en", return_ids=False, show_progress=False)
        return [self.retriever.get_tokens_ids(query) for query in tokens]

    def scores(self, queries: list[str], columns: np.ndarray | None = None) -> np.ndarray:
        """float32 (Q, D) BM25 scores of each query against every document, or (Q, C) against the
        document indexes ``columns[q]`` (int (Q, C)) of each query only."""
        ids = self.query_token_ids(queries)
        width = self.size if columns is None else columns.shape[1]
        out = np.zeros((len(queries), width), dtype=np.float32)
        for q, token_ids in enumerate(ids):
            row = self.retriever.get_scores_from_ids(token_ids) if token_ids else np.zeros(self.size, np.float32)
            out[q] = row if columns is None else row[columns[q]]
        return out


def candidate_collection(texts: pl.DataFrame) -> list[str]:
    """The distinct candidate texts of ``texts`` (all queries' ``p`` then ``n``, first occurrence order):
    the collection BM25's statistics come from."""
    return pl.concat([texts["p"].explode(), texts["n"].explode()]).drop_nulls().unique(maintain_order=True).to_list()


def bm25_rank_samples(
    texts: pl.DataFrame, spec: Mapping, *, ranker_code: str, Nc: int, Np: int, Ks: list[int],
    source: str = "the texts table",
) -> tuple[pl.DataFrame, RankingReport]:
    """Ranked samples of design (Nc, Np) of every serving query of ``texts``, by BM25 (``spec``: the
    registry entry) over the collection ``candidate_collection(texts)``; the ranked layout and the
    skip report, as ``cosine_ranking.rank_samples``. ``source`` names the texts in the InputError
    of a collection without an indexed word (:class:`BM25Index`)."""
    settings = bm25_settings(ranker_code, spec)
    Ks = design_ks(Ks, Nc, Np)
    serving, report = select_serving(texts, Nc, Np)
    rank = np.zeros((0, Nc), dtype=np.int32)
    if serving.height:
        collection = candidate_collection(texts)
        index = BM25Index(collection, settings, source)
        lookup = pl.DataFrame({"text": collection, "column": np.arange(len(collection), dtype=np.int64)})
        candidates = serving.select(text=pl.concat_list(pl.col("p").list.head(Np), pl.col("n").list.head(Nc - Np)))
        exploded = candidates.explode("text").join(lookup, on="text", how="left", maintain_order="left")
        scores = index.scores(serving["q"].to_list(), exploded["column"].to_numpy().reshape(serving.height, Nc))
        rank = order_by_score(scores, tie_keys(exploded["text"].to_list()).reshape(serving.height, Nc))
    return ranked_table(serving, rank, ranker_code=ranker_code, Np=Np, Ks=Ks), report
