"""A damaged line in a response-cache shard (junk bytes, truncated JSON behind an intact key
prefix, a record of the wrong shape) is skipped, counted and logged once at WARNING, never
raised; the rerun asks for that one request again and the cache heals."""

from __future__ import annotations

import json
import logging

import pytest

from retrieval_response.llm.cache import ResponseCache, request_key
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig
from retrieval_response.testing.openai_server import OpenAIServer

pytestmark = pytest.mark.unit

PARAMS = {"temperature": 0.0, "max_tokens": 10, "seed": 0}


def _key(i: int) -> str:
    return request_key("m", [{"role": "user", "content": f"q{i}"}], PARAMS, None)


def _record(key: str, **fields) -> bytes:
    return (json.dumps({"key": key, "content": "answer", "logprobs": None, **fields},
                       separators=(",", ":")) + "\n").encode()


# Ways a line of key k can be damaged, each a function of (k, the intact line).
DAMAGES = {
    "truncated_json": lambda k, line: line[:len(line) // 2] + b"\n",
    "truncated_after_key": lambda k, line: line[:75] + b"\n",
    "binary_junk": lambda k, line: b"\x00\xff\xfe\x80 junk \x1b[0m\n",
    "key_prefix_then_junk": lambda k, line: line[:74] + b"\xff\x00\xfe}\n",
    "not_utf8_inside": lambda k, line: line.replace(b"answer", b"\xff\xfeans"),
    "content_number": lambda k, line: _record(k, content=5),
    "content_null": lambda k, line: _record(k, content=None),
    "logprobs_string": lambda k, line: _record(k, logprobs="x"),
    "logprob_token_number": lambda k, line: _record(k, logprobs=[{"token": 1, "logprob": -0.1}]),
    "top_logprobs_junk": lambda k, line: _record(k, logprobs=[{"token": "4", "logprob": -0.1, "top_logprobs": [3]}]),
    "json_array": lambda k, line: json.dumps([k, "answer"]).encode() + b"\n",
    "json_string": lambda k, line: json.dumps(k).encode() + b"\n",
    "key_not_string": lambda k, line: json.dumps({"key": 7, "content": "a"}).encode() + b"\n",
    "deep_nesting": lambda k, line: b'{"key":"' + k.encode() + b'","content":' + b"[" * 100000 + b"\n",
    "empty_line": lambda k, line: b"\n",
}


def _shard_with(tmp_path, damage: str) -> list[str]:
    keys = [_key(i) for i in range(3)]
    lines = [_record(k, content=f"answer {i}") for i, k in enumerate(keys)]
    lines[1] = DAMAGES[damage](keys[1], lines[1])
    (tmp_path / "old-shard.jsonl").write_bytes(b"".join(lines))
    return keys


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_line_is_skipped_counted_and_logged_once(tmp_path, caplog, damage):
    keys = _shard_with(tmp_path, damage)
    caplog.set_level(logging.WARNING, "retrieval_response")
    cache = ResponseCache(tmp_path)
    assert [cache.get(k) is None for k in keys] == [False, True, False]
    assert cache.get(keys[0])["content"] == "answer 0" and cache.get(keys[2])["content"] == "answer 2"
    assert cache.get(keys[1]) is None and cache.damaged_lines == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "damaged line" in warnings[0].getMessage()
    assert "old-shard.jsonl" in warnings[0].getMessage()


@pytest.mark.parametrize("damage", DAMAGES)
def test_the_recomputed_record_heals_the_key_for_every_later_reader(tmp_path, damage):
    keys = _shard_with(tmp_path, damage)
    writer = ResponseCache(tmp_path)
    assert writer.get(keys[1]) is None
    writer.put(keys[1], {"content": "recomputed", "logprobs": None})
    writer.close()
    later = ResponseCache(tmp_path)
    assert later.get(keys[1])["content"] == "recomputed"
    assert later.damaged_lines == 1  # still reported, no longer asked again


def test_many_damaged_lines_are_logged_once_and_all_counted(tmp_path, caplog):
    keys = [_key(i) for i in range(len(DAMAGES))]
    lines = [damage(k, _record(k)) for k, damage in zip(keys, DAMAGES.values(), strict=True)]
    (tmp_path / "junk.jsonl").write_bytes(b"".join(lines))
    caplog.set_level(logging.WARNING, "retrieval_response")
    cache = ResponseCache(tmp_path)
    assert all(cache.get(k) is None for k in keys)
    assert cache.damaged_lines == len(DAMAGES)
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


@pytest.mark.parametrize("damage", ["truncated_json", "key_prefix_then_junk", "content_null", "logprobs_string"])
def test_a_rerun_asks_again_for_the_damaged_entry_only_and_then_never(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("RR_TEST_KEY", "k")
    messages = [[{"role": "user", "content": f"question {i}"}] for i in range(4)]
    pacing = PacingConfig(max_retries=0, timeout_seconds=5.0)

    def run(server):
        model = ModelConfig("openai/loopback", api_base=server.base_url, api_key_env="RR_TEST_KEY")
        client = LLMClient(model, pacing, ResponseCache(tmp_path / "cache"))
        before = server.stats()["requests"]
        results = client.run_all([client.complete(m) for m in messages], "t")
        client.cache.close()
        return client, results, server.stats()["requests"] - before

    with OpenAIServer() as server:
        first, _, paid = run(server)
        assert paid == 4
        [shard] = (tmp_path / "cache").glob("*.jsonl")
        damaged_key = first.key(messages[2])
        lines = shard.read_bytes().splitlines(keepends=True)
        lines = [DAMAGES[damage](damaged_key, line) if line.startswith(f'{{"key":"{damaged_key}'.encode()) else line
                 for line in lines]
        shard.write_bytes(b"".join(lines))
        rerun, results, paid = run(server)
        assert all(r.ok for r in results) and paid == 1 and rerun.cache.damaged_lines == 1
        healed, results, paid = run(server)
        assert all(r.ok and r.cached for r in results) and paid == 0
