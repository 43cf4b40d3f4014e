"""One paced, retried, cached chat completion through ``litellm.acompletion``.

Each logical request is looked up in the response cache first (a hit costs no call); identical
requests in flight at the same time share one call. A miss goes through the pacer (concurrency,
requests/min, tokens/min) and a bounded retry loop that is the only retry layer: litellm and the
OpenAI client are called with ``num_retries=0`` and ``max_retries=0``, so one HTTP 429 costs
exactly one extra request. A response is in the cache (fsync'ed) before it is returned.
The API key is read from the environment variable the config names, at call time, and goes
nowhere but into the litellm call.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Hashable, Iterable, Sequence, TypeVar

import litellm
from tqdm import tqdm

from .accounting import CallStats
from .cache import ResponseCache, request_key
from .config import TOP_LOGPROBS, ModelConfig, PacingConfig
from .gguf import ensure_local_gguf
from .pacing import Pacer, estimate_tokens
from .retry import backoff_seconds, classify
from .server import LlamaServer, server_threads

litellm.suppress_debug_info = True
T = TypeVar("T")
ENGINE = "llama-server"  # part of a local model's cache key: the engine that computed a response
LOCAL_KEY_FIELDS = ("engine", "model_file", "model_bytes", "parallel")  # in the cache key, not sent


@dataclass(frozen=True)
class Completion:
    """Outcome of one logical request: ``status`` is ``ok`` or the failure reason."""

    key: str
    status: str
    content: str | None = None
    logprobs: list[dict] | None = None
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _logprobs_content(choice) -> list[dict] | None:
    raw = getattr(choice, "logprobs", None)
    if raw is None:
        return None
    data = raw.model_dump() if hasattr(raw, "model_dump") else dict(raw)
    entries = data.get("content") or []
    return [{"token": e["token"], "logprob": e["logprob"],
             "top_logprobs": [{"token": t["token"], "logprob": t["logprob"]}
                              for t in e.get("top_logprobs") or []]}
            for e in entries] or None


def _cached_prompt_tokens(usage) -> int:
    details = getattr(usage, "prompt_tokens_details", None)
    return int(getattr(details, "cached_tokens", 0) or 0)


def response_record(response, model: str) -> dict:
    """The cache record of a litellm ``ModelResponse``: content, logprobs (token, logprob,
    top_logprobs), usage, cost (None when litellm has no price), finish reason, response id."""
    choice = response.choices[0]
    usage = getattr(response, "usage", None)
    return {"model": model, "content": choice.message.content,
            "logprobs": _logprobs_content(choice),
            "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "cached_prompt_tokens": _cached_prompt_tokens(usage),
            "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
            "cost_usd": (getattr(response, "_hidden_params", None) or {}).get("response_cost"),
            "finish_reason": choice.finish_reason, "response_id": response.id}


class LLMClient:
    """Paced, retried, cached completions for one model config (see module docstring).

    A ``llamacpp/<alias>`` model is served by a ``llama-server`` that ``run_all`` starts for
    its duration (``llm/server.py``), with ``model.parallel`` slots and
    ``local_threads`` threads (the Snakemake job's threads, capped by the cores available);
    its output goes to ``server_log``."""

    def __init__(self, model: ModelConfig, pacing: PacingConfig, cache: ResponseCache,
                 stats: CallStats | None = None, jitter_seed: int | None = None,
                 local_threads: int | None = None, server_log: str | None = None):
        self.model = model
        self.pacing = pacing
        self.cache = cache
        self.stats = stats if stats is not None else CallStats()
        self._rng = random.Random(jitter_seed)
        self._pacer: Pacer | None = None
        self._in_flight: dict[str, asyncio.Task] = {}
        if model.api_key_env and model.api_key_env not in os.environ:
            raise ValueError(f"model {model.model}: environment variable {model.api_key_env} "
                             "(api_key_env) is not set")
        self._server = local_server(model, pacing, local_threads, server_log)
        self._local_base: str | None = None
        self.concurrency = self._server.slots if self._server else pacing.concurrency

    def sampling_params(self) -> dict:
        """Parameters that change the response (part of the cache key)."""
        params = {"temperature": self.model.temperature, "max_tokens": self.model.max_tokens,
                  "seed": self.model.seed}
        if self.model.logprobs:
            params |= {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
        if self._server:
            params |= {"engine": ENGINE, "model_file": Path(self.model.model_path).name,
                       "model_bytes": Path(self.model.model_path).stat().st_size,
                       "parallel": self._server.slots}
        return params

    def key(self, messages: list[dict]) -> str:
        """Cache key of ``messages`` under this model config."""
        return request_key(self.model.model, messages, self.sampling_params(), self.model.api_base)

    async def complete(self, messages: list[dict]) -> Completion:
        """The completion of ``messages``: from the cache, from an identical call in flight, or
        from a new paced call with retries."""
        self.stats.requests += 1
        key = self.key(messages)
        if key in self._in_flight:
            self.stats.cache_hits += 1
            return await asyncio.shield(self._in_flight[key])
        record = self.cache.get(key)
        if record is not None:
            self.stats.cache_hits += 1
            return Completion(key, "ok", record["content"], record.get("logprobs"), cached=True)
        task = asyncio.ensure_future(self._call(key, messages))
        self._in_flight[key] = task
        try:
            return await asyncio.shield(task)
        finally:
            self._in_flight.pop(key, None)

    def _litellm_kwargs(self, messages: list[dict]) -> dict:
        params = {k: v for k, v in self.sampling_params().items() if k not in LOCAL_KEY_FIELDS}
        kwargs = {"model": self.model.model, "messages": messages, **params,
                  "timeout": self.pacing.timeout_seconds, "num_retries": 0, "max_retries": 0}
        if params.get("seed") is None:
            kwargs.pop("seed")
        if self._server:
            return kwargs | {"model": f"openai/{self._server.alias}", "api_base": self._local_base,
                             "api_key": "local"}
        if self.model.api_base:
            kwargs["api_base"] = self.model.api_base
        if self.model.api_key_env:
            kwargs["api_key"] = os.environ.get(self.model.api_key_env)
        return kwargs

    async def _call(self, key: str, messages: list[dict]) -> Completion:
        estimated = estimate_tokens(messages, self.model.max_tokens)
        attempt = 0
        while True:
            async with self._pacer.slot(estimated) as pacer:
                self.stats.calls += 1
                try:
                    response = await litellm.acompletion(**self._litellm_kwargs(messages))
                except Exception as exc:  # classified below; never re-raised with the key in it
                    kind = classify(exc)
                else:
                    record = response_record(response, self.model.model)
                    self.cache.put(key, record)
                    self._count_usage(record)
                    pacer.correct_tokens(estimated, record["prompt_tokens"] + record["completion_tokens"])
                    return Completion(key, "ok", record["content"], record["logprobs"])
            if not kind.retryable or attempt == self.pacing.max_retries:
                reason = kind.reason if not kind.retryable else f"retries_exhausted:{kind.reason}"
                self.stats.failures_by_reason[reason] += 1
                return Completion(key, reason)
            attempt += 1
            self.stats.retries += 1
            self.stats.retries_by_reason[kind.reason] += 1
            delay = backoff_seconds(attempt, kind, self.pacing.backoff_base_seconds,
                                    self.pacing.backoff_max_seconds, self._rng)
            if kind.retry_after_s is not None:
                self._pacer.pause(delay)
            await asyncio.sleep(delay)

    def _count_usage(self, record: dict) -> None:
        self.stats.prompt_tokens += record["prompt_tokens"]
        self.stats.cached_prompt_tokens += record["cached_prompt_tokens"]
        self.stats.completion_tokens += record["completion_tokens"]
        self.stats.add_cost(record["cost_usd"])

    def run_all(self, tasks: Iterable[Awaitable[T]], desc: str,
                groups: Sequence[Hashable] | None = None) -> list[T]:
        """Run the awaitables (e.g. ``client.complete(...)`` or coroutines built on it) on one
        event loop under this client's pacing, with a tqdm progress bar on stderr; results in
        input order. With ``groups`` (one key per task), tasks of a group run one after another
        in input order (prompts that share a prefix, back to back) and at most
        ``concurrency`` groups run at once (``pacing.concurrency``, or a local model's server
        slots), in order of first appearance. A local model's
        server runs for the duration of the call."""
        tasks = list(tasks)
        keys = list(groups) if groups is not None else list(range(len(tasks)))
        if len(keys) != len(tasks):
            raise ValueError(f"{len(keys)} group keys for {len(tasks)} tasks")
        if self._server is None:
            return asyncio.run(self._gather(tasks, keys, desc))
        with self._server.running() as base:
            self._local_base = base
            try:
                return asyncio.run(self._gather(tasks, keys, desc))
            finally:
                self._local_base = None

    async def _gather(self, tasks: list[Awaitable[T]], keys: list[Hashable], desc: str) -> list[T]:
        self._pacer = Pacer(self.pacing)
        chains: dict[Hashable, list[int]] = {}
        for index, key in enumerate(keys):
            chains.setdefault(key, []).append(index)
        pending = iter(chains.values())
        results: list = [None] * len(tasks)
        with tqdm(total=len(tasks), desc=desc, file=sys.stderr, mininterval=1.0) as bar:
            async def worker() -> None:
                for chain in pending:
                    for index in chain:
                        results[index] = await tasks[index]
                        bar.update(1)

            await asyncio.gather(*(worker() for _ in range(min(self.concurrency, len(chains)))))
        return results


def local_server(model: ModelConfig, pacing: PacingConfig, threads: int | None,
                 log_path: str | None) -> LlamaServer | None:
    """The ``llama-server`` that serves a ``llamacpp/<alias>`` model (``model_path`` required):
    ``model.parallel`` slots (at most ``pacing.concurrency``) of ``model.n_ctx`` tokens each;
    None for any other model."""
    if not model.model.startswith("llamacpp/"):
        return None
    if not model.model_path:
        raise ValueError(f"model {model.model}: a llamacpp model needs model_path (a GGUF file)")
    ensure_local_gguf(model.model_path)
    return LlamaServer(model_path=str(model.model_path), alias=model.model.split("/", 1)[1],
                       slots=min(model.parallel, pacing.concurrency), ctx_per_slot=model.n_ctx,
                       threads=server_threads(threads), log_path=log_path)
