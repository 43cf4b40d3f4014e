"""Content-addressed embedding store: every distinct (embedder, prompt, text) is encoded once.

Layout: ``root/<fingerprint>/shard-<host>-<pid>-<uuid>.parquet``, each shard an append-only
table ``key: Binary`` (sha256 of fingerprint, prompt and text, 32 bytes) and
``vector: Array(Float32, dim)`` in row groups of 1024 rows (a read loads only the row groups
holding the wanted keys), written atomically (temporary file, then rename). Writers
in separate processes or on separate hosts never touch the same file, so a shared
filesystem needs no locks. A key may appear in several shards (two writers raced); any copy
serves.
"""

from __future__ import annotations

import hashlib
import os
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from retrieval_response.embedding.backends import Embedder, Kind
from retrieval_response.infra.atomic import atomic_path

SHARD_GLOB = "shard-*.parquet"
ROW_GROUP_ROWS = 1024


def write_shard(table: pl.DataFrame, path: Path) -> None:
    """Write a (key, vector) shard atomically as zstd Parquet in row groups of ``ROW_GROUP_ROWS``."""
    with atomic_path(path) as tmp:
        table.write_parquet(tmp, compression="zstd", row_group_size=ROW_GROUP_ROWS)


def read_shard_rows(path: Path, rows: np.ndarray) -> np.ndarray:
    """Vectors at ``rows`` of one shard, (len(rows), dim) float32, reading only the row groups holding them."""
    import pyarrow.parquet as pq  # here, not at the top: a job whose texts are all new never reads a shard

    shard = pq.ParquetFile(path)
    sizes = np.array([shard.metadata.row_group(g).num_rows for g in range(shard.num_row_groups)], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    group_of_row = np.searchsorted(starts, rows, side="right") - 1
    groups = np.unique(group_of_row)
    column = shard.read_row_groups(groups.tolist(), columns=["vector"]).column("vector").combine_chunks()
    flat = column.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    vectors = flat.reshape(len(column), -1)
    offset_of_group = np.concatenate([[0], np.cumsum(sizes[groups])[:-1]])
    return vectors[offset_of_group[np.searchsorted(groups, group_of_row)] + rows - starts[group_of_row]]


def text_key(fingerprint: str, prompt: str, text: str) -> bytes:
    """sha256(fingerprint NUL prompt NUL text), 32 raw bytes."""
    return hashlib.sha256(f"{fingerprint}\0{prompt}\0{text}".encode()).digest()


def new_shard_name() -> str:
    """``shard-<host>-<pid>-<uuid4 hex>.parquet``: unique across processes and hosts."""
    host = socket.gethostname().replace("-", "_").replace("/", "_") or "host"
    return f"shard-{host}-{os.getpid()}-{uuid.uuid4().hex}.parquet"


@dataclass
class StoreCounters:
    """texts_requested: texts asked for; texts_encoded: texts sent to an encoder; encoder_calls: encode() calls."""

    texts_requested: int = 0
    texts_encoded: int = 0
    encoder_calls: int = 0


class EmbeddingStore:
    """Vectors on disk under ``root``, keyed by content; ``embed`` encodes only what is missing."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.counters = StoreCounters()
        self._index: dict[str, pl.DataFrame] = {}
        self._indexed_shards: dict[str, set[str]] = {}

    def _folder(self, fingerprint: str) -> Path:
        return self.root / fingerprint

    def _refresh(self, fingerprint: str) -> pl.DataFrame:
        """Index (key, shard, row) of every shard of ``fingerprint``; reads only key columns of new shards."""
        folder = self._folder(fingerprint)
        on_disk = {p.name for p in folder.glob(SHARD_GLOB)} if folder.is_dir() else set()
        known = self._indexed_shards.get(fingerprint, set())
        empty = pl.DataFrame(schema={"key": pl.Binary, "shard": pl.String, "row": pl.UInt32})
        index = self._index.get(fingerprint, empty)
        if known - on_disk:
            index = index.filter(pl.col("shard").is_in(sorted(on_disk)))
        fresh = [
            pl.read_parquet(folder / name, columns=["key"]).with_row_index("row").with_columns(shard=pl.lit(name))
            for name in sorted(on_disk - known)
        ]
        if fresh:
            index = pl.concat([index, *[f.select("key", "shard", "row") for f in fresh]])
        index = index.unique("key", keep="first", maintain_order=True)
        self._index[fingerprint], self._indexed_shards[fingerprint] = index, on_disk
        return index

    def _read_vectors(self, fingerprint: str, wanted: pl.DataFrame) -> np.ndarray:
        """Vectors for ``wanted`` (columns shard, row, slot) placed at their ``slot``; (0, 0) when empty."""
        out = np.empty((0, 0), dtype=np.float32)
        for (shard,), rows in wanted.group_by("shard"):
            vectors = read_shard_rows(self._folder(fingerprint) / shard, rows["row"].to_numpy())
            if not out.size:
                out = np.empty((wanted.height, vectors.shape[1]), dtype=np.float32)
            out[rows["slot"].to_numpy()] = vectors
        return out

    def lookup(self, fingerprint: str, keys: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """(found mask, vectors of the found keys in order)."""
        asked = pl.DataFrame({"key": keys}, schema={"key": pl.Binary})
        hits = asked.join(self._refresh(fingerprint), on="key", how="left", maintain_order="left")
        wanted = hits.filter(pl.col("shard").is_not_null()).with_row_index("slot")
        return hits["shard"].is_not_null().to_numpy(), self._read_vectors(fingerprint, wanted)

    def put(self, fingerprint: str, keys: list[bytes], vectors: np.ndarray) -> Path:
        """Append one new shard holding ``keys`` -> ``vectors`` (float32), atomically."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        table = pl.DataFrame({"key": pl.Series(keys, dtype=pl.Binary), "vector": pl.Series(vectors)})
        path = self._folder(fingerprint) / new_shard_name()
        write_shard(table, path)
        return path

    def embed(self, embedder: Embedder, texts: list[str], kind: Kind) -> np.ndarray:
        """Vectors of ``texts`` (input order) as ``embedder`` encodes them as ``kind``.

        Texts already stored for (fingerprint, prompt(kind), text) are read back; the other
        distinct texts are encoded in one ``embedder.encode`` call and stored as one shard.
        """
        texts = list(texts)
        self.counters.texts_requested += len(texts)
        if not texts:
            return embedder.encode([], kind)
        prompt = embedder.prompt(kind)
        keys = [text_key(embedder.fingerprint, prompt, t) for t in texts]
        slot_of_key: dict[bytes, int] = {}
        unique_texts: list[str] = []
        for key, text in zip(keys, texts, strict=True):
            if key not in slot_of_key:
                slot_of_key[key] = len(unique_texts)
                unique_texts.append(text)
        unique_keys = list(slot_of_key)
        found, stored = self.lookup(embedder.fingerprint, unique_keys)
        missing = np.flatnonzero(~found)
        if missing.size:
            encoded = embedder.encode([unique_texts[i] for i in missing], kind)
            self.counters.encoder_calls += 1
            self.counters.texts_encoded += int(missing.size)
            self.put(embedder.fingerprint, [unique_keys[i] for i in missing], encoded)
        dim = (encoded if missing.size else stored).shape[1]
        unique_vectors = np.empty((len(slot_of_key), dim), dtype=np.float32)
        if stored.size:
            unique_vectors[found] = stored
        if missing.size:
            unique_vectors[missing] = encoded
        return unique_vectors[np.fromiter((slot_of_key[k] for k in keys), dtype=np.int64, count=len(keys))]
