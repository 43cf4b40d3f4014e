"""Job summaries and their merge into the run summary."""

from __future__ import annotations

import pytest

from retrieval_response.llm.accounting import CallStats, merge_summaries


def _job(stage, calls, cost=None, failures=None, seconds=1.0):
    stats = CallStats(requests=calls + 1, cache_hits=1, calls=calls, prompt_tokens=10 * calls)
    for _ in range(calls):
        stats.add_cost(cost)
    stats.failures_by_reason.update(failures or {})
    return stats.summary(stage, f"{stage}-job", seconds)


def test_job_summary_reports_unknown_cost_as_null():
    unknown = _job("grade", 2)
    assert unknown["cost_usd"] is None and unknown["cost_unknown_calls"] == 2
    known = _job("grade", 2, cost=0.25)
    assert known["cost_usd"] == pytest.approx(0.5) and known["cost_unknown_calls"] == 0


def test_merge_sums_totals_and_per_stage():
    jobs = [_job("answer_topk", 3, cost=0.1, failures={"empty_answer": 1}, seconds=2.0),
            _job("answer_topk", 1, failures={"empty_answer": 2, "api_error:BadRequestError": 1}, seconds=3.0),
            _job("grade", 4, seconds=5.0)]
    run = merge_summaries(jobs)
    assert run["total"]["calls"] == 8 and run["total"]["jobs"] == 3 and run["total"]["seconds"] == 10.0
    assert run["total"]["cost_usd"] == pytest.approx(0.3) and run["total"]["cost_unknown_calls"] == 5
    topk = run["stages"]["answer_topk"]
    assert topk["failures_by_reason"] == {"api_error:BadRequestError": 1, "empty_answer": 3}
    assert topk["seconds"] == 5.0 and topk["prompt_tokens"] == 40
    assert run["stages"]["grade"]["cost_usd"] is None
