"""The content-addressed response cache: keys, durability, torn lines, concurrent writers."""

from __future__ import annotations

import json
import multiprocessing

import pytest

from retrieval_response.llm.cache import ResponseCache, public_api_base, request_key

pytestmark = pytest.mark.unit

MSGS = [{"role": "user", "content": "hello"}]
PARAMS = {"temperature": 0, "max_tokens": 10, "seed": 0}


def test_key_depends_on_model_messages_params_and_public_api_base_only():
    base = request_key("openai/m", MSGS, PARAMS, "http://h:1/v1")
    assert base == request_key("openai/m", [dict(m) for m in MSGS], dict(reversed(PARAMS.items())), "http://h:1/v1/")
    assert base == request_key("openai/m", MSGS, PARAMS, "http://user:secret@h:1/v1?api-key=secret")
    assert base != request_key("openai/m2", MSGS, PARAMS, "http://h:1/v1")
    assert base != request_key("openai/m", [{"role": "user", "content": "hello!"}], PARAMS, "http://h:1/v1")
    assert base != request_key("openai/m", MSGS, {**PARAMS, "seed": 1}, "http://h:1/v1")
    assert base != request_key("openai/m", MSGS, PARAMS, "http://h:2/v1")
    assert public_api_base("https://u:pw@api.example.com/v1?key=abc#x") == "https://api.example.com/v1"


def test_put_is_durable_and_seen_by_a_fresh_reader(tmp_path):
    cache = ResponseCache(tmp_path)
    key = request_key("m", MSGS, PARAMS, None)
    assert cache.get(key) is None
    cache.put(key, {"content": "hi ✓"})
    assert cache.get(key)["content"] == "hi ✓"
    assert ResponseCache(tmp_path).get(key) == {"key": key, "content": "hi ✓"}


def test_torn_last_line_is_ignored_and_other_records_survive(tmp_path):
    writer = ResponseCache(tmp_path)
    keys = [request_key("m", [{"role": "user", "content": str(i)}], PARAMS, None) for i in range(3)]
    for k in keys[:2]:
        writer.put(k, {"content": k[:6]})
    with open(writer._shard, "ab") as handle:  # a writer killed in the middle of a record
        handle.write(b'{"key":"' + keys[2].encode() + b'","content":"trunc')
    reader = ResponseCache(tmp_path)
    assert [reader.get(k) and reader.get(k)["content"] for k in keys] == [keys[0][:6], keys[1][:6], None]


def _write_records(root: str, worker: int, n: int, shared: int) -> None:
    cache = ResponseCache(root)
    for i in range(n):
        name = f"shared-{i}" if i < shared else f"w{worker}-{i}"
        cache.put(request_key("m", [{"role": "user", "content": name}], PARAMS, None),
                  {"content": name, "pad": "x" * (i * 37 % 3000)})
    cache.close()


def test_concurrent_writers_in_several_processes(tmp_path):
    workers, n, shared = 4, 150, 40
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_records, args=(str(tmp_path), w, n, shared)) for w in range(workers)]
    for p in procs:
        p.start()
    reader = ResponseCache(tmp_path)
    while any(p.is_alive() for p in procs):  # a reader during the writes only ever sees whole records
        for key in list(reader.keys())[:50]:
            assert reader.get(key)["key"] == key
    for p in procs:
        p.join()
        assert p.exitcode == 0
    reader = ResponseCache(tmp_path)
    expected = {f"shared-{i}" for i in range(shared)} | {f"w{w}-{i}" for w in range(workers) for i in range(shared, n)}
    assert len(reader) == len(expected)
    assert {reader.get(request_key("m", [{"role": "user", "content": e}], PARAMS, None))["content"]
            for e in expected} == expected
    for shard in tmp_path.glob("*.jsonl"):
        for line in shard.read_bytes().splitlines():
            json.loads(line)


def test_a_miss_finds_records_written_meanwhile_by_another_writer(tmp_path):
    reader, lazy = ResponseCache(tmp_path, miss_refresh_s=0.0), ResponseCache(tmp_path, miss_refresh_s=3600)
    key = request_key("m", MSGS, PARAMS, None)
    ResponseCache(tmp_path).put(key, {"content": "from another job"})
    assert reader.get(key)["content"] == "from another job"
    assert lazy.get(key) is None  # looked too recently; an explicit refresh finds it
    lazy.refresh()
    assert lazy.get(key)["content"] == "from another job"
