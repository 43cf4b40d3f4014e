"""The litellm client against the loopback OpenAI server, through the openai/ route users take:
retries (one layer only), Retry-After, failures, responses of any shape, the call journal, cache
hits, pacing and secrets."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from conftest import python_env
from retrieval_response.llm.accounting import CallJournal, read_journal
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig
from retrieval_response.llm.pacing import TokenBucket
from retrieval_response.testing.openai_server import (
    MISBEHAVIOURS,
    FaultSchedule,
    OpenAIServer,
    messages_sha256,
)

pytestmark = pytest.mark.unit

FAST = PacingConfig(concurrency=4, max_retries=3, timeout_seconds=2.0, backoff_base_seconds=0.01,
                    backoff_max_seconds=0.05)


def pacing_for(fault: str, **changes) -> PacingConfig:
    """FAST with ``changes``; a trickled body lasts until the attempt's deadline, so its case
    (``fault_trickle``) gets a deadline of 0.5 s instead of 2."""
    deadline = 0.5 if fault == "fault_trickle" else FAST.timeout_seconds
    return PacingConfig(**{**FAST.__dict__, "timeout_seconds": deadline, **changes})


def _client(server, tmp_path, pacing=FAST, journal=None, **model):
    cfg = ModelConfig("openai/loopback", api_base=server.base_url, api_key_env="RR_TEST_KEY", **model)
    return LLMClient(cfg, pacing, ResponseCache(tmp_path / "cache"), jitter_seed=0, journal=journal)


def _msgs(i):
    return [{"role": "user", "content": f"question {i}"}]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("RR_TEST_KEY", "sk-test-SECRET-123")


def test_one_429_costs_exactly_one_extra_request_and_honours_retry_after(tmp_path):
    with OpenAIServer(faults=FaultSchedule(retry_after_s=0.4)) as server:
        client = _client(server, tmp_path, PacingConfig(**{**FAST.__dict__, "backoff_max_seconds": 5.0}))
        server._draw_fault = iter(["fault_429"] + [None] * 10).__next__  # only the first request
        start = time.monotonic()
        [result] = client.run_all([client.complete(_msgs(0))], "t")
        elapsed = time.monotonic() - start
        stats = server.stats()
    assert result.ok and result.content.startswith("Answer")
    assert stats["requests"] == 2 and stats["outcomes"] == {"fault_429": 1, "ok": 1}
    assert elapsed >= 0.4  # waited the server's retry-after-ms, not the tiny backoff
    assert (client.stats.calls, client.stats.retries, dict(client.stats.retries_by_reason)) == (2, 1, {"rate_limited": 1})


@pytest.mark.parametrize("fault, reason", [("fault_500", "server_error"), ("fault_malformed", "bad_response:not_json"),
                                           ("fault_timeout", "timeout")])
def test_transient_faults_are_retried_once_each(tmp_path, fault, reason):
    with OpenAIServer(faults=FaultSchedule(timeout_sleep_s=3.0)) as server:
        server._draw_fault = iter([fault, fault] + [None] * 10).__next__
        client = _client(server, tmp_path, PacingConfig(**{**FAST.__dict__, "timeout_seconds": 1.0}))
        [result] = client.run_all([client.complete(_msgs(1))], "t")
        assert server.stats()["requests"] == 3
    assert result.ok
    assert client.stats.calls == 3 and client.stats.retries_by_reason == {reason: 2}


def test_retries_are_bounded_and_the_failure_is_recorded(tmp_path):
    with OpenAIServer(faults=FaultSchedule(server_error_500=1.0)) as server:
        client = _client(server, tmp_path)
        [result] = client.run_all([client.complete(_msgs(2))], "t")
        assert server.stats()["requests"] == FAST.max_retries + 1
    assert result.status == "retries_exhausted:server_error" and result.content is None
    assert client.stats.failures_by_reason == {"retries_exhausted:server_error": 1}
    assert len(client.cache) == 0  # failures are not cached: a rerun tries again


def test_non_retryable_error_fails_at_once(tmp_path):
    with OpenAIServer() as server:
        cfg = ModelConfig("openai/loopback", api_base=server.base_url.replace("/v1", "/nope"),
                          api_key_env="RR_TEST_KEY")
        client = LLMClient(cfg, FAST, ResponseCache(tmp_path))
        [result] = client.run_all([client.complete(_msgs(3))], "t")
    assert result.status.startswith("api_error:") and client.stats.calls == 1


def test_rerun_and_duplicates_cost_no_calls_and_the_key_is_never_stored(tmp_path):
    with OpenAIServer(latency_s=0.05) as server:
        first = _client(server, tmp_path)
        batch = [_msgs(i % 5) for i in range(10)]  # every prompt twice, concurrently
        out1 = first.run_all([first.complete(m) for m in batch], "t")
        assert server.stats()["requests"] == 5 and first.stats.cache_hits == 5
        again = _client(server, tmp_path)
        out2 = again.run_all([again.complete(m) for m in batch], "t")
        assert server.stats()["requests"] == 5
    assert [c.content for c in out1] == [c.content for c in out2] and all(c.cached for c in out2)
    assert (again.stats.calls, again.stats.cache_hits) == (0, 10)
    for shard in (tmp_path / "cache").rglob("*.jsonl"):
        assert b"SECRET" not in shard.read_bytes()


def test_a_missing_key_variable_is_reported_by_name_before_any_call(tmp_path, monkeypatch):
    monkeypatch.delenv("RR_TEST_KEY")
    with OpenAIServer() as server, pytest.raises(ValueError, match="RR_TEST_KEY"):
        _client(server, tmp_path)


def test_concurrency_cap_and_requests_per_minute_queue_calls(tmp_path):
    with OpenAIServer(latency_s=0.2) as server:
        client = _client(server, tmp_path, PacingConfig(concurrency=3, requests_per_minute=600))
        start = time.monotonic()
        results = client.run_all([client.complete(_msgs(100 + i)) for i in range(12)], "t")
        elapsed = time.monotonic() - start
        stats = server.stats()
    assert all(r.ok for r in results) and stats["requests"] == 12
    assert stats["max_in_flight"] <= 3
    assert elapsed >= 11 / 10  # 600/min = 10/s evenly spaced: 12 requests span >= 1.1 s


def test_token_bucket_waits_instead_of_rejecting():
    async def run():
        bucket = TokenBucket(rate_per_s=100.0, capacity=50.0)
        start = time.monotonic()
        for amount in (50, 50, 120):  # 120 > capacity: waits for a full bucket, then goes into debt
            await bucket.acquire(amount)
        return time.monotonic() - start
    assert 0.9 <= asyncio.run(run()) < 5.0  # 50 free, +0.5 s for 50, +0.5 s for a full 50 (bound: load)


def test_server_rate_limit_is_not_hit_by_paced_client(tmp_path):
    # 300/min sends one request every 0.2 s (bucket of one): ten arrivals inside the server's
    # one-second window would need the sends squeezed to half their spacing, not a scheduling hiccup
    with OpenAIServer(latency_s=0.05, rate_limit_rps=10) as server:
        client = _client(server, tmp_path, PacingConfig(concurrency=8, requests_per_minute=300))
        client.run_all([client.complete(_msgs(200 + i)) for i in range(25)], "t")
        stats = server.stats()
    assert stats["outcomes"] == {"ok": 25}


def test_logprobs_are_requested_and_cached(tmp_path):
    with OpenAIServer() as server:
        client = _client(server, tmp_path, logprobs=True, max_tokens=4)
        msgs = [{"role": "user", "content": "Give a grade"}]
        [result] = client.run_all([client.complete(msgs)], "t")
    assert result.content.startswith("Grade: ")
    digit = [e for e in result.logprobs if e["token"].isdigit()][0]
    assert digit["token"] == result.content[-1] and len(digit["top_logprobs"]) >= 2
    cached = ResponseCache(tmp_path / "cache").get(client.key(msgs))
    assert cached["logprobs"] == result.logprobs and cached["response_id"] == f"chatcmpl-{messages_sha256(msgs)[:24]}"


# Every shape of response: (scripted fault, failure reason or None when the response is usable,
# whether the failure is retried).
SHAPES = [
    ("fault_empty_choices", "bad_response:no_choices", True),
    ("fault_no_message", "bad_response:invalid_object", True),
    ("fault_null_content", "bad_response:null_content", False),
    ("fault_not_json", "bad_response:not_json", True),
    ("fault_empty_body", "bad_response:not_json", True),
    ("fault_malformed", "bad_response:not_json", True),
    ("fault_html", "bad_response:not_json", True),
    ("fault_text_plain", None, False),
    ("fault_error_object", "server_error", True),
    ("fault_500", "server_error", True),
    ("fault_reset", "connection_error", True),
    ("fault_context_exceeded", "prompt_exceeds_context", False),
    ("fault_openai_context_length", "prompt_exceeds_context", False),
    ("fault_gateway_context_deadline", "timeout", True),
    ("fault_gateway_context_deadline_json", "timeout", True),
    ("fault_502_context_words", "server_error", True),
    ("fault_400_context_words", "api_error:BadRequestError", False),
    ("fault_trickle", "timeout", True),
    ("fault_401_echo_key", "api_error:AuthenticationError", False),
]


def test_every_scripted_misbehaviour_is_covered():
    assert {fault for fault, _, _ in SHAPES} >= set(MISBEHAVIOURS) - {"fault_retry_after_header"}


@pytest.mark.parametrize("fault, reason, retried", SHAPES)
def test_a_response_of_any_shape_becomes_a_status_is_not_cached_and_a_rerun_recovers(tmp_path, fault, reason, retried):
    attempts = FAST.max_retries + 1 if retried else 1
    with OpenAIServer(script=[fault] * attempts) as server:
        journal = CallJournal(tmp_path / "journal", "answer", "job")
        client = _client(server, tmp_path, pacing_for(fault), journal=journal)
        [result] = client.run_all([client.complete(_msgs(7))], "t")
        requests = server.stats()["requests"]
        cached = len(ResponseCache(tmp_path / "cache"))
        rerun = _client(server, tmp_path)
        [again] = rerun.run_all([rerun.complete(_msgs(7))], "t")
    if reason is None:
        assert result.ok and result.content.startswith("Answer") and requests == 1
        return
    status = f"retries_exhausted:{reason}" if retried else reason
    assert result.status == status and result.content is None and requests == attempts
    assert client.stats.calls == attempts and client.stats.failures_by_reason == {status: 1}
    assert cached == 0, "a bad response must not be cached as ok"
    assert again.ok and not again.cached and rerun.stats.calls == 1
    lines = read_journal(tmp_path / "journal")
    assert lines["outcome"].to_list() == [reason] * attempts
    # what the provider said, when the call raised: one line, without the key, kept for the failure line
    details = [d for d in lines["detail"].to_list() if d is not None]
    assert all(d.strip() and "\n" not in d and "SECRET" not in d and "sk-test" not in d for d in details)
    if reason.startswith(("api_error:", "prompt_exceeds_context", "server_error", "timeout", "connection_error")):
        assert len(details) == attempts and client.failure_details[reason] == details[-1]
    if fault == "fault_401_echo_key":
        assert "Incorrect API key provided: REDACTED." in details[0]


def test_many_requests_meeting_every_shape_each_end_with_a_status(tmp_path):
    faults = [fault for fault, _, _ in SHAPES]
    pacing = PacingConfig(**{**FAST.__dict__, "max_retries": 0})
    with OpenAIServer(script=faults * 3) as server:
        client = _client(server, tmp_path, pacing)
        results = client.run_all([client.complete(_msgs(300 + i)) for i in range(len(faults) * 3 + 5)], "t")
    statuses = {r.status for r in results}
    assert "ok" in statuses and statuses - {"ok"} <= {
        (f"retries_exhausted:{reason}" if retried else reason) for _, reason, retried in SHAPES if reason}
    assert sum(client.stats.failures_by_reason.values()) == sum(not r.ok for r in results)


FUTURE = "Mon, 07 Dec 2099 16:22:33 +0000"
"""An HTTP date far in the future (a fixed text, so that every pytest-xdist worker collects the same test id)."""
PAST = "Wed, 21 Oct 2015 07:28:00 GMT"


@pytest.mark.parametrize("header, capped, invalid", [
    ("soon", 0, 1), ("", 0, 1), ("-5", 0, 1), ("nan", 0, 1), ("inf", 0, 1), ("1e400", 0, 1),
    ("3600", 1, 0), (FUTURE, 1, 0), (PAST, 0, 0), ("0", 0, 0)])
def test_a_retry_after_of_any_value_is_ignored_or_capped_and_counted(tmp_path, header, capped, invalid):
    pacing = PacingConfig(**{**FAST.__dict__, "backoff_max_seconds": 0.3})
    with OpenAIServer(script=["fault_retry_after_header"], retry_after_header=header) as server:
        client = _client(server, tmp_path, pacing)
        start = time.monotonic()
        [result] = client.run_all([client.complete(_msgs(8))], "t")
        elapsed = time.monotonic() - start
    assert result.ok and client.stats.retries_by_reason == {"rate_limited": 1}
    assert (client.stats.retry_after_capped, client.stats.retry_after_invalid) == (capped, invalid)
    assert elapsed < 2.0  # at most the 0.3 s cap, never the hour the server asked for
    if capped:
        assert elapsed >= 0.3


def test_the_journal_holds_every_call_with_its_usage(tmp_path):
    with OpenAIServer(script=["fault_500", "fault_empty_choices"]) as server:
        client = _client(server, tmp_path, journal=CallJournal(tmp_path / "journal", "grade", "g/1"))
        client.run_all([client.complete(_msgs(400 + i)) for i in range(5)], "t")
        requests = server.stats()["requests"]
    lines = read_journal(tmp_path / "journal")
    assert lines.height == requests == client.stats.calls == 7
    assert sorted(lines["outcome"]) == ["bad_response:no_choices", "ok", "ok", "ok", "ok", "ok", "server_error"]
    assert set(lines["stage"]) == {"grade"} and set(lines["job"]) == {"g/1"}
    assert lines["prompt_tokens"].sum() == client.stats.prompt_tokens > 0  # the empty choices' usage too
    assert lines["completion_tokens"].sum() == client.stats.completion_tokens
    assert lines.filter(outcome="server_error")["prompt_tokens"].to_list() == [None]


@pytest.mark.parametrize("interval_s, timeout_s", [(0.5, 2.0), (0.3, 1.0), (1.0, 1.5)])
def test_a_body_trickled_byte_by_byte_ends_as_timeout_within_the_attempt_deadline(tmp_path, interval_s, timeout_s):
    pacing = PacingConfig(**{**FAST.__dict__, "max_retries": 0, "timeout_seconds": timeout_s})
    with OpenAIServer(script=["fault_trickle"], trickle_interval_s=interval_s) as server:
        journal = CallJournal(tmp_path / "journal", "answer", "job")
        client = _client(server, tmp_path, pacing, journal=journal)
        start = time.monotonic()
        [result] = client.run_all([client.complete(_msgs(9))], "t")
        elapsed = time.monotonic() - start
    assert result.status == "retries_exhausted:timeout"
    assert timeout_s * 0.9 <= elapsed < timeout_s + 1.5, f"one attempt took {elapsed:.1f} s"
    assert read_journal(tmp_path / "journal")["outcome"].to_list() == ["timeout"]
    assert len(ResponseCache(tmp_path / "cache")) == 0


@pytest.mark.parametrize("model", ["my-hosted", "loopback/x", "gpt4o-typo-model"])
def test_a_model_string_litellm_cannot_route_records_its_reason(tmp_path, model):
    """The start-up check refuses such a string; a client given one anyway records litellm's own
    reason in the journal and its failure details, beside the status."""
    with OpenAIServer() as server:
        journal = CallJournal(tmp_path / "journal", "answer_topk", "job")
        cfg = ModelConfig(model, api_base=server.base_url, api_key_env="RR_TEST_KEY")
        client = LLMClient(cfg, FAST, ResponseCache(tmp_path / "cache"), journal=journal)
        [result] = client.run_all([client.complete(_msgs(9))], "t")
        assert server.stats()["requests"] == 0
    assert result.status == "api_error:BadRequestError"
    [line] = read_journal(tmp_path / "journal").to_dicts()
    assert line["detail"].startswith("LLM Provider NOT provided") and f"model={model}" in line["detail"]
    assert client.failure_details == {"api_error:BadRequestError": line["detail"]}


@pytest.mark.parametrize("call", [
    "from retrieval_response.llm.retry import litellm_module; litellm_module()",
    "from retrieval_response.llm.config import provider_problem; assert provider_problem('openai/m') is None",
])
def test_the_library_never_fetches_litellms_price_map(call):
    """Used as a library, without LITELLM_LOCAL_MODEL_COST_MAP and every request through a proxy
    that does not exist: litellm's remote price map would be a failed fetch and a warning on stderr."""
    env = {name: value for name, value in python_env().items() if name != "LITELLM_LOCAL_MODEL_COST_MAP"}
    env |= {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}
    proc = subprocess.run([sys.executable, "-c", call], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-2000:]


def test_a_provider_check_is_remembered_and_a_later_one_needs_no_litellm(tmp_path):
    """The first check of a model imports litellm and remembers its answer (None or litellm's
    reason); a later process answers the same from the file without importing litellm, and a
    damaged file is checked again."""
    env = python_env() | {"RETRIEVAL_RESPONSE_PROVIDER_CHECKS": str(tmp_path)}
    check = ("import sys; from retrieval_response.llm.config import provider_problem; "
             "print(repr(provider_problem('openai/m')), repr(provider_problem('my-hosted')), 'litellm' in sys.modules)")

    def run() -> str:
        proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout.strip()

    first = run()
    assert first.startswith("None 'LLM Provider NOT provided") and first.endswith(" True")
    assert len(list(tmp_path.glob("*.json"))) == 2
    assert run() == first.removesuffix(" True") + " False"
    for remembered in tmp_path.glob("*.json"):
        remembered.write_text("{not json")
    assert run() == first
