"""What a job did with the LLM: counters per job, and their merge into a run summary.

Counters: ``requests`` (logical requests asked of the client, one per prompt per sample),
``cache_hits`` (requests answered from the response cache, or by an identical request already
in flight), ``calls`` (provider attempts actually made, retries included), ``retries`` (attempts
after a failed one), ``retries_by_reason``, ``failures_by_reason`` (requests that ended without
a response, empty answers, unparseable grades), ``prompt_tokens`` and ``completion_tokens``
(provider usage of the calls made), ``cached_prompt_tokens`` (prompt tokens the provider reused
from its prompt cache instead of evaluating them, where it reports them), ``cost_usd`` (sum over calls whose price litellm knows; None
when no call's price was known) and ``cost_unknown_calls``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

_COUNTS = ("requests", "cache_hits", "calls", "retries", "prompt_tokens", "cached_prompt_tokens", "completion_tokens",
           "cost_unknown_calls")
_REASONS = ("retries_by_reason", "failures_by_reason")
_JOB_COUNTS = ("samples",)  # added to job summaries by the workflow jobs
_JOB_REASONS = ("samples_by_status",)


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


def _merge(summaries: list[dict]) -> dict:
    costs = [s["cost_usd"] for s in summaries if s.get("cost_usd") is not None]
    merged = {name: sum(s.get(name, 0) for s in summaries) for name in _COUNTS + _JOB_COUNTS}
    for name in _REASONS + _JOB_REASONS:
        total: Counter = Counter()
        for s in summaries:
            total.update(s.get(name, {}))
        merged[name] = dict(sorted(total.items()))
    return {"jobs": len(summaries), "seconds": round(sum(s.get("seconds", 0.0) for s in summaries), 3),
            **merged, "cost_usd": sum(costs) if costs else None}


def merge_summaries(summaries: list[dict]) -> dict:
    """Run summary: totals over all job summaries plus the same totals per stage (counters
    summed, ``*_by_*`` counters merged, ``cost_usd`` None when no job knew a price); ``seconds``
    is the sum of job wall times (the time spent per stage, not the elapsed run time)."""
    stages = sorted({s["stage"] for s in summaries})
    return {"total": _merge(summaries),
            "stages": {st: _merge([s for s in summaries if s["stage"] == st]) for st in stages}}
