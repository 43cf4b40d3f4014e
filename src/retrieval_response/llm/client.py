"""One paced, retried, cached chat completion through ``litellm.acompletion``.

Each logical request is looked up in the response cache first (a hit costs no call); identical
requests in flight at the same time share one call. A miss goes through the pacer (concurrency,
requests/min, tokens/min) and a bounded retry loop that is the only retry layer: litellm and the
OpenAI client are called with ``num_retries=0`` and ``max_retries=0``, so one HTTP 429 costs
exactly one extra request. A response is in the cache (fsync'ed) before it is returned.

Every call is appended to the job's ``CallJournal`` (when given) as soon as it returns, so calls of
a killed job are still accounted for; a call that raised carries the provider's (or litellm's)
message, one line with secrets removed (``config.provider_error_text``), which the client also
keeps by failure reason (``failure_details``) for the job's failure line. A response without a
usable answer (no choices, no message, null content, a body that is not JSON) is a failure of its
request (``bad_response:<what>``, see ``retry``), never an exception, and is not cached.
Processes sharing a cache claim a key before calling (see ``claims``): a second process waits for
the first one's response instead of paying for it again.

SIGTERM (a scheduler or Snakemake stopping the job) while ``run_all`` runs starts no further
attempt, lets the attempts already sent finish for up to :data:`TERM_GRACE_S` seconds, each
answer cached and journaled as usual, then ends the process by SIGTERM (exit status 143, nothing
written): an answer the provider sent before or during that grace is not paid for again by the
rerun. SIGKILL leaves no such grace: the calls in flight then are asked again.

The API key is read from the environment variable the config names, at call time, and goes
nowhere but into the litellm call; credentials in ``api_base`` go nowhere but into its
``Authorization`` header, and its query string (``?token=...``) nowhere but into the query of each
request (:mod:`.endpoint`). A response is read into its cache record by :mod:`.responses`; a
``llamacpp/<alias>`` model is served by the run's llama-server (:mod:`.local_model`).
"""

from __future__ import annotations

import asyncio
import functools
import os
import random
import signal
import sys
from collections.abc import Awaitable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from tqdm import tqdm

from retrieval_response.infra.logs import redact_library_loggers
from retrieval_response.llm.accounting import CallJournal, CallStats
from retrieval_response.llm.cache import ResponseCache, request_key
from retrieval_response.llm.claims import Claim, KeyClaims
from retrieval_response.llm.config import TOP_LOGPROBS, ModelConfig, PacingConfig, provider_error_text
from retrieval_response.llm.endpoint import endpoint
from retrieval_response.llm.local_model import LOCAL_KEY_FIELDS, local_key_fields, local_server
from retrieval_response.llm.pacing import Pacer, estimate_tokens
from retrieval_response.llm.responses import response_problem, response_record
from retrieval_response.llm.retry import (
    PROMPT_EXCEEDS_CONTEXT,
    ErrorKind,
    backoff_seconds,
    bad_response,
    classify,
    litellm_module,
)
from retrieval_response.llm.server import bypass_proxy_for_loopback
from retrieval_response.llm.shared_server import serving

if TYPE_CHECKING:
    import openai

redact_library_loggers()
T = TypeVar("T")
CLAIM_POLL_S = (0.05, 2.0)  # first and longest wait between looks for a claimed key's response
TERM_GRACE_S = 10.0
"""After SIGTERM, how long the attempts already sent may take to be answered and cached before the process ends."""


class Terminated(Exception):
    """``run_all`` stopped by SIGTERM once its attempts in flight ended (module docstring)."""


