"""A ``llamacpp/<alias>`` model of the config, served by a ``llama-server`` of the run: the
server's settings from the model config, and the fields that make the model's responses' cache
key name the engine and weights that computed them.
"""

from __future__ import annotations

from pathlib import Path

from retrieval_response.llm.config import LOCAL_PREFIX, ModelConfig, PacingConfig
from retrieval_response.llm.gguf import model_file
from retrieval_response.llm.server import LlamaServer, server_threads

ENGINE = "llama-server"
"""Part of a local model's cache key: the engine that computed a response."""
LOCAL_KEY_FIELDS = ("engine", "model_file", "model_bytes", "parallel", "repack_weights")
"""The fields of a local model's cache key that are not sent to the server (:func:`local_key_fields`)."""


def local_server(model: ModelConfig, pacing: PacingConfig, threads: int | None,
                 log_path: str | None) -> LlamaServer | None:
    """The ``llama-server`` that serves a ``llamacpp/<alias>`` model (``model_path`` required):
    ``model.parallel`` slots (at most ``pacing.concurrency``) of ``model.n_ctx`` tokens each;
    None for any other model."""
    if not model.model.startswith(LOCAL_PREFIX):
        return None
    if not model.model_path:
        raise ValueError(f"model {model.model}: a llamacpp model needs model_path (a GGUF file)")
    return LlamaServer(model_path=str(model_file(model.model_path)), alias=model.model.split("/", 1)[1],
                       slots=min(model.parallel, pacing.concurrency), ctx_per_slot=model.n_ctx,
                       threads=server_threads(threads), repack_weights=model.repack_weights, log_path=log_path)


def local_key_fields(model: ModelConfig, server: LlamaServer) -> dict:
    """The :data:`LOCAL_KEY_FIELDS` of ``model`` served by ``server``: the engine, the weights'
    file name and size, the server's slots and weight repacking."""
    return {"engine": ENGINE, "model_file": Path(model.model_path).name,
            "model_bytes": Path(model.model_path).stat().st_size,
            "parallel": server.slots, "repack_weights": server.repack_weights}
