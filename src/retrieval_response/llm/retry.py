"""Which failed calls are worth retrying, and how long to wait before the next attempt.

A failure is classified from the exception ``litellm.acompletion`` raised (its whole cause chain)
or from a response that came back without a usable answer:

- retryable: HTTP 429 (``rate_limited``), 5xx and HTTP 200 error objects carrying a 5xx code
  (``server_error``), timeouts (``timeout``), connection failures and resets (``connection_error``),
  and bodies that could not be read (``bad_response:<what>``: ``not_json`` for a body that is not
  JSON, truncated JSON or an HTML page; ``invalid_object`` for JSON that is no chat completion,
  e.g. a choice without message; ``no_choices`` for an empty ``choices`` list). A damaged body is
  usually a proxy or server hiccup, so it is retried like a 5xx, within the same bound.
- not retryable: ``prompt_exceeds_context``: an HTTP 4xx reply (the status of the reply itself,
  not of litellm's wrapper) that litellm maps to ``ContextWindowExceededError`` or whose error
  object carries a context code (``CONTEXT_ERROR_CODES`` as ``code`` or ``type``: OpenAI's
  ``context_length_exceeded``, llama-server's ``exceed_context_size_error``). Words in a message
  decide nothing: a gateway's 504 "context deadline exceeded" is a ``timeout``, a 5xx quoting a
  context phrase a ``server_error``, a 400 without a context code an ``api_error``;
  ``bad_response:null_content`` (a well-formed answer whose content is null: a
  refusal, a content filter, a reasoning model that used every token; asking again at the same
  seed would pay for the same), and any other error (400, 401, 404, ...) as
  ``api_error:<ExceptionClass>``.

Retry-After (``retry-after-ms``, else ``Retry-After`` as delta-seconds or an HTTP date) is the
server's wait; a date in the past means 0. A value that is neither a non-negative finite number
nor an HTTP date (``soon``, ``-5``, ``nan``) is ignored: the exponential backoff applies and the
caller counts it (``retry_after_invalid``). Waits are capped at ``backoff_max_seconds``; the
caller counts the capped ones (``retry_after_capped``).
"""

from __future__ import annotations

import email.utils
import functools
import json
import math
import os
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType

import httpx

PROMPT_EXCEEDS_CONTEXT = "prompt_exceeds_context"
CONTEXT_ERROR_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_NOT_JSON_MARKER = "Empty or invalid response"  # litellm: a 200 body the OpenAI SDK left as text
_INVALID_OBJECT_MARKER = "Invalid response object"  # litellm: JSON it could not convert


