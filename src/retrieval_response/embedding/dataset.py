"""One dataset's vectors for one embedder: the texts every design of the dataset ranks.

The embed rule encodes, through the content-addressed store, each query once and the first
max(Np) positives and first max(Nc - Np) negatives of each query once, whatever the number of
designs (a corpus-level dataset: each query and each corpus text once); the rank rules then read
these vectors instead of loading the model again.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from retrieval_response.embedding.backends import Embedder, Kind
from retrieval_response.embedding.store import EmbeddingStore


def texts_to_encode(texts: pl.DataFrame, designs: Sequence[tuple[int, int]]) -> dict[Kind, list[str]]:
    """Distinct query texts and distinct candidate texts needed by ``designs`` ((Nc, Np) pairs).

    Candidates of a query: its first max(Np) positives and first max(Nc - Np) negatives.
    """
    max_positives = max(np_ for _, np_ in designs)
    max_negatives = max(nc - np_ for nc, np_ in designs)
    passages = texts.select(pl.concat_list(pl.col("p").list.head(max_positives), pl.col("n").list.head(max_negatives)))
    return {
        "query": texts["q"].unique(maintain_order=True).to_list(),
        "passage": passages.to_series().explode().drop_nulls().unique(maintain_order=True).to_list(),
    }


def corpus_texts_to_encode(texts: pl.DataFrame, corpus: pl.DataFrame) -> dict[Kind, list[str]]:
    """Distinct query texts of ``texts`` and distinct document texts of ``corpus`` (``doc_id, text``):
    what a corpus-level dataset's retrieval compares."""
    return {"query": texts["q"].unique(maintain_order=True).to_list(),
            "passage": corpus["text"].unique(maintain_order=True).to_list()}


def embed_dataset(texts: pl.DataFrame, designs: Sequence[tuple[int, int]], embedder: Embedder,
                  store: EmbeddingStore) -> pl.DataFrame:
    """Table ``kind, text, vector`` of every text the designs rank, encoded through ``store``."""
    return embed_texts(texts_to_encode(texts, designs), embedder, store)


def embed_corpus_dataset(texts: pl.DataFrame, corpus: pl.DataFrame, embedder: Embedder,
                         store: EmbeddingStore) -> pl.DataFrame:
    """Table ``kind, text, vector`` of the queries and the whole corpus, encoded through ``store``
    (two datasets over one corpus encode it once)."""
    return embed_texts(corpus_texts_to_encode(texts, corpus), embedder, store)


def embed_texts(strings_by_kind: dict[Kind, list[str]], embedder: Embedder, store: EmbeddingStore) -> pl.DataFrame:
    """Table ``kind, text, vector`` of ``strings_by_kind``, encoded through ``store``."""
    parts = []
    for kind, strings in strings_by_kind.items():
        vectors = store.embed(embedder, strings, kind)
        parts.append(pl.DataFrame({"kind": [kind] * len(strings), "text": strings,
                                   "vector": pl.Series(vectors.reshape(len(strings), -1))}))
    return pl.concat(parts)


def vector_lookup(vectors: pl.DataFrame):
    """An ``encode(texts, kind)`` function that reads vectors from an ``embed_dataset`` table.

    A KeyError names a text that was not embedded (the designs changed without re-embedding).
    """
    matrices = {}
    for kind in ("query", "passage"):
        rows = vectors.filter(pl.col("kind") == kind)
        matrices[kind] = ({text: i for i, text in enumerate(rows["text"].to_list())},
                          np.asarray(rows["vector"].to_numpy(), dtype=np.float32).reshape(rows.height, -1))

    def encode(strings: list[str], kind: Kind) -> np.ndarray:
        index, matrix = matrices[kind]
        return matrix[[index[s] for s in strings]]

    return encode
