"""Prompts longer than the model's context end as ``prompt_exceeds_context``: refused before any
call when far too long for the context the client knows, and recorded from the server's refusal
otherwise; never retried, never cached, never a crashed job."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import python_env
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient, prompt_tokens_at_least
from retrieval_response.llm.config import ModelConfig, PacingConfig
from retrieval_response.testing.openai_server import OpenAIServer

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("RR_TEST_KEY", "sk-test")


def _client(server: OpenAIServer, tmp_path, model: str = "openai/loopback") -> LLMClient:
    """One call at a time, so the server's scripted replies meet the prompts in order."""
    return LLMClient(ModelConfig(model, api_base=server.base_url, api_key_env="RR_TEST_KEY", max_tokens=16),
                     PacingConfig(concurrency=1, max_retries=3, backoff_base_seconds=0.01, backoff_max_seconds=0.05),
                     ResponseCache(tmp_path / "cache"))


@pytest.mark.parametrize("text", ["word " * 400_000, "é" * 600_000, "x" * 1_100_000, "中文" * 300_000])
def test_a_prompt_far_longer_than_a_known_context_is_refused_without_a_call(tmp_path, text):
    with OpenAIServer() as server:
        client = _client(server, tmp_path, model="openai/gpt-4o-mini")  # litellm knows its context
        assert client.context_tokens and prompt_tokens_at_least([{"content": text}]) > client.context_tokens
        [result] = client.run_all([client.complete([{"role": "user", "content": text}])], "test")
        assert result.status == "prompt_exceeds_context"
        assert server.stats()["requests"] == 0
        assert client.stats.failures_by_reason == {"prompt_exceeds_context": 1}
        [small] = client.run_all([client.complete([{"role": "user", "content": "short"}])], "test")
        assert small.ok


@pytest.mark.parametrize("position", [0, 1, 2])
def test_the_server_refusing_a_long_prompt_is_a_recorded_status_not_retried_not_cached(tmp_path, position):
    script = ["ok"] * position + ["fault_context_exceeded"]
    with OpenAIServer(script=script) as server:
        client = _client(server, tmp_path)
        assert client.context_tokens is None  # unknown model: the server decides
        prompts = [[{"role": "user", "content": f"question {i}"}] for i in range(position + 1)]
        results = client.run_all([client.complete(m) for m in prompts], "test")
        assert [r.status for r in results][-1] == "prompt_exceeds_context"
        assert all(r.ok for r in results[:-1])
        assert server.stats()["requests"] == position + 1
        assert client.cache.get(results[-1].key) is None


# A fresh process: one completion served by the server, then the same from the cache in another
# process; litellm is imported only by the process that sends a request.
CACHED_CHILD = """
import sys
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig
import retrieval_response.llm.jobs, retrieval_response.llm.document_judgments  # what the Snakefile imports
assert "litellm" not in sys.modules and "openai" not in sys.modules
client = LLMClient(ModelConfig("openai/loopback", api_base=sys.argv[1], api_key_env="RR_TEST_KEY", max_tokens=16),
                   PacingConfig(concurrency=1), ResponseCache(sys.argv[2]))
[result] = client.run_all([client.complete([{"role": "user", "content": "question"}])], "test")
assert result.ok
print(result.cached, "litellm" in sys.modules)
"""


def test_litellm_is_imported_only_by_a_process_that_sends_a_request(tmp_path):
    with OpenAIServer() as server:
        said = [subprocess.run([sys.executable, "-c", CACHED_CHILD, server.base_url, str(tmp_path / "cache")],
                               capture_output=True, text=True, env=python_env(RR_TEST_KEY="sk-test"))
                for _ in range(2)]
    assert [(proc.returncode, proc.stdout.split()) for proc in said] == [(0, ["False", "True"]), (0, ["True", "False"])], \
        [proc.stderr[-2000:] for proc in said]
