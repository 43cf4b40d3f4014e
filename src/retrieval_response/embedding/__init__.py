"""Embedding: backends (texts -> vectors), the config registry, and the content-addressed store."""

from retrieval_response.embedding.backends import Embedder, Kind, l2_normalise
from retrieval_response.embedding.registry import BACKENDS, make_embedder
from retrieval_response.embedding.store import EmbeddingStore, StoreCounters, text_key

__all__ = [
    "BACKENDS",
    "Embedder",
    "EmbeddingStore",
    "Kind",
    "StoreCounters",
    "l2_normalise",
    "make_embedder",
    "text_key",
]
