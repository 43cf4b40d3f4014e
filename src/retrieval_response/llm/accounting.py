"""What a job did with the LLM: counters per job, a durable journal of every call, and their merge
into a run summary.

Counters: ``requests`` (logical requests asked of the client, one per prompt per sample),
``cache_hits`` (requests answered from the response cache, by an identical request already in
flight, or by another process that held the key's claim), ``calls`` (provider attempts actually
made, retries included), ``retries`` (attempts after a failed one), ``retries_by_reason``,
``failures_by_reason`` (requests that ended without a response, empty answers, unparseable
grades), ``prompt_tokens`` and ``completion_tokens`` (provider usage of the calls made),
``cached_prompt_tokens`` (prompt tokens the provider took from its prompt cache instead of
evaluating them, where it reports them), ``cost_usd`` (sum over calls whose price litellm knows;
None when no call's price was known), ``cost_unknown_calls``, ``retry_after_capped`` (server waits cut to
``backoff_max_seconds``),
``retry_after_invalid`` (unreadable Retry-After headers, ignored), ``usage_invalid`` (calls whose
reported usage was impossible: see ``usage_count``; their tokens count 0 and their price as
unknown), ``claim_waits`` (requests that
waited for another process's call of the same key) and ``claims_taken_over`` (stale claims of
dead or hung processes taken over).

Journal: every provider call is one JSON line ``{stage, job, model, outcome, prompt_tokens,
completion_tokens, cost_usd, usage_invalid, detail}`` (``outcome`` = ``ok`` or the failure reason of that
attempt; ``detail`` the provider's error message of a call that raised, one line without secrets,
else null; usage and cost null when no response came back; ``usage_invalid`` true when the reported
usage was impossible, and also when a line read back holds an impossible number, as an older
version or a hand edit may leave),
appended with one ``write()`` and fsync'ed to the process's own file
``<folder>/<host>-<pid>-<random>.jsonl`` as soon as the call returns, before its response is
cached. A job killed mid-way leaves its calls in the journal although it never writes a summary,
so the run summary's paid counters (calls, tokens, cost) come from the journal when there is one.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from retrieval_response.llm.cache import append_line, process_file_name

JOURNAL_DIR = "results/llm_journal"  # of a workflow run, relative to its working directory

_COUNTS = ("requests", "cache_hits", "calls", "retries", "prompt_tokens", "cached_prompt_tokens",
           "completion_tokens", "cost_unknown_calls", "retry_after_capped", "retry_after_invalid",
           "usage_invalid", "claim_waits", "claims_taken_over")
USAGE_TOKENS_MAX = 10**9  # tokens of one call beyond any model's context: a larger count is impossible
_USAGE_FIELDS = ("prompt_tokens", "completion_tokens")
_REASONS = ("retries_by_reason", "failures_by_reason")
_JOB_COUNTS = ("samples", "cache_damaged_lines")  # added to job summaries by the workflow jobs
_JOB_REASONS = ("samples_by_status",)
JOURNAL_SCHEMA = {"stage": pl.String, "job": pl.String, "model": pl.String, "outcome": pl.String,
                  "prompt_tokens": pl.Int64, "completion_tokens": pl.Int64, "cost_usd": pl.Float64,
                  "usage_invalid": pl.Boolean, "detail": pl.String}


def usage_count(value: object) -> int | None:
    """``value`` as a token count when it is a possible one: an integer (or an integral float)
    in [0, ``USAGE_TOKENS_MAX``]; None for anything else (negative, fractional, NaN, infinite,
    huge, a string, a list, a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value) if 0 <= value <= USAGE_TOKENS_MAX else None


def possible_cost(value: object) -> float | None:
    """``value`` as a price in USD when it is a finite non-negative number, else None (unknown)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


@dataclass
class CallStats:
    """Mutable counters of one job (see module docstring)."""

    requests: int = 0
    cache_hits: int = 0
    calls: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_unknown_calls: int = 0
    retry_after_capped: int = 0
    retry_after_invalid: int = 0
    usage_invalid: int = 0
    claim_waits: int = 0
    claims_taken_over: int = 0
    cost_usd: float | None = None
    retries_by_reason: Counter = field(default_factory=Counter)
    failures_by_reason: Counter = field(default_factory=Counter)

    def add_cost(self, cost: float | None) -> None:
        """Add one call's price (None = unknown to litellm)."""
        if cost is None:
            self.cost_unknown_calls += 1
        else:
            self.cost_usd = (self.cost_usd or 0.0) + cost

    def summary(self, stage: str, job: str, seconds: float) -> dict:
        """JSON-ready job summary with ``stage``, ``job`` and wall ``seconds``."""
        return {"stage": stage, "job": job, "seconds": round(seconds, 3),
                **{name: getattr(self, name) for name in _COUNTS},
                "cost_usd": self.cost_usd,
                **{name: dict(sorted(getattr(self, name).items())) for name in _REASONS}}