@functools.cache
def litellm_module() -> ModuleType:
    """litellm, imported on first use with its debug banner off: its import takes seconds of CPU
    (litellm and the OpenAI SDK's types), which planning a run (the Snakefile imports this
    package) and code that never sends a request do not pay. Its price table is read from disk
    (``LITELLM_LOCAL_MODEL_COST_MAP``, unless the environment says otherwise): no run and no
    library call goes to the network for it."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


@functools.cache
def _failure_classes() -> dict[str, tuple[type[BaseException], ...]]:
    """The exception classes :func:`classify` tells apart, from litellm, the OpenAI SDK and httpx."""
    import openai

    litellm = litellm_module()
    return {"timeout": (litellm.Timeout, openai.APITimeoutError, TimeoutError, httpx.TimeoutException),
            "rate_limited": (litellm.RateLimitError, openai.RateLimitError),
            "connection_error": (openai.APIConnectionError, httpx.TransportError, ConnectionError),
            "status": (openai.APIStatusError,), "context": (litellm.ContextWindowExceededError,)}


@dataclass(frozen=True)
class ErrorKind:
    """A classified failure: whether to retry, a short reason, the server's Retry-After in
    seconds (as sent, before capping; None when absent or unreadable) and whether one was sent
    but unreadable."""

    retryable: bool
    reason: str
    retry_after_s: float | None = None
    retry_after_invalid: bool = False


def _header(exc: BaseException, name: str) -> str | None:
    for headers in (getattr(exc, "litellm_response_headers", None),
                    getattr(getattr(exc, "response", None), "headers", None)):
        if headers is not None and headers.get(name) is not None:
            return headers.get(name)
    return None


def _seconds(value: str, scale: float = 1.0) -> float | None:
    """A non-negative finite number of ``scale`` seconds, else None."""
    try:
        seconds = float(value) * scale
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _until_date(value: str) -> float | None:
    """Seconds until the HTTP date ``value`` (0 when past), else None."""
    try:
        parsed = email.utils.parsedate_to_datetime(value)
        return max(0.0, parsed.timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def retry_after(exc: BaseException) -> tuple[float | None, bool]:
    """(seconds the server asked us to wait or None, whether a wait was sent but unreadable):
    ``retry-after-ms`` when readable, else ``Retry-After`` as seconds or an HTTP date."""
    millis = _header(exc, "retry-after-ms")
    if millis is not None and (seconds := _seconds(millis, 0.001)) is not None:
        return seconds, False
    value = _header(exc, "retry-after")
    if value is None:
        return None, millis is not None
    seconds = _seconds(value)
    if seconds is None:
        seconds = _until_date(value)
    return seconds, seconds is None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and its causes (``__cause__``, else ``__context__``), each once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _unreadable_body(chain: list[BaseException]) -> str | None:
    if any(isinstance(e, json.JSONDecodeError) or str(e).startswith(_NOT_JSON_MARKER) for e in chain):
        return "not_json"
    if any(str(e).startswith(_INVALID_OBJECT_MARKER) for e in chain):
        return "invalid_object"
    return None


def http_status(chain: list[BaseException]) -> int | None:
    """The HTTP status of the reply behind a failure: that of the OpenAI client's
    ``APIStatusError`` in the chain (the server's own), else the first integer ``status_code``."""
    for e in chain:
        if isinstance(e, _failure_classes()["status"]):
            return e.status_code
    statuses = [s for e in chain if isinstance(s := getattr(e, "status_code", None), int)]
    return statuses[0] if statuses else None


def _error_codes(e: BaseException) -> set[str]:
    """The ``code`` and ``type`` strings of an exception and of its error object (``body``, bare
    or under ``error``)."""
    body = getattr(e, "body", None)
    objects = [body, body.get("error")] if isinstance(body, dict) else []
    fields = [getattr(e, "code", None), getattr(e, "type", None)]
    fields += [o.get(name) for o in objects if isinstance(o, dict) for name in ("code", "type")]
    return {f for f in fields if isinstance(f, str)}


def _exceeds_context(chain: list[BaseException]) -> bool:
    status = http_status(chain)
    if status is None or not 400 <= status < 500:
        return False
    return any(isinstance(e, _failure_classes()["context"]) or _error_codes(e) & CONTEXT_ERROR_CODES
               for e in chain)


def classify(exc: BaseException) -> ErrorKind:
    """Classify an exception raised by ``litellm.acompletion`` (see module docstring)."""
    chain = list(_chain(exc))
    if _exceeds_context(chain):
        return ErrorKind(False, PROMPT_EXCEEDS_CONTEXT)
    classes = _failure_classes()
    if any(isinstance(e, classes["timeout"]) for e in chain):
        return ErrorKind(True, "timeout")
    if isinstance(exc, classes["rate_limited"]):
        return ErrorKind(True, "rate_limited", *retry_after(exc))
    if any(isinstance(e, classes["connection_error"]) for e in chain):
        return ErrorKind(True, "connection_error")
    if (body := _unreadable_body(chain)) is not None:
        return bad_response(body)
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status >= 500:
        return ErrorKind(True, "server_error", *retry_after(exc))
    return ErrorKind(False, f"api_error:{type(exc).__name__}")


def bad_response(what: str) -> ErrorKind:
    """The failure of a response without a usable answer: ``bad_response:<what>``, retryable
    unless ``what`` is ``null_content`` (see module docstring)."""
    return ErrorKind(what != "null_content", f"bad_response:{what}")


def backoff_seconds(attempt: int, kind: ErrorKind, base_s: float, max_s: float,
                    rng: random.Random) -> float:
    """Wait before retry number ``attempt`` (1-based), at most ``max_s``: the server's
    Retry-After plus up to 10% jitter when given, else equal-jitter exponential backoff
    d/2 + U(0, d/2) with d = min(max_s, base_s * 2**(attempt-1))."""
    if kind.retry_after_s is not None:
        return min(max_s, kind.retry_after_s * (1.0 + 0.1 * rng.random()))
    d = min(max_s, base_s * 2 ** (attempt - 1))
    return d / 2 + rng.uniform(0, d / 2)
