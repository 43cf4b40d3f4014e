"""Split LLM work into shards by query id, so that a failed cluster job costs one shard.

A query's shard depends only on its id and the number of shards (blake2b of the id, modulo
the number of shards): stable across runs, machines, library versions and the other queries.
Shard ``i`` (1-based) of ``n`` is named ``<i>-of-<n>`` in paths (:data:`SHARD_PATTERN`).
"""

from __future__ import annotations

import hashlib

import polars as pl

SHARD_PATTERN = r"[0-9]+-of-[0-9]+"
"""Regular expression of a shard name (the workflow's wildcard constraint)."""


def shard_names(count: int) -> list[str]:
    """Path components of the ``count`` shards of a unit: ``1-of-<count>`` ... ``<count>-of-<count>``."""
    return [f"{index}-of-{count}" for index in range(1, count + 1)]


def parse_shard(name: str) -> tuple[int, int]:
    """(index, count) of a ``<index>-of-<count>`` shard name; ValueError unless 1 <= index <= count."""
    index, count = (int(part) for part in name.split("-of-"))
    if not 1 <= index <= count:
        raise ValueError(f"shard {name!r}: need 1 <= index <= count")
    return index, count


def shard_of_id(query_id: str, count: int) -> int:
    """1 + (first 8 bytes of blake2b(id), big-endian) mod ``count``."""
    digest = hashlib.blake2b(query_id.encode("utf-8"), digest_size=8).digest()
    return 1 + int.from_bytes(digest, "big") % count


def select_shard(table: pl.DataFrame, name: str) -> pl.DataFrame:
    """Rows of ``table`` (with an ``id`` column) whose query falls into shard ``name``."""
    index, count = parse_shard(name)
    ids = table["id"].unique().to_list()
    mine = [query_id for query_id in ids if shard_of_id(query_id, count) == index]
    return table.filter(pl.col("id").is_in(mine))