class CallJournal:
    """This process's journal file in ``folder``, its lines labelled with ``stage`` and ``job``
    (see module docstring); the file is created at the first call."""

    def __init__(self, folder: str | os.PathLike, stage: str | None = None, job: str | None = None):
        self.folder = Path(folder)
        self.stage = stage
        self.job = job
        self._fd: int | None = None

    def record(self, model: str, outcome: str, prompt_tokens: int | None, completion_tokens: int | None,
               cost_usd: float | None, usage_invalid: bool = False, detail: str | None = None) -> None:
        """Append one call, durably (``detail``: the error message of a call that raised, secrets
        removed by the caller)."""
        if self._fd is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.folder / process_file_name(), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        line = {"stage": self.stage, "job": self.job, "model": model, "outcome": outcome,
                "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                "cost_usd": cost_usd, "usage_invalid": usage_invalid, "detail": detail}
        append_line(self._fd, (json.dumps(line, separators=(",", ":")) + "\n").encode("utf-8"))

    def close(self) -> None:
        """Close the file (a later call opens a new one)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _journal_row(line: dict) -> dict:
    """A journal line in ``JOURNAL_SCHEMA``: impossible usage (``usage_count``) becomes 0 and
    flags ``usage_invalid``; an impossible price becomes unknown (null); tokens stay null only
    where the call had no response."""
    row = {name: line.get(name) if isinstance(line.get(name), str) else None
           for name in ("stage", "job", "model", "outcome")}
    answered = any(line.get(name) is not None for name in _USAGE_FIELDS)
    counts = {name: usage_count(line.get(name)) for name in _USAGE_FIELDS}
    invalid = line.get("usage_invalid") is True or (answered and None in counts.values())
    if answered:
        counts = {name: count or 0 for name, count in counts.items()}
    return {**row, **counts, "cost_usd": None if invalid else possible_cost(line.get("cost_usd")),
            "usage_invalid": invalid, "detail": line.get("detail") if isinstance(line.get("detail"), str) else None}


def read_journal(folder: str | os.PathLike) -> pl.DataFrame:
    """Every complete line of every journal file in ``folder`` (none when it does not exist), in
    ``JOURNAL_SCHEMA`` (see ``_journal_row``); a torn last line of a killed writer, or a line that
    is no JSON object, is skipped."""
    rows = []
    for path in sorted(Path(folder).glob("*.jsonl")):
        data = path.read_bytes()
        for line in data[:data.rfind(b"\n") + 1].splitlines():
            try:
                parsed = json.loads(line)
            except ValueError:
                continue
            if isinstance(parsed, dict):
                rows.append(_journal_row(parsed))
    return pl.DataFrame(rows, schema=JOURNAL_SCHEMA, orient="row") if rows else pl.DataFrame(schema=JOURNAL_SCHEMA)


def _counter(value: object) -> int:
    """A job summary's counter as summed: a non-negative integer as it is, anything else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _merge(summaries: list[dict]) -> dict:
    costs = [c for s in summaries if (c := possible_cost(s.get("cost_usd"))) is not None]
    merged = {name: sum(_counter(s.get(name, 0)) for s in summaries) for name in _COUNTS + _JOB_COUNTS}
    for name in _REASONS + _JOB_REASONS:
        total: Counter = Counter()
        for s in summaries:
            total.update(s.get(name, {}))
        merged[name] = dict(sorted(total.items()))
    return {"jobs": len(summaries), "seconds": round(sum(s.get("seconds", 0.0) for s in summaries), 3),
            **merged, "cost_usd": sum(costs) if costs else None}


def _paid(calls: pl.DataFrame, in_summaries: int) -> dict:
    """Paid counters of journal lines ``calls`` (a call without a response has no usage and no
    price), and how many of them no job summary counts."""
    priced = calls["cost_usd"].drop_nulls()
    answered = calls["prompt_tokens"].is_not_null().sum()
    outcomes = Counter(dict(calls["outcome"].value_counts().iter_rows()))
    return {"calls": calls.height, "prompt_tokens": int(calls["prompt_tokens"].sum()),
            "completion_tokens": int(calls["completion_tokens"].sum()),
            "cost_unknown_calls": answered - priced.len(),
            "cost_usd": float(priced.sum()) if priced.len() else None,
            "usage_invalid": int(calls["usage_invalid"].sum()),
            "calls_by_outcome": dict(sorted(outcomes.items())),
            "calls_without_job_summary": calls.height - in_summaries}


def _with_journal(merged: dict, calls: pl.DataFrame | None) -> dict:
    if calls is None or calls.is_empty():
        return merged
    return {**merged, **_paid(calls, merged["calls"])}


def merge_summaries(summaries: list[dict], journal: pl.DataFrame | None = None) -> dict:
    """Run summary: totals over all job summaries plus the same totals per stage (counters
    summed, ``*_by_*`` counters merged, ``cost_usd`` None when no job knew a price); ``seconds``
    is the sum of job wall times (the time spent per stage, not the elapsed run time).

    With a non-empty ``journal`` (``read_journal``), ``calls``, tokens and cost of the total and of
    each stage are those of its lines, so calls of killed jobs count too, next to
    ``calls_by_outcome`` and ``calls_without_job_summary`` (journal calls minus the calls of the
    job summaries: calls of killed or failed jobs, and of jobs whose outputs were replaced since)."""
    if journal is not None:
        journal = journal.with_columns(pl.col("stage").fill_null("unknown"))
    stages = sorted({s["stage"] for s in summaries}
                    | (set(journal["stage"]) if journal is not None else set()))
    return {"total": _with_journal(_merge(summaries), journal),
            "stages": {st: _with_journal(_merge([s for s in summaries if s["stage"] == st]),
                                         None if journal is None else journal.filter(pl.col("stage") == st))
                       for st in stages}}
