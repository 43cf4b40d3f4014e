"""Embedding: backends (texts -> vectors), the config registry, and the content-addressed store."""

from .backends import Embedder, Kind, l2_normalise
from .registry import BACKENDS, make_embedder
from .store import EmbeddingStore, StoreCounters, text_key

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
