"""A loopback HTTP server speaking the OpenAI chat-completions protocol, for users, tests and benchmarks.

Users run it to try a config end to end without a model (docs/LLM_SERVERS.md, "A loopback
server to try a config"); the tests and benchmarks use it as the LLM provider.

``POST /v1/chat/completions`` answers deterministically from the request's messages, after a
configurable latency, under a server-side rate limit (sliding one-second window; excess gets
HTTP 429 with ``Retry-After`` and ``retry-after-ms``), with a seeded fault schedule (injected 429,
500, timeouts, malformed JSON bodies, unparseable grade content) and an optional ``script``: the
faults of the first requests, in arrival order, drawn from ``FAULT_KINDS + MISBEHAVIOURS`` (None
or ``"ok"`` = a normal answer). ``usage`` overrides fields of every answer's usage (impossible
numbers included); with ``required_query`` a request whose query parameters differ gets HTTP 401;
``fail_when`` (a predicate of the messages, settable while the server runs) gives the requests
it holds for an injected HTTP 500 (outcome ``fault_500``), the same prompts on every attempt.
``GET /stats`` returns the counters as JSON; ``OpenAIServer.stats()`` returns them in-process.

Use as a context manager (server thread in this process)::

    with OpenAIServer(latency_s=0.1, rate_limit_rps=20) as server:
        litellm.completion(model="openai/fake", api_base=server.base_url, api_key="x", ...)

or ``python -m retrieval_response.testing.openai_server --latency 0.1 --rps 20`` to keep its
threads off the client's interpreter lock; see ``serve_in_subprocess``. The command listens on a
free port unless ``--port`` names one, and prints ``PORT <n>`` once it listens; a ``--port`` in
use is refused with one line on stderr (exit status 1), no traceback. ``--config-out FILE``
writes, before that line, a config overlay pointing both LLM roles at the server
(``llm.generator.api_base`` and ``llm.grader.api_base``), to give Snakemake as a second
``--configfile`` after the config it completes.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import random
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SHUTDOWN_POLL_S = 0.02
"""How often the serving thread checks for ``shutdown`` (socketserver's default, 0.5 s, would be
added to every ``with OpenAIServer()`` block)."""

FAULT_KINDS = ("fault_429", "fault_500", "fault_timeout", "fault_malformed", "fault_unparseable")
# Responses of any shape a provider or a proxy in front of it may send (scripted only):
# HTTP 200 with no choices, a choice without message, null content, a body that is not JSON, an
# empty body, an HTML page, a correct body labelled text/plain, an error object; a connection
# reset before any byte; a 429 whose Retry-After is the server's ``retry_after_header``; a body
# trickled a byte at a time (``trickle_interval_s`` apart); a 401 that quotes the request's
# bearer token back (``fault_401_echo_key``, as providers quote a wrong key); and the error
# replies of ``ERROR_REPLIES``.
CONTEXT_EXCEEDED_BODY = (b'{"error": {"code": 400, "message": "the request exceeds the available context size, '
                         b'try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 5000, '
                         b'"n_ctx": 2048}}')
# Error replies (status, body, content type): a prompt longer than the context as llama-server and
# OpenAI say it (a structured type or code), and replies whose words speak of a context being
# exceeded while their status says something else: a gateway's 504 "context deadline exceeded"
# (Go's timeout message), a 502 quoting a context phrase, a 400 about a request field.
ERROR_REPLIES = {
    "fault_context_exceeded": (400, CONTEXT_EXCEEDED_BODY, "application/json"),
    "fault_openai_context_length": (
        400, b'{"error": {"message": "This model\'s maximum context length is 8192 tokens. However, your messages '
             b'resulted in 9000 tokens.", "type": "invalid_request_error", "param": "messages", '
             b'"code": "context_length_exceeded"}}', "application/json"),
    "fault_gateway_context_deadline": (504, b"context deadline exceeded", "text/plain"),
    "fault_gateway_context_deadline_json": (
        504, b'{"error": {"message": "upstream request failed: context deadline exceeded", "type": "gateway_timeout"}}',
        "application/json"),
    "fault_502_context_words": (
        502, b'{"error": {"message": "upstream said: this model\'s maximum context length is unknown; '
             b'prompt is too long for the proxy buffer, exceeded context"}}', "application/json"),
    "fault_400_context_words": (
        400, b'{"error": {"message": "field context exceeds 64 keys", "type": "invalid_request_error"}}',
        "application/json"),
}
MISBEHAVIOURS = ("fault_empty_choices", "fault_no_message", "fault_null_content", "fault_not_json",
                 "fault_empty_body", "fault_html", "fault_text_plain", "fault_error_object",
                 "fault_reset", "fault_retry_after_header", "fault_trickle", "fault_401_echo_key", *ERROR_REPLIES)
UNPARSEABLE_CONTENT = "Somewhere between 3 and 4, I would say."


@dataclass(frozen=True)
class FaultSchedule:
    """Fractions of requests that get each injected fault (drawn per request from a seeded RNG).

    ``timeout_sleep_s`` is how long a "timeout" request hangs before answering (make it longer
    than the client's timeout); ``retry_after_s`` is the Retry-After of injected 429s.
    """

    rate_limit_429: float = 0.0
    server_error_500: float = 0.0
    timeout: float = 0.0
    malformed_json: float = 0.0
    unparseable_grade: float = 0.0
    retry_after_s: float = 0.05
    timeout_sleep_s: float = 3.0
    seed: int = 0

    def scaled_to(self, total: float) -> FaultSchedule:
        """The same mix of the five faults, scaled so that their fractions sum to ``total``."""
        kinds = (self.rate_limit_429, self.server_error_500, self.timeout, self.malformed_json,
                 self.unparseable_grade)
        factor = total / sum(kinds)
        return FaultSchedule(*(k * factor for k in kinds), self.retry_after_s, self.timeout_sleep_s,
                             self.seed)


def messages_sha256(messages: list[dict]) -> str:
    """sha256 hex of the canonical JSON of ``messages`` (sorted keys, compact separators)."""
    canonical = json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


_ONE_REFERENCE = re.compile(r"^\[1\] (.*)$", re.MULTILINE)


def default_answer(messages: list[dict]) -> str:
    """Deterministic content: ``##final score: l`` (l = hash mod 4) when the prompt asks for a
    final score (UMBRELA); ``NO-RESPONSE`` for one hash in three, else ``Answer <hash12>.``, when it
    offers NO-RESPONSE (UDCG); ``Grade: g`` (g = 1 + hash mod 5) when the prompt mentions a grade;
    else ``Answer <hash12>.``, followed, for one hash in two when the last message holds exactly one
    numbered reference (a line starting ``[1] `` and none starting ``[2] ``: an eRAG or top-1
    answer), by `` Quote: <the first line of that reference>`` (so an answer can hold a gold
    answer its reference holds)."""
    digest = messages_sha256(messages)
    text = " ".join(str(m.get("content", "")) for m in messages).lower()
    if "final score" in text:
        return f"##final score: {int(digest[:8], 16) % 4}"
    if "no-response" in text and int(digest[:8], 16) % 3 == 0:
        return "NO-RESPONSE"
    if "grade" in text:
        return f"Grade: {1 + int(digest[:8], 16) % 5}"
    last = str(messages[-1].get("content", "")) if messages else ""
    reference = _ONE_REFERENCE.search(last)
    if reference and "\n[2] " not in last and int(digest[8:16], 16) % 2 == 0:
        return f"Answer {digest[:12]}. Quote: {reference.group(1).strip()}"
    return f"Answer {digest[:12]}."


def token_logprobs(content: str, top_n: int) -> list[dict]:
    """OpenAI-style ``logprobs.content`` for ``content``: a digit token 1..5 gets a distribution
    with 0.6 on itself and the rest spread over its neighbours; other tokens get probability 1."""
    tokens = re.findall(r"\d|\w+|\s+|[^\w\s]", content)
    entries = []
    for token in tokens:
        if token in {"1", "2", "3", "4", "5"}:
            g = int(token)
            neighbours = [n for n in (g - 1, g + 1) if 1 <= n <= 5]
            probs = {str(g): 0.6, **{str(n): 0.4 / len(neighbours) for n in neighbours}}
        else:
            probs = {token: 1.0}
        top = sorted(probs.items(), key=lambda kv: -kv[1])[:max(top_n, 1)]
        entries.append({
            "token": token, "logprob": math.log(probs[token]), "bytes": list(token.encode()),
            "top_logprobs": [{"token": t, "logprob": math.log(p), "bytes": list(t.encode())}
                             for t, p in top],
        })
    return entries


@dataclass
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    outcomes: Counter = field(default_factory=Counter)
    by_prompt: Counter = field(default_factory=Counter)
    ok_by_prompt: Counter = field(default_factory=Counter)
    ok_times: list = field(default_factory=list)
    window: deque = field(default_factory=deque)
    authorization: Counter = field(default_factory=Counter)
    query: Counter = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0


class OpenAIServer:
    """Loopback OpenAI chat-completions server (see module docstring); a context manager."""

    def __init__(self, latency_s: float = 0.0, rate_limit_rps: float | None = None,
                 faults: FaultSchedule = FaultSchedule(),
                 answer: Callable[[list[dict]], str] = default_answer, port: int = 0,
                 script: Sequence[str | None] = (), retry_after_header: str = "1",
                 trickle_interval_s: float = 0.5, usage: dict | None = None,
                 required_query: dict[str, str] | None = None,
                 fail_when: Callable[[list[dict]], bool] | None = None):
        unknown = set(script) - {None, "ok", *FAULT_KINDS, *MISBEHAVIOURS}
        if unknown:
            raise ValueError(f"unknown scripted faults: {sorted(unknown)}")
        self.latency_s = latency_s
        self.rate_limit_rps = rate_limit_rps
        self.faults = faults
        self.answer = answer
        self.script = deque(None if kind == "ok" else kind for kind in script)
        self.retry_after_header = retry_after_header
        self.trickle_interval_s = trickle_interval_s
        self.usage = usage or {}
        self.required_query = required_query
        self.fail_when = fail_when
        self._rng = random.Random(faults.seed)
        self._state = _State()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """The ``api_base`` for litellm's ``openai/`` route."""
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> OpenAIServer:
        # a short poll interval: leaving the ``with`` block (``shutdown``) waits for one poll
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S},
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def stats(self) -> dict:
        """Counters: ``requests``, ``outcomes`` (ok, rate_limited, fault_*), ``by_prompt`` and
        ``ok_by_prompt`` (messages sha256 -> count), ``authorization`` (``Bearer``, or
        ``Basic <user>``, or ``none`` -> count), ``query`` (the names of the query parameters of
        a request, comma-separated, or ``none`` -> count; never their values), ``max_in_flight``, ``ok_rps`` (200s per second
        between the first and the last one)."""
        s = self._state
        with s.lock:
            times = sorted(s.ok_times)
            span = times[-1] - times[0] if len(times) > 1 else 0.0
            return {
                "requests": sum(s.by_prompt.values()),
                "outcomes": dict(s.outcomes),
                "by_prompt": dict(s.by_prompt),
                "ok_by_prompt": dict(s.ok_by_prompt),
                "authorization": dict(s.authorization),
                "query": dict(s.query),
                "max_in_flight": s.max_in_flight,
                "ok_rps": (len(times) - 1) / span if span > 0 else None,
                "config": {"latency_s": self.latency_s, "rate_limit_rps": self.rate_limit_rps,
                           "faults": asdict(self.faults)},
            }

    def reset_stats(self) -> None:
        """Zero every counter (the rate-limit window is kept)."""
        with self._state.lock:
            window = self._state.window
            self._state = _State(window=window)

    # -- request handling -------------------------------------------------------------

    def _admit(self) -> float | None:
        """Record an arrival in the rate-limit window; return the wait in seconds if over."""
        if self.rate_limit_rps is None:
            return None
        now = time.monotonic()
        window = self._state.window
        while window and window[0] <= now - 1.0:
            window.popleft()
        if len(window) >= self.rate_limit_rps:
            return window[0] + 1.0 - now
        window.append(now)
        return None

    def _draw_fault(self) -> str | None:
        if self.script:
            return self.script.popleft()
        f = self.faults
        u = self._rng.random()
        for kind, frac in zip(FAULT_KINDS, (f.rate_limit_429, f.server_error_500, f.timeout,
                                            f.malformed_json, f.unparseable_grade), strict=False):
            if u < frac:
                return kind
            u -= frac
        return None

    def _completion_body(self, request: dict, content: str, prompt_hash: str) -> dict:
        messages = request.get("messages", [])
        prompt_chars = sum(len(str(m.get("content", ""))) for m in messages)
        choice = {"index": 0, "message": {"role": "assistant", "content": content},
                  "finish_reason": "stop", "logprobs": None}
        if request.get("logprobs"):
            choice["logprobs"] = {"content": token_logprobs(content, int(request.get("top_logprobs") or 0))}
        completion_tokens = max(1, len(content) // 4)
        prompt_tokens = max(1, prompt_chars // 4)
        return {"id": f"chatcmpl-{prompt_hash[:24]}", "object": "chat.completion",
                "created": int(time.time()), "model": request.get("model", "loopback"),
                "choices": [choice],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens, **self.usage}}

    def _handler_class(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _send(self, status: int, body: bytes, headers: dict | None = None,
                      content_type: str = "application/json") -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/stats"):
                    self._send(200, json.dumps(server.stats()).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                try:
                    request = json.loads(self.rfile.read(length))
                except json.JSONDecodeError:
                    self._send(400, b'{"error": {"message": "bad json"}}')
                    return
                path, _, query_string = self.path.partition("?")
                query = dict(urllib.parse.parse_qsl(query_string, keep_blank_values=True))
                if path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                with server._state.lock:
                    server._state.query[",".join(sorted(query)) or "none"] += 1
                if server.required_query is not None and query != server.required_query:
                    self._send(401, b'{"error": {"message": "missing or wrong query token", "type": "auth_error"}}')
                    return
                prompt_hash = messages_sha256(request.get("messages", []))
                state = server._state
                with state.lock:
                    state.by_prompt[prompt_hash] += 1
                    state.authorization[_authorization(self.headers.get("Authorization"))] += 1
                    wait = server._admit()
                    failing = server.fail_when is not None and server.fail_when(request.get("messages", []))
                    fault = None if wait is not None else "fault_500" if failing else server._draw_fault()
                    outcome = "rate_limited" if wait is not None else (fault or "ok")
                    state.outcomes[outcome] += 1
                    state.in_flight += 1
                    state.max_in_flight = max(state.max_in_flight, state.in_flight)
                try:
                    self._respond(request, prompt_hash, wait, fault)
                finally:
                    with state.lock:
                        state.in_flight -= 1

            def _respond(self, request: dict, prompt_hash: str, wait: float | None,
                         fault: str | None) -> None:
                if wait is not None:
                    self._rate_limited(wait, "rate limit exceeded")
                    return
                time.sleep(server.latency_s)
                if fault == "fault_429":
                    self._rate_limited(server.faults.retry_after_s, "injected 429")
                elif fault == "fault_500":
                    self._send(500, b'{"error": {"message": "injected 500", "type": "server_error"}}')
                elif fault == "fault_timeout":
                    time.sleep(server.faults.timeout_sleep_s)
                    self._send(504, b'{"error": {"message": "injected timeout"}}')
                elif fault == "fault_malformed":
                    self._send(200, b'{"id": "chatcmpl-broken", "choices": [{"message": ')
                elif fault in MISBEHAVIOURS:
                    self._misbehave(fault, request, prompt_hash)
                else:
                    content = (UNPARSEABLE_CONTENT if fault == "fault_unparseable"
                               else server.answer(request.get("messages", [])))
                    body = server._completion_body(request, content, prompt_hash)
                    self._send(200, json.dumps(body).encode())
                    with server._state.lock:
                        server._state.ok_by_prompt[prompt_hash] += 1
                        server._state.ok_times.append(time.monotonic())

            def _misbehave(self, fault: str, request: dict, prompt_hash: str) -> None:
                body = server._completion_body(request, server.answer(request.get("messages", [])),
                                               prompt_hash)
                choice = body["choices"][0]
                if fault == "fault_reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                               struct.pack("ii", 1, 0))
                    self.close_connection = True
                    return
                if fault in ERROR_REPLIES:
                    status, error_body, content_type = ERROR_REPLIES[fault]
                    self._send(status, error_body, content_type=content_type)
                    return
                if fault == "fault_trickle":
                    self._trickle(json.dumps(body).encode())
                    return
                if fault == "fault_401_echo_key":
                    token = (self.headers.get("Authorization") or "").partition(" ")[2]
                    message = f"Incorrect API key provided: {token}. You can find your API key in your account."
                    self._send(401, json.dumps({"error": {"message": message, "type": "invalid_request_error",
                                                          "code": "invalid_api_key"}}).encode())
                    return
                if fault == "fault_retry_after_header":
                    self._send(429, b'{"error": {"message": "slow down", "type": "rate_limit_error"}}',
                               {"Retry-After": server.retry_after_header})
                    return
                raw = {"fault_not_json": (b"upstream said: oops", "application/json"),
                       "fault_empty_body": (b"", "application/json"),
                       "fault_html": (b"<html><body>502 Bad Gateway</body></html>", "text/html")}
                if fault in raw:
                    self._send(200, *raw[fault][:1], content_type=raw[fault][1])
                    return
                if fault == "fault_empty_choices":
                    body["choices"] = []
                elif fault == "fault_no_message":
                    del choice["message"]
                elif fault == "fault_null_content":
                    choice["message"]["content"] = None
                elif fault == "fault_error_object":
                    body = {"error": {"message": "model overloaded", "type": "server_error", "code": 503}}
                self._send(200, json.dumps(body).encode(),
                           content_type="text/plain" if fault == "fault_text_plain" else "application/json")

            def _trickle(self, body: bytes) -> None:
                """A correct 200 whose body comes one byte per ``trickle_interval_s``."""
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.flush()
                    for index in range(len(body)):
                        self.wfile.write(body[index:index + 1])
                        self.wfile.flush()
                        time.sleep(server.trickle_interval_s)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            def _rate_limited(self, wait_s: float, message: str) -> None:
                body = json.dumps({"error": {"message": message, "type": "rate_limit_error"}})
                self._send(429, body.encode(), {"Retry-After": str(max(1, math.ceil(wait_s))),
                                                "retry-after-ms": str(max(1, round(wait_s * 1000)))})

        return Handler


def _authorization(header: str | None) -> str:
    """``Bearer``, ``Basic <user>`` or ``none``: who a request claims to be, without its secret."""
    if not header:
        return "none"
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return scheme
    try:
        return f"Basic {base64.b64decode(value).decode().partition(':')[0]}"
    except ValueError:
        return "Basic ?"


def fetch_stats(base_url: str) -> dict:
    """The ``GET /stats`` counters of a running server at ``base_url`` (``http://127.0.0.1:P/v1``)."""
    with urllib.request.urlopen(f"{base_url}/stats", timeout=10) as response:
        return json.loads(response.read())


@dataclass(frozen=True)
class RemoteServer:
    """Handle on a server running in a child process: ``base_url`` and ``stats()``."""

    base_url: str
    process: subprocess.Popen

    def stats(self) -> dict:
        return fetch_stats(self.base_url)


@contextmanager
def serve_in_subprocess(latency_s: float = 0.0, rate_limit_rps: float | None = None,
                        faults: FaultSchedule = FaultSchedule(),
                        script: Sequence[str | None] = (),
                        required_query: dict[str, str] | None = None) -> Iterator[RemoteServer]:
    """Run the server (default answers) in a child Python process; terminate it on exit."""
    args = [sys.executable, "-m", "retrieval_response.testing.openai_server",
            "--latency", str(latency_s), "--faults-json", json.dumps(asdict(faults)),
            "--script-json", json.dumps(list(script)), "--required-query-json", json.dumps(required_query)]
    if rate_limit_rps is not None:
        args += ["--rps", str(rate_limit_rps)]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"loopback server did not start: {line!r}")
        yield RemoteServer(f"http://127.0.0.1:{int(line.split()[1])}/v1", process)
    finally:
        process.terminate()
        process.wait(timeout=10)


def config_overlay(base_url: str) -> str:
    """A workflow config overlay (YAML; JSON is YAML) pointing both LLM roles at ``base_url``."""
    return json.dumps({"llm": {role: {"api_base": base_url} for role in ("generator", "grader")}}, indent=2) + "\n"


def main(argv: list[str] | None = None) -> None:
    """The command (module docstring): listen on ``--port`` (default a free port), write the
    ``--config-out`` overlay, print ``PORT <n>``, serve until killed. A port that cannot be
    listened on exits with one line on stderr and status 1."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--rps", type=float, default=None)
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one, printed)")
    parser.add_argument("--config-out", default=None,
                        help="write a config overlay pointing llm.generator and llm.grader at this server")
    parser.add_argument("--faults-json", default="{}")
    parser.add_argument("--script-json", default="[]")
    parser.add_argument("--required-query-json", default="null")
    args = parser.parse_args(argv)
    try:
        server = OpenAIServer(args.latency, args.rps, FaultSchedule(**json.loads(args.faults_json)),
                              port=args.port, script=json.loads(args.script_json),
                              required_query=json.loads(args.required_query_json))
    except OSError as error:
        sys.exit(f"openai_server: cannot listen on 127.0.0.1:{args.port}: {error.strerror or error} "
                 "(another program holds it?); omit --port to listen on a free port, printed as PORT <n>")
    if args.config_out:
        from retrieval_response.infra.atomic import write_text

        write_text(config_overlay(server.base_url), args.config_out)
    print(f"PORT {server.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
