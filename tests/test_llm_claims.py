"""Claims on cache keys: a client waits for the holder of a claimed key instead of calling; a claim
of a dead or hung holder is taken over; a failed call releases its claim. Two processes sharing one
response cache: test_llm_worker_processes.py."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.claims import Claim, KeyClaims
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig
from retrieval_response.testing.openai_server import OpenAIServer

pytestmark = pytest.mark.unit

KEY = "ab" * 32
PACING = PacingConfig(concurrency=2, max_retries=1, timeout_seconds=10.0, backoff_base_seconds=0.01,
                      backoff_max_seconds=0.05)
MSGS = [{"role": "user", "content": "claimed question"}]


def _write_claim(root: Path, host: str, pid: int, age_s: float = 0.0) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / KEY
    path.write_text(f"{host} {pid} {time.time() - age_s:.3f} token\n")
    os.utime(path, (time.time() - age_s, time.time() - age_s))
    return path


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_key_is_claimed_once_and_released_by_its_holder_only(tmp_path):
    first, second = KeyClaims(tmp_path, 60), KeyClaims(tmp_path, 60)
    assert first.claim(KEY) is Claim.CLAIMED
    assert second.claim(KEY) is Claim.HELD_ELSEWHERE
    second.release(KEY)  # holds nothing: must not remove the other's claim
    assert (tmp_path / KEY).exists()
    first.release(KEY)
    assert not (tmp_path / KEY).exists() and second.claim(KEY) is Claim.CLAIMED


@pytest.mark.parametrize("holder, age_s, outcome", [
    ("here-dead", 0.0, Claim.TAKEN_OVER),      # a dead process of this host: at once
    ("other-host", 100.0, Claim.TAKEN_OVER),   # not refreshed for longer than stale_s
    ("other-host", 1.0, Claim.HELD_ELSEWHERE),  # fresh, on a host we cannot look into
    ("here-alive", 100.0, Claim.TAKEN_OVER),   # a hung holder: stale all the same
    ("here-alive", 1.0, Claim.HELD_ELSEWHERE),
])
def test_stale_claims_are_taken_over_and_live_ones_are_not(tmp_path, holder, age_s, outcome):
    import socket
    host = "elsewhere.example" if holder == "other-host" else socket.gethostname()
    pid = _dead_pid() if holder == "here-dead" else os.getpid()
    _write_claim(tmp_path, host, pid, age_s)
    assert KeyClaims(tmp_path, stale_s=30).claim(KEY) is outcome


def test_refresh_keeps_a_held_claim_fresh(tmp_path):
    holder = KeyClaims(tmp_path, stale_s=30)
    holder.claim(KEY)
    os.utime(tmp_path / KEY, (time.time() - 100, time.time() - 100))
    holder.refresh_held()
    assert time.time() - (tmp_path / KEY).stat().st_mtime < 5


def _client(server, cache_dir: Path) -> LLMClient:
    model = ModelConfig("openai/loopback", api_base=server.base_url, api_key_env="RR_TEST_KEY")
    return LLMClient(model, PACING, ResponseCache(cache_dir, miss_refresh_s=0.05))


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("RR_TEST_KEY", "x")


def test_a_claimed_key_waits_for_the_holders_response_instead_of_calling(tmp_path):
    with OpenAIServer() as server:
        client = _client(server, tmp_path / "cache")
        key = client.key(MSGS)
        other = KeyClaims(tmp_path / "cache" / "claims", 60)  # another process's claim
        assert other.claim(key) is Claim.CLAIMED

        def answer_later():
            time.sleep(0.5)
            ResponseCache(tmp_path / "cache").put(key, {"content": "from the holder", "logprobs": None})
            other.release(key)

        threading.Thread(target=answer_later).start()
        [result] = client.run_all([client.complete(MSGS)], "t")
        assert server.stats()["requests"] == 0
    assert result.ok and result.content == "from the holder" and result.cached
    assert (client.stats.calls, client.stats.claim_waits, client.stats.cache_hits) == (0, 1, 1)


def test_a_failed_holder_releases_and_the_waiter_calls_itself(tmp_path):
    with OpenAIServer(script=["fault_500"] * (PACING.max_retries + 1)) as server:
        first, second = _client(server, tmp_path / "cache"), _client(server, tmp_path / "cache")
        [failed] = first.run_all([first.complete(MSGS)], "t")
        assert not list((tmp_path / "cache" / "claims").iterdir()), "a failed call left its claim"
        [result] = second.run_all([second.complete(MSGS)], "t")
    assert failed.status == "retries_exhausted:server_error" and result.ok and second.stats.calls == 1


def test_a_dead_holders_claim_is_taken_over(tmp_path):
    with OpenAIServer() as server:
        client = _client(server, tmp_path / "cache")
        import socket
        _write_claim(tmp_path / "cache" / "claims", socket.gethostname(), _dead_pid()).rename(
            tmp_path / "cache" / "claims" / client.key(MSGS))
        [result] = client.run_all([client.complete(MSGS)], "t")
    assert result.ok and client.stats.claims_taken_over == 1 and client.stats.calls == 1
