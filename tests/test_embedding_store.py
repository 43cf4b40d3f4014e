"""EmbeddingStore: dedup within and across calls and kinds, concurrent writers."""

from __future__ import annotations

import hashlib
import multiprocessing
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from retrieval_response.embedding.backends import Embedder
from retrieval_response.embedding.store import EmbeddingStore, text_key

pytestmark = pytest.mark.unit

DIM = 8


class HashEmbedder(Embedder):
    """Deterministic stand-in encoder: vector from sha256(prompt + text); records what it was asked."""

    def __init__(self, prompts=None, fingerprint="hash-v1"):
        super().__init__("H", prompts or {"query": "query: ", "passage": "passage: "}, fingerprint, 4)
        self.seen: list[str] = []

    def encode_raw(self, texts, kind):
        self.seen.extend(texts)
        rows = [np.frombuffer(hashlib.sha256((self.prompt(kind) + t).encode()).digest()[:DIM], np.uint8)
                for t in texts]
        return np.array(rows, dtype=np.float32).reshape(len(texts), DIM) + 1.0


def test_each_distinct_text_is_encoded_once_across_calls(tmp_path):
    embedder, store = HashEmbedder(), EmbeddingStore(tmp_path)
    first = store.embed(embedder, ["a", "b", "a", "c"], "passage")
    second = store.embed(embedder, ["c", "d", "a"], "passage")
    assert embedder.seen == ["a", "b", "c", "d"]
    assert store.counters.texts_requested == 7
    assert store.counters.texts_encoded == 4
    assert store.counters.encoder_calls == 2
    np.testing.assert_array_equal(first[0], first[2])
    np.testing.assert_array_equal(second[[0, 2]], first[[3, 0]])
    np.testing.assert_allclose(np.linalg.norm(second, axis=1), 1.0, rtol=1e-6)


def test_vectors_come_back_in_input_order_and_match_direct_encoding(tmp_path):
    embedder, store = HashEmbedder(), EmbeddingStore(tmp_path)
    store.embed(embedder, ["z", "y"], "passage")
    texts = ["y", "x", "z", "x"]
    np.testing.assert_array_equal(store.embed(embedder, texts, "passage"), HashEmbedder().encode(texts, "passage"))


def test_kinds_with_different_prompts_are_stored_separately(tmp_path):
    embedder, store = HashEmbedder(), EmbeddingStore(tmp_path)
    as_query = store.embed(embedder, ["same text"], "query")
    as_passage = store.embed(embedder, ["same text"], "passage")
    assert store.counters.texts_encoded == 2
    assert not np.allclose(as_query, as_passage)


def test_kinds_with_equal_prompts_share_vectors(tmp_path):
    embedder, store = HashEmbedder(prompts={"query": "", "passage": ""}), EmbeddingStore(tmp_path)
    store.embed(embedder, ["t1", "t2"], "query")
    store.embed(embedder, ["t2", "t1"], "passage")
    assert store.counters.texts_encoded == 2


def test_a_new_store_object_reads_what_another_wrote(tmp_path):
    writer = EmbeddingStore(tmp_path)
    written = writer.embed(HashEmbedder(), ["p", "q"], "passage")
    reader, embedder = EmbeddingStore(tmp_path), HashEmbedder()
    np.testing.assert_array_equal(reader.embed(embedder, ["q", "p"], "passage"), written[[1, 0]])
    assert embedder.seen == []


def test_fingerprints_do_not_share_vectors(tmp_path):
    store = EmbeddingStore(tmp_path)
    store.embed(HashEmbedder(fingerprint="one"), ["t"], "passage")
    other = HashEmbedder(fingerprint="two")
    store.embed(other, ["t"], "passage")
    assert other.seen == ["t"]


def _write_from_process(args):
    root, texts = args
    store = EmbeddingStore(root)
    return store.embed(HashEmbedder(), texts, "passage")


def test_concurrent_writers_from_several_processes(tmp_path):
    all_texts = [f"text {i}" for i in range(40)]
    jobs = [(str(tmp_path), all_texts[i : i + 25]) for i in range(0, 40, 5)]
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.map(_write_from_process, jobs)
    reference = HashEmbedder().encode(all_texts, "passage")
    for (_, texts), got in zip(jobs, results, strict=True):
        np.testing.assert_array_equal(got, reference[[all_texts.index(t) for t in texts]])
    reader, embedder = EmbeddingStore(tmp_path), HashEmbedder()
    np.testing.assert_array_equal(reader.embed(embedder, all_texts, "passage"), reference)
    assert embedder.seen == []
    assert not list(Path(tmp_path).rglob("*.tmp"))


def test_key_depends_on_fingerprint_prompt_and_text():
    keys = {text_key("f", "p", "t"), text_key("g", "p", "t"), text_key("f", "q", "t"), text_key("f", "p", "u")}
    assert len(keys) == 4 and all(len(k) == 32 for k in keys)
    assert text_key("f", "p", "t") == text_key("f", "p", "t")


def test_empty_request_encodes_nothing(tmp_path):
    store = EmbeddingStore(tmp_path)
    assert store.embed(HashEmbedder(), [], "passage").shape == (0, DIM)
    assert store.counters.encoder_calls == 0


def test_scattered_reads_across_row_groups_of_a_large_shard(tmp_path):
    texts = [f"doc {i}" for i in range(2500)]
    EmbeddingStore(tmp_path).embed(HashEmbedder(), texts, "passage")
    shards = list((tmp_path / "hash-v1").glob("shard-*.parquet"))
    assert len(shards) == 1 and pq.ParquetFile(shards[0]).num_row_groups == 3
    wanted = [texts[i] for i in (2499, 3, 1500, 1024, 1023, 3)]
    embedder = HashEmbedder()
    got = EmbeddingStore(tmp_path).embed(embedder, wanted, "passage")
    np.testing.assert_array_equal(got, HashEmbedder().encode(wanted, "passage"))
    assert embedder.seen == []
