"""Which litellm errors are worth retrying, and how long to wait before the next attempt.

Retryable: HTTP 429 (``rate_limited``), 5xx including malformed response bodies
(``server_error``), timeouts (``timeout``) and connection failures (``connection_error``).
Anything else (400, 401, 404, ...) fails at once as ``api_error:<ExceptionClass>``.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass

import litellm
import openai


@dataclass(frozen=True)
class ErrorKind:
    """A classified failure: whether to retry, a short reason, and the server's Retry-After."""

    retryable: bool
    reason: str
    retry_after_s: float | None = None


def _header(exc: BaseException, name: str) -> str | None:
    for headers in (getattr(exc, "litellm_response_headers", None),
                    getattr(getattr(exc, "response", None), "headers", None)):
        if headers is not None and headers.get(name) is not None:
            return headers.get(name)
    return None


def retry_after_seconds(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, else ``Retry-After`` as seconds
    or as an HTTP date; None when absent or unreadable."""
    millis = _header(exc, "retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = _header(exc, "retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def classify(exc: BaseException) -> ErrorKind:
    """Classify an exception raised by ``litellm.acompletion`` (see module docstring)."""
    if isinstance(exc, (litellm.Timeout, openai.APITimeoutError, TimeoutError)):
        return ErrorKind(True, "timeout")
    if isinstance(exc, (litellm.RateLimitError, openai.RateLimitError)):
        return ErrorKind(True, "rate_limited", retry_after_seconds(exc))
    if isinstance(exc, (litellm.APIConnectionError, openai.APIConnectionError, ConnectionError)):
        return ErrorKind(True, "connection_error")
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status >= 500:
        return ErrorKind(True, "server_error", retry_after_seconds(exc))
    return ErrorKind(False, f"api_error:{type(exc).__name__}")


def backoff_seconds(attempt: int, kind: ErrorKind, base_s: float, max_s: float,
                    rng: random.Random) -> float:
    """Wait before retry number ``attempt`` (1-based): the server's Retry-After plus up to 10%
    jitter when given, else equal-jitter exponential backoff d/2 + U(0, d/2) with
    d = min(max_s, base_s * 2**(attempt-1))."""
    if kind.retry_after_s is not None:
        return kind.retry_after_s * (1.0 + 0.1 * rng.random())
    d = min(max_s, base_s * 2 ** (attempt - 1))
    return d / 2 + rng.uniform(0, d / 2)
