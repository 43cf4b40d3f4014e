"""Job summaries and their merge into the run summary."""

from __future__ import annotations

import pytest

from retrieval_response.llm.accounting import (
    CallJournal,
    CallStats,
    merge_summaries,
    read_journal,
)

pytestmark = pytest.mark.unit


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


def _journal(folder, stage, job, calls, outcome="ok", cost=None):
    journal = CallJournal(folder, stage, job)
    for _ in range(calls):
        journal.record("openai/m", outcome, 10, 2, cost)
    journal.close()


def test_the_journal_counts_calls_of_jobs_that_never_wrote_a_summary(tmp_path):
    folder = tmp_path / "journal"
    _journal(folder, "answer_topk", "finished", 3, cost=0.1)
    _journal(folder, "answer_topk", "killed", 4, cost=0.1)  # killed: no job summary
    _journal(folder, "grade", "killed", 2, outcome="retries_exhausted:server_error")
    CallJournal(folder, "grade", "killed").record("openai/m", "server_error", None, None, None)
    with open(next(folder.glob("*.jsonl")), "ab") as handle:
        handle.write(b'{"stage":"grade","job":"torn","mod')  # a writer killed mid-line
    jobs = [_job("answer_topk", 3, cost=0.1)]
    run = merge_summaries(jobs, read_journal(folder))
    topk, grade = run["stages"]["answer_topk"], run["stages"]["grade"]
    assert (topk["calls"], topk["calls_without_job_summary"], topk["prompt_tokens"]) == (7, 4, 70)
    assert topk["cost_usd"] == pytest.approx(0.7) and topk["jobs"] == 1 and topk["requests"] == 4
    assert (grade["calls"], grade["jobs"], grade["cost_usd"], grade["cost_unknown_calls"]) == (3, 0, None, 2)
    assert grade["calls_by_outcome"] == {"retries_exhausted:server_error": 2, "server_error": 1}
    assert grade["prompt_tokens"] == 20  # the failed call without a response has no usage
    assert run["total"]["calls"] == 10 and run["total"]["calls_without_job_summary"] == 7
    assert run["total"]["cost_usd"] == pytest.approx(0.7)


def test_without_a_journal_the_summaries_alone_count(tmp_path):
    jobs = [_job("grade", 4, cost=0.25)]
    assert merge_summaries(jobs, read_journal(tmp_path / "none")) == merge_summaries(jobs)