def end_by_sigterm() -> None:
    """End this process as SIGTERM's default action does (status 143 to a shell, -15 to a parent)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
    raise SystemExit(128 + signal.SIGTERM)  # not reached: the signal ends the process first


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


class LLMClient:
    """Paced, retried, cached completions for one model config (see module docstring).

    A ``llamacpp/<alias>`` model is served by a ``llama-server`` (``llm/server.py``): the
    Snakemake run's shared one (``llm/shared_server.py``), or outside Snakemake one that
    ``run_all`` starts for its duration, with ``model.parallel`` slots and
    ``local_threads`` threads (the Snakemake job's threads, capped by the cores available);
    its output goes to ``server_log``. Claims on cache keys go stale after twice the
    per-attempt timeout."""

    def __init__(self, model: ModelConfig, pacing: PacingConfig, cache: ResponseCache,
                 stats: CallStats | None = None, jitter_seed: int | None = None,
                 local_threads: int | None = None, server_log: str | None = None,
                 journal: CallJournal | None = None):
        self.model = model
        self.pacing = pacing
        self.cache = cache
        self.stats = stats if stats is not None else CallStats()
        self._rng = random.Random(jitter_seed)
        self._pacer: Pacer | None = None
        self._query_client: openai.AsyncOpenAI | None = None
        self._in_flight: dict[str, asyncio.Task] = {}
        self._attempts = 0  # attempts sent and not yet answered, cached and journaled
        self._idle: asyncio.Event | None = None  # set while no attempt is in flight
        self._terminating: asyncio.Task | None = None
        self.journal = journal
        self.failure_details: dict[str, str] = {}
        self.claims = KeyClaims(cache.root / "claims", 2 * pacing.timeout_seconds)
        if model.api_key_env and model.api_key_env not in os.environ:
            raise ValueError(f"model {model.model}: environment variable {model.api_key_env} "
                             "(api_key_env) is not set")
        self._server = local_server(model, pacing, local_threads, server_log)
        if self._server is not None:
            bypass_proxy_for_loopback()
        self._local_base: str | None = None
        self._serving = None
        self.concurrency = self._server.slots if self._server else pacing.concurrency

    @functools.cached_property
    def context_tokens(self) -> int | None:
        """The model's input context in tokens: a local model's ``n_ctx``, else what litellm knows
        (None for a model it does not know); looked up on the first request that misses the cache."""
        return self.model.n_ctx if self._server else litellm_context_tokens(self.model.model)

    def sampling_params(self) -> dict:
        """Parameters that change the response (part of the cache key)."""
        params = {"temperature": self.model.temperature, "max_tokens": self.model.max_tokens,
                  "seed": self.model.seed}
        if self.model.logprobs:
            params |= {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
        if self._server:
            params |= local_key_fields(self.model, self._server)
        return params

    def key(self, messages: list[dict]) -> str:
        """Cache key of ``messages`` under this model config."""
        return request_key(self.model.model, messages, self.sampling_params(), self.model.api_base)

    async def complete(self, messages: list[dict]) -> Completion:
        """The completion of ``messages``: from the cache, from an identical call in flight, or
        from a new paced call with retries. A prompt surely longer than the model's context (a
        local model's ``n_ctx``, else what litellm knows) ends as ``prompt_exceeds_context``
        without a call; nothing is cut."""
        self.stats.requests += 1
        key = self.key(messages)
        if key in self._in_flight:
            self.stats.cache_hits += 1
            return await asyncio.shield(self._in_flight[key])
        record = self.cache.get(key)
        if record is not None:
            self.stats.cache_hits += 1
            return Completion(key, "ok", record["content"], record.get("logprobs"), cached=True)
        if self.context_tokens is not None and prompt_tokens_at_least(messages) + self.model.max_tokens > self.context_tokens:
            self.stats.failures_by_reason[PROMPT_EXCEEDS_CONTEXT] += 1
            return Completion(key, PROMPT_EXCEEDS_CONTEXT)
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
        if self.model.api_key_env:
            kwargs["api_key"] = os.environ.get(self.model.api_key_env)
        if self.model.api_base:
            target = endpoint(self.model.api_base)
            kwargs["api_base"] = target.base
            if target.headers:
                kwargs["extra_headers"] = target.headers
            if target.query:
                kwargs["client"] = self._query_client
        return kwargs

    def _openai_client(self) -> openai.AsyncOpenAI | None:
        """The OpenAI client of an ``api_base`` with a query string, for one event loop: it sends
        the query with every request (``default_query``); None for any other model."""
        if self._server or not self.model.api_base or not (target := endpoint(self.model.api_base)).query:
            return None
        key = os.environ.get(self.model.api_key_env) if self.model.api_key_env else None
        import openai

        return openai.AsyncOpenAI(base_url=target.base, api_key=key or "none", default_query=target.query,
                                  default_headers=target.headers, max_retries=0,
                                  timeout=self.pacing.timeout_seconds)

    async def _call(self, key: str, messages: list[dict]) -> Completion:
        """Attempts under the pacer, with retries. The first attempt claims ``key`` inside its
        concurrency slot (so a process holds claims only on keys it is calling, and processes
        sharing a cache split the work); while another live process holds the claim, wait outside
        the pacer for its response in the cache."""
        estimated = estimate_tokens(messages, self.model.max_tokens)
        attempt = 0
        try:
            while True:
                async with self._pacer.slot() as pacer:
                    claimed = self.claims.holds(key) or self._claim(key)
                    if claimed:
                        if attempt == 0 and (record := self._answered_meanwhile(key)) is not None:
                            return self._cached(key, record)
                        await pacer.admit(estimated)
                        if self._terminating is not None:  # SIGTERM: no new attempt; cancelled with the run
                            await asyncio.Future()
                        self._attempts += 1
                        self._idle.clear()
                        try:
                            record, kind = await self._attempt(messages)
                            if record is not None:
                                pacer.correct_tokens(estimated, record["prompt_tokens"] + record["completion_tokens"])
                            if kind is None:
                                self.cache.put(key, record)
                                return Completion(key, "ok", record["content"], record["logprobs"])
                        finally:
                            self._attempts -= 1
                            if self._attempts == 0:
                                self._idle.set()
                if not claimed:
                    if (record := await self._wait_for_holder(key)) is not None:
                        return self._cached(key, record)
                    continue
                if not kind.retryable or attempt == self.pacing.max_retries:
                    reason = kind.reason if not kind.retryable else f"retries_exhausted:{kind.reason}"
                    self.stats.failures_by_reason[reason] += 1
                    return Completion(key, reason)
                attempt += 1
                self.stats.retries += 1
                self.stats.retries_by_reason[kind.reason] += 1
                delay = self._backoff(attempt, kind)
                if kind.retry_after_s is not None:
                    self._pacer.pause(delay)
                await asyncio.sleep(delay)
        finally:
            self.claims.release(key)

    def _claim(self, key: str) -> bool:
        claim = self.claims.claim(key)
        if claim is Claim.TAKEN_OVER:
            self.stats.claims_taken_over += 1
        return claim is not Claim.HELD_ELSEWHERE

    def _answered_meanwhile(self, key: str) -> dict | None:
        """The record of ``key`` if another process cached it before this one claimed it (the
        previous holder answers, then releases)."""
        self.cache.refresh()
        return self.cache.get(key)

    def _cached(self, key: str, record: dict) -> Completion:
        self.stats.cache_hits += 1
        return Completion(key, "ok", record["content"], record.get("logprobs"), cached=True)

    async def _wait_for_holder(self, key: str) -> dict | None:
        """Poll the cache, with backoff, while another live process holds the claim on ``key``:
        its record, or None once the claim is gone or stale without one."""
        self.stats.claim_waits += 1
        poll = CLAIM_POLL_S[0]
        while True:
            await asyncio.sleep(poll)
            poll = min(2 * poll, CLAIM_POLL_S[1])
            if (record := self.cache.get(key)) is not None:
                return record
            if not self.claims.live(key):
                return None

    async def _attempt(self, messages: list[dict]) -> tuple[dict | None, ErrorKind | None]:
        """One provider call, counted and journaled: (the record of the response, or None when
        none came back; the failure, or None when the response has an answer). The whole attempt
        (connect, headers and body) is bounded by ``pacing.timeout_seconds``: a server trickling
        its body byte by byte ends as ``timeout`` then, not after every read has waited."""
        self.stats.calls += 1
        try:
            response = await asyncio.wait_for(litellm_module().acompletion(**self._litellm_kwargs(messages)),
                                              self.pacing.timeout_seconds)
        except Exception as exc:  # classified (TimeoutError: ``timeout``); never re-raised with the key in it
            kind = classify(exc)
            key = os.environ.get(self.model.api_key_env) if self.model.api_key_env else None
            detail = provider_error_text(exc, (key,))
            self.failure_details[kind.reason] = detail
            self._journal(kind.reason, None, detail)
            return None, kind
        record = response_record(response, self.model.model)
        problem = response_problem(response)
        kind = None if problem is None else bad_response(problem)
        self._journal("ok" if kind is None else kind.reason, record)
        self.stats.usage_invalid += record["usage_invalid"]
        self.stats.prompt_tokens += record["prompt_tokens"]
        self.stats.cached_prompt_tokens += record["cached_prompt_tokens"]
        self.stats.completion_tokens += record["completion_tokens"]
        self.stats.add_cost(record["cost_usd"])
        return record, kind

    def _journal(self, outcome: str, record: dict | None, detail: str | None = None) -> None:
        if self.journal is not None:
            usage = (None, None, None, False) if record is None else (
                record["prompt_tokens"], record["completion_tokens"], record["cost_usd"], record["usage_invalid"])
            self.journal.record(self.model.model, outcome, *usage, detail=detail)

    def _backoff(self, attempt: int, kind: ErrorKind) -> float:
        """The wait before retry ``attempt``, counting unreadable and capped Retry-After."""
        if kind.retry_after_invalid:
            self.stats.retry_after_invalid += 1
        if kind.retry_after_s is not None and kind.retry_after_s > self.pacing.backoff_max_seconds:
            self.stats.retry_after_capped += 1
        return backoff_seconds(attempt, kind, self.pacing.backoff_base_seconds,
                               self.pacing.backoff_max_seconds, self._rng)

    def run_all(self, tasks: Iterable[Awaitable[T]], desc: str,
                groups: Sequence[Hashable] | None = None) -> list[T]:
        """Run the awaitables (e.g. ``client.complete(...)`` or coroutines built on it) on one
        event loop under this client's pacing, with a tqdm progress bar on stderr; results in
        input order. With ``groups`` (one key per task), tasks of a group run one after another
        in input order (prompts that share a prefix, back to back) and at most
        ``concurrency`` groups run at once (``pacing.concurrency``, or a local model's server
        slots), in order of first appearance. A local model's
        server is the one of ``with client:`` if the call is inside such a block, else the
        Snakemake run's shared one, else (outside Snakemake) one that runs for the call."""
        tasks = list(tasks)
        keys = list(groups) if groups is not None else list(range(len(tasks)))
        if len(keys) != len(tasks):
            raise ValueError(f"{len(keys)} group keys for {len(tasks)} tasks")
        try:
            if self._server is None or self._local_base is not None:
                return asyncio.run(self._gather(tasks, keys, desc))
            with self:
                return asyncio.run(self._gather(tasks, keys, desc))
        except Terminated:
            end_by_sigterm()

    def __enter__(self) -> LLMClient:
        """Keep a local model's server (see ``run_all``) for the whole ``with`` block, across
        ``run_all`` calls; nothing to do for other models."""
        if self._serving is not None:
            raise RuntimeError("with client: blocks do not nest")
        if self._server is not None:
            self._serving = serving(self._server)
            self._local_base = self._serving.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._serving is not None:
            serving_block, self._serving, self._local_base = self._serving, None, None
            serving_block.__exit__(*exc)

    async def _gather(self, tasks: list[Awaitable[T]], keys: list[Hashable], desc: str) -> list[T]:
        self._pacer = Pacer(self.pacing)
        self._query_client = self._openai_client()
        heartbeat = asyncio.ensure_future(self._refresh_claims())
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

            gathered = asyncio.gather(*(worker() for _ in range(min(self.concurrency, len(chains)))))
            loop = asyncio.get_running_loop()
            self._idle, self._terminating = asyncio.Event(), None
            self._idle.set()
            previous = _handle_sigterm(loop, lambda: self._terminate(gathered))
            try:
                await gathered
            except asyncio.CancelledError:
                if self._terminating is None:
                    raise
                raise Terminated() from None
            finally:
                if previous is not None:
                    loop.remove_signal_handler(signal.SIGTERM)
                    signal.signal(signal.SIGTERM, previous)
                heartbeat.cancel()
                if self._query_client is not None:
                    await self._query_client.close()
        return results

    def _terminate(self, gathered: asyncio.Future) -> None:
        """On SIGTERM: once the attempts in flight have ended (at most :data:`TERM_GRACE_S` seconds),
        cancel the run; attempts not yet sent wait in ``_call`` until then."""
        async def drain() -> None:
            try:
                await asyncio.wait_for(self._idle.wait(), TERM_GRACE_S)
            except TimeoutError:
                pass
            gathered.cancel()

        if self._terminating is None:
            self._terminating = asyncio.ensure_future(drain())

    async def _refresh_claims(self) -> None:
        while True:
            await asyncio.sleep(self.claims.stale_s / 4)
            self.claims.refresh_held()


def _handle_sigterm(loop: asyncio.AbstractEventLoop, callback):
    """Call ``callback`` on the event loop at SIGTERM: the handler it replaces (to restore after the
    loop), or None when nothing is installed (outside the main thread)."""
    previous = signal.getsignal(signal.SIGTERM)
    try:
        loop.add_signal_handler(signal.SIGTERM, callback)
    except (ValueError, RuntimeError, NotImplementedError):
        return None
    return signal.SIG_DFL if previous is None else previous


def prompt_tokens_at_least(messages: list[dict]) -> int:
    """A cautious estimate of the tokens of ``messages``: UTF-8 bytes / 8 (a token of a BPE
    vocabulary spans about 4 bytes of English text), so a prompt refused before the call is far
    too long; a server refuses the borderline ones (``prompt_exceeds_context`` as well)."""
    return sum(len(str(m.get("content", "")).encode("utf-8")) for m in messages) // 8


def litellm_context_tokens(model: str) -> int | None:
    """The input context litellm knows for ``model`` (``max_input_tokens``), else None."""
    try:
        return litellm_module().get_model_info(model).get("max_input_tokens")
    except Exception:  # litellm raises for models it does not know
        return None
