"""The litellm client against the loopback OpenAI server, through the openai/ route users take:
retries (one layer only), Retry-After, failures, cache hits, pacing and secrets."""

from __future__ import annotations

import asyncio
import time

import pytest

from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig
from retrieval_response.llm.pacing import TokenBucket
from retrieval_response.testing.openai_server import FaultSchedule, OpenAIServer, messages_sha256

FAST = PacingConfig(concurrency=4, max_retries=3, timeout_seconds=2.0, backoff_base_seconds=0.01,
                    backoff_max_seconds=0.05)


def _client(server, tmp_path, pacing=FAST, **model):
    cfg = ModelConfig("openai/loopback", api_base=server.base_url, api_key_env="RR_TEST_KEY", **model)
    return LLMClient(cfg, pacing, ResponseCache(tmp_path / "cache"), jitter_seed=0)


def _msgs(i):
    return [{"role": "user", "content": f"question {i}"}]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("RR_TEST_KEY", "sk-test-SECRET-123")


def test_one_429_costs_exactly_one_extra_request_and_honours_retry_after(tmp_path):
    with OpenAIServer(faults=FaultSchedule(retry_after_s=0.4)) as server:
        client = _client(server, tmp_path)
        server._draw_fault = iter(["fault_429"] + [None] * 10).__next__  # only the first request
        start = time.monotonic()
        [result] = client.run_all([client.complete(_msgs(0))], "t")
        elapsed = time.monotonic() - start
        stats = server.stats()
    assert result.ok and result.content.startswith("Answer")
    assert stats["requests"] == 2 and stats["outcomes"] == {"fault_429": 1, "ok": 1}
    assert elapsed >= 0.4  # waited the server's retry-after-ms, not the tiny backoff
    assert (client.stats.calls, client.stats.retries, dict(client.stats.retries_by_reason)) == (2, 1, {"rate_limited": 1})


@pytest.mark.parametrize("fault, reason", [("fault_500", "server_error"), ("fault_malformed", "server_error"),
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
    for shard in (tmp_path / "cache").glob("*"):
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
    assert 0.9 <= asyncio.run(run()) < 2.0  # 50 free, +0.5 s for 50, +0.5 s for a full 50


def test_server_rate_limit_is_not_hit_by_paced_client(tmp_path):
    with OpenAIServer(latency_s=0.05, rate_limit_rps=10) as server:
        client = _client(server, tmp_path, PacingConfig(concurrency=8, requests_per_minute=570))
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
