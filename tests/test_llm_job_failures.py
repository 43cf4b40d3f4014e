"""Which sample statuses are failed requests of a job, and the one line a job says about them."""

from __future__ import annotations

import logging

import polars as pl
import pytest

from retrieval_response.infra.errors import JobFailure
from retrieval_response.llm.jobs import call_failures, check_failures, model_place

pytestmark = pytest.mark.unit

HOSTED = {"model": "openai/m", "api_base": "https://user:SECRET@host.example/v1?token=SECRET"}


def _status(*pairs: tuple[str, int]) -> pl.Series:
    return pl.Series("status", [s for s, n in pairs for _ in range(n)], dtype=pl.String)


def test_only_failed_requests_count_and_inherited_statuses_are_not_asked():
    status = _status(("graded", 5), ("retries_exhausted:server_error", 2), ("api_error:AuthenticationError", 1),
                     ("unparseable_grade", 1), ("prompt_exceeds_context", 1), ("bad_response:null_content", 1),
                     ("empty_answer", 1), ("topk_answer:retries_exhausted:timeout", 3), ("ideal_answer:missing", 1))
    failed, asked = call_failures(status)
    assert failed == {"retries_exhausted:server_error": 2, "api_error:AuthenticationError": 1}
    assert asked == 12


def test_where_the_calls_went_has_no_secret():
    assert model_place(HOSTED) == "openai/m at https://host.example/v1"
    assert model_place({"model": "llamacpp/q"}) == "llamacpp/q on the run's llama-server"
    assert model_place({"model": "gpt-4o-mini"}) == "gpt-4o-mini"


def test_above_the_share_the_job_fails_with_one_line_naming_the_reasons(capsys):
    status = _status(("ok", 7), ("retries_exhausted:connection_error", 2), ("api_error:NotFoundError", 1))
    with pytest.raises(JobFailure) as failure:
        check_failures("answer_topk", "d/E/Nc8_Np2/1-of-1", status, HOSTED, 0.1, logging.getLogger("test"))
    assert str(failure.value) == (
        "answer_topk d/E/Nc8_Np2/1-of-1: 3 of 10 LLM requests failed: retries_exhausted:connection_error 2, "
        "api_error:NotFoundError 1 (openai/m at https://host.example/v1); more than llm.max_failed_share 0.1: "
        "no output, a rerun sends the failed requests again (the others come from the cache)")
    assert "\n" not in str(failure.value) and capsys.readouterr().err == ""  # the excepthook prints it


def test_within_the_share_the_job_warns_on_stderr_and_in_its_log(capsys, caplog):
    status = _status(("ok", 9), ("retries_exhausted:rate_limited", 1))
    with caplog.at_level(logging.WARNING, logger="test"):
        check_failures("grade", "d/E/Nc8_Np2/1-of-1", status, HOSTED, 0.1, logging.getLogger("test"))
    line = ("grade d/E/Nc8_Np2/1-of-1: 1 of 10 LLM requests failed: retries_exhausted:rate_limited 1 "
            "(openai/m at https://host.example/v1); within llm.max_failed_share 0.1: kept as failed samples "
            "(--forcerun grade asks for them again)")
    assert capsys.readouterr().err == f"WARNING {line}\n"
    assert [r.getMessage() for r in caplog.records] == [line]


def test_no_failure_says_nothing_and_model_answers_are_no_failures(capsys):
    check_failures("grade", "j", _status(("graded", 3), ("unparseable_grade", 2)), HOSTED, 0, logging.getLogger("t"))
    assert capsys.readouterr().err == ""
