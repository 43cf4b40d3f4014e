"""Pacing inside one job: calls queue (never fail) under a concurrency cap, a requests-per-minute
bucket and a tokens-per-minute bucket, and pause together after a provider's Retry-After."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from retrieval_response.llm.config import PacingConfig


class TokenBucket:
    """Async token bucket: ``rate_per_s`` tokens flow in, up to ``capacity``.

    ``acquire(n)`` waits (FIFO) until the level reaches min(n, capacity), then takes n; the level
    may go negative for a request larger than the capacity, so nothing is ever rejected.
    ``adjust(delta)`` takes (or with a negative delta gives back) tokens after the fact, e.g. to
    correct an estimated token count with the provider's usage.
    """

    def __init__(self, rate_per_s: float, capacity: float):
        self.rate_per_s = rate_per_s
        self.capacity = capacity
        self._level = capacity
        self._stamp = time.monotonic()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self._level = min(self.capacity, self._level + (now - self._stamp) * self.rate_per_s)
        self._stamp = now

    async def acquire(self, amount: float) -> None:
        async with self._lock:
            self._refill()
            need = min(amount, self.capacity)
            while self._level < need:
                await asyncio.sleep((need - self._level) / self.rate_per_s)
                self._refill()
            self._level -= amount

    def adjust(self, delta: float) -> None:
        self._refill()
        self._level = min(self.capacity, self._level - delta)


class Pacer:
    """Concurrency semaphore + optional request and token buckets + a shared pause.

    Request bucket: rate r = rpm/60 per second, capacity max(1, r/10): requests are evenly spaced,
    and time lost to event-loop lag is made up with bursts of at most a tenth of a second's worth,
    so any one-second window holds at most 1.1 r (+1) requests. Token bucket: rate tpm/60 per
    second, capacity one second of tokens.
    """

    def __init__(self, pacing: PacingConfig):
        self._slots = asyncio.Semaphore(pacing.concurrency)
        rpm, tpm = pacing.requests_per_minute, pacing.tokens_per_minute
        self._requests = TokenBucket(rpm / 60.0, max(1.0, rpm / 600.0)) if rpm else None
        self._tokens = TokenBucket(tpm / 60.0, tpm / 60.0) if tpm else None
        self._resume_at = 0.0

    def pause(self, seconds: float) -> None:
        """Hold every call that has not started yet for ``seconds`` (e.g. a Retry-After)."""
        self._resume_at = max(self._resume_at, time.monotonic() + seconds)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[Pacer]:
        """Hold one of the ``concurrency`` slots; ``admit`` before calling inside it."""
        async with self._slots:
            yield self

    async def admit(self, estimated_tokens: int) -> None:
        """Wait for the shared pause, one request and the estimated tokens."""
        while (wait := self._resume_at - time.monotonic()) > 0:
            await asyncio.sleep(wait)
        if self._requests:
            await self._requests.acquire(1)
        if self._tokens:
            await self._tokens.acquire(estimated_tokens)

    def correct_tokens(self, estimated: int, actual: int) -> None:
        """Charge the token bucket the difference between the actual and the estimated usage."""
        if self._tokens:
            self._tokens.adjust(actual - estimated)


def estimate_tokens(messages: list[dict], max_tokens: int) -> int:
    """Token estimate before a call: characters/4 of the message contents plus ``max_tokens``."""
    return sum(len(str(m.get("content", ""))) for m in messages) // 4 + max_tokens
