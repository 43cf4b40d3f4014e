"""Usage numbers a server may report (negative, fractional, NaN, huge, not numbers) never reach the
counters: a call's impossible count is 0 and flags the call ``usage_invalid`` (its price unknown),
and journal lines or job summaries holding such numbers (an older version, a hand edit) merge
into an LLM summary that stays finite and JSON-clean, run after run."""

from __future__ import annotations

import json
import math

import pytest

from retrieval_response.llm.accounting import (
    USAGE_TOKENS_MAX,
    CallJournal,
    merge_summaries,
    read_journal,
    usage_count,
)
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig
from retrieval_response.testing.openai_server import OpenAIServer

pytestmark = pytest.mark.unit

FAST = PacingConfig(max_retries=0, timeout_seconds=5.0, backoff_base_seconds=0.01)


@pytest.mark.parametrize("value", [-1, -24_000_000, 1.5, math.nan, math.inf, -math.inf, 1e20, 2**70,
                                   USAGE_TOKENS_MAX + 1, "12", "NaN", [1], {"n": 1}, True, None])
def test_an_impossible_count_is_refused(value):
    assert usage_count(value) is None


@pytest.mark.parametrize("value, count", [(0, 0), (5, 5), (5.0, 5), (USAGE_TOKENS_MAX, USAGE_TOKENS_MAX)])
def test_a_possible_count_is_kept(value, count):
    assert usage_count(value) == count


@pytest.mark.parametrize("usage, field", [
    ({"prompt_tokens": -24_000_000}, "prompt_tokens"),
    ({"prompt_tokens": 2**70}, "prompt_tokens"),
    ({"completion_tokens": -1}, "completion_tokens"),
    ({"completion_tokens": USAGE_TOKENS_MAX + 1}, "completion_tokens"),
    ({"prompt_tokens_details": {"cached_tokens": -3}}, "cached_prompt_tokens"),
])
def test_a_response_with_impossible_usage_is_an_answer_flagged_usage_invalid(tmp_path, monkeypatch, usage, field):
    monkeypatch.setenv("RR_TEST_KEY", "k")
    with OpenAIServer(usage=usage) as server:
        model = ModelConfig("openai/gpt-4o-mini", api_base=server.base_url, api_key_env="RR_TEST_KEY")
        client = LLMClient(model, FAST, ResponseCache(tmp_path / "cache"),
                           journal=CallJournal(tmp_path / "journal", "answer", "job"))
        messages = [{"role": "user", "content": "question"}]
        [result] = client.run_all([client.complete(messages)], "t")
    assert result.ok and result.content.startswith("Answer")
    record = ResponseCache(tmp_path / "cache").get(client.key(messages))
    assert record["usage_invalid"] is True and record[field] == 0 and record["cost_usd"] is None
    assert all(0 <= record[name] <= USAGE_TOKENS_MAX
               for name in ("prompt_tokens", "cached_prompt_tokens", "completion_tokens"))
    assert client.stats.usage_invalid == 1 and client.stats.cost_unknown_calls == 1
    assert client.stats.prompt_tokens == record["prompt_tokens"] >= 0
    [line] = read_journal(tmp_path / "journal").to_dicts()
    assert line["usage_invalid"] is True and line["cost_usd"] is None
    assert line["prompt_tokens"] == record["prompt_tokens"] and line["completion_tokens"] == record["completion_tokens"]


@pytest.mark.parametrize("usage", [{}, {"prompt_tokens": "12"}, {"prompt_tokens": None}])
def test_a_response_with_possible_usage_is_not_flagged(tmp_path, monkeypatch, usage):
    monkeypatch.setenv("RR_TEST_KEY", "k")
    with OpenAIServer(usage=usage) as server:
        model = ModelConfig("openai/gpt-4o-mini", api_base=server.base_url, api_key_env="RR_TEST_KEY")
        client = LLMClient(model, FAST, ResponseCache(tmp_path / "cache"))
        [result] = client.run_all([client.complete([{"role": "user", "content": "q"}])], "t")
    assert result.ok and client.stats.usage_invalid == 0 and client.stats.cost_unknown_calls == 0


