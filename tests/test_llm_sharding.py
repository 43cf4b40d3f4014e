"""Shards of LLM work (retrieval_response.llm.sharding) and the threads of an LLM job."""

from __future__ import annotations

import re

import polars as pl
import pytest

from retrieval_response.llm.jobs import job_threads
from retrieval_response.llm.sharding import SHARD_PATTERN, parse_shard, select_shard, shard_names

pytestmark = pytest.mark.unit


def test_shard_names_parse_back_and_match_the_pattern():
    names = shard_names(3)
    assert names == ["1-of-3", "2-of-3", "3-of-3"]
    assert [parse_shard(name) for name in names] == [(1, 3), (2, 3), (3, 3)]
    assert all(re.fullmatch(SHARD_PATTERN, name) for name in names)


@pytest.mark.parametrize("name", ["0-of-3", "4-of-3"])
def test_shard_outside_its_count_is_refused(name):
    with pytest.raises(ValueError):
        parse_shard(name)


def test_shards_partition_the_queries_and_keep_a_query_whole():
    table = pl.DataFrame({"id": [f"q{i}" for i in range(40) for _ in range(2)], "row": range(80)})
    parts = [select_shard(table, name) for name in shard_names(4)]
    assert sum(part.height for part in parts) == table.height
    ids = [set(part["id"]) for part in parts]
    assert set().union(*ids) == set(table["id"])
    assert sum(len(s) for s in ids) == len(set(table["id"]))


def test_a_local_model_job_takes_the_runs_cores_a_remote_one_takes_one():
    assert job_threads({"model": "llamacpp/qwen"}, 6) == 6
    assert job_threads({"model": "llamacpp/qwen"}, None) == 1
    assert job_threads({"model": "openai/gpt-4o-mini"}, 6) == 1
    assert job_threads(None, 6) == 1
