"""Order of calls in ``LLMClient.run_all`` with groups: a group's tasks run back to back in input
order, at most ``pacing.concurrency`` groups at once, groups started in order of first appearance."""

from __future__ import annotations

import asyncio
import random

import pytest

from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig

pytestmark = pytest.mark.unit


def _client(tmp_path, concurrency: int) -> LLMClient:
    return LLMClient(ModelConfig("openai/none", api_base="http://127.0.0.1:9/v1"),
                     PacingConfig(concurrency=concurrency), ResponseCache(tmp_path / "cache"))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("concurrency", [1, 2, 4])
def test_groups_run_back_to_back_and_at_most_concurrency_at_once(tmp_path, seed, concurrency):
    rng = random.Random(seed)
    groups = [rng.randrange(7) for _ in range(rng.randrange(1, 40))]
    events: list[tuple[str, int, int]] = []
    running: set[int] = set()
    peak = 0

    async def task(index: int, group: int):
        nonlocal peak
        running.add(group)
        peak = max(peak, len(running))
        events.append(("start", group, index))
        await asyncio.sleep(rng.random() / 500)
        events.append(("end", group, index))
        running.discard(group)
        return index

    client = _client(tmp_path, concurrency)
    results = client.run_all([task(i, g) for i, g in enumerate(groups)], "test", groups=groups)

    assert results == list(range(len(groups)))
    assert peak <= concurrency
    for group in set(groups):
        mine = [(kind, index) for kind, g, index in events if g == group]
        members = [i for i, g in enumerate(groups) if g == group]
        assert mine == [(kind, i) for i in members for kind in ("start", "end")]
    first_start = {}
    for _kind, group, _index in events:
        first_start.setdefault(group, len(first_start))
    appearance = list(dict.fromkeys(groups))
    assert sorted(first_start, key=first_start.get) == appearance


def test_group_keys_must_match_tasks(tmp_path):
    client = _client(tmp_path, 2)

    async def nothing():
        return None

    tasks = [nothing(), nothing()]
    with pytest.raises(ValueError, match="2 tasks"):
        client.run_all(tasks, "test", groups=[1])
    for task in tasks:
        task.close()