# Journal lines as an older version or a hand edit may have left them (raw JSON text).
HOSTILE_LINES = [
    '{"stage":"answer","job":"a","model":"m","outcome":"ok","prompt_tokens":1e20,"completion_tokens":5,"cost_usd":0.1}',
    '{"stage":"answer","job":"a","model":"m","outcome":"ok","prompt_tokens":-24000000,"completion_tokens":5,"cost_usd":-3.6}',
    '{"stage":"answer","job":"a","model":"m","outcome":"ok","prompt_tokens":NaN,"completion_tokens":Infinity,"cost_usd":NaN}',
    '{"stage":"grade","job":"g","model":"m","outcome":"ok","prompt_tokens":"12","completion_tokens":[1],"cost_usd":"x"}',
    '{"stage":"grade","job":"g","model":"m","outcome":"ok","prompt_tokens":1180591620717411303424,"completion_tokens":2.5,"cost_usd":1e400}',
    '[1, 2, 3]',
    '"a string"',
    '{"stage":7,"job":null,"outcome":"timeout","prompt_tokens":null,"completion_tokens":null,"cost_usd":null}',
]
GOOD_LINE = '{"stage":"grade","job":"g","model":"m","outcome":"ok","prompt_tokens":100,"completion_tokens":4,"cost_usd":0.5}'
HOSTILE_SUMMARIES = [
    {"stage": "answer", "job": "a", "calls": 3, "prompt_tokens": -24_000_000, "completion_tokens": 1e20,
     "cost_usd": math.nan, "requests": "many"},
    {"stage": "grade", "job": "g", "calls": 2, "prompt_tokens": 2**70, "completion_tokens": True, "cost_usd": -1.0},
]


def _summary_of(folder):
    """What the llm_summary job writes: job summaries merged with the call journal."""
    return json.dumps(merge_summaries(HOSTILE_SUMMARIES, read_journal(folder)), allow_nan=False)


# (line, journal calls it adds, whether its usage is impossible)
LINE_OUTCOMES = [(line, 1, True) for line in HOSTILE_LINES[:5]] + [
    (HOSTILE_LINES[5], 0, False), (HOSTILE_LINES[6], 0, False), (HOSTILE_LINES[7], 1, False)]


@pytest.mark.parametrize("line, calls, impossible", LINE_OUTCOMES)
def test_the_llm_summary_survives_a_journal_line_of_impossible_usage_on_every_rerun(tmp_path, line, calls, impossible):
    (tmp_path / "old.jsonl").write_text(f"{GOOD_LINE}\n{line}\n")
    first, second = _summary_of(tmp_path), _summary_of(tmp_path)
    assert first == second
    total = json.loads(first)["total"]
    assert 100 <= total["prompt_tokens"] <= 100 + USAGE_TOKENS_MAX
    assert 4 <= total["completion_tokens"] <= 4 + USAGE_TOKENS_MAX
    assert total["cost_usd"] == 0.5, "an impossible line's price is unknown, not added"
    assert total["usage_invalid"] == int(impossible) and total["calls"] == 1 + calls


def test_the_llm_summary_of_every_impossible_line_together(tmp_path):
    (tmp_path / "old.jsonl").write_text("\n".join([GOOD_LINE, *HOSTILE_LINES]) + "\n")
    total = json.loads(_summary_of(tmp_path))["total"]
    assert total["usage_invalid"] == 5 and total["calls"] == 7
    assert total["prompt_tokens"] == 100  # every other prompt count is impossible
    assert total["completion_tokens"] == 4 + 5 + 5 and total["cost_usd"] == 0.5
    assert total["cost_unknown_calls"] == 5
