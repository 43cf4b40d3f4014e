"""The ``llm`` resource and the per-job pacing follow the model kind: hosted models' jobs share
the run's cap and rates (``llm.pacing.jobs``), a local model's job holds the whole cap."""

from __future__ import annotations

import pytest

from retrieval_response.infra.errors import InputError
from retrieval_response.llm.config import PacingConfig
from retrieval_response.llm.jobs import DEFAULT_LLM_JOBS, job_pacing, llm_cap, llm_jobs, llm_units

pytestmark = pytest.mark.unit

HOSTED = {"model": "openai/gpt-4o-mini"}
LOCAL = {"model": "llamacpp/qwen2.5-coder-1.5b-instruct"}


def test_a_hosted_job_gets_its_share_of_the_run_rates():
    pacing = {"jobs": 4, "concurrency": 8, "requests_per_minute": 2000, "tokens_per_minute": 800000,
              "max_retries": 3}
    assert job_pacing(pacing, HOSTED) == PacingConfig(concurrency=8, requests_per_minute=500,
                                                      tokens_per_minute=200000, max_retries=3)


def test_a_local_job_keeps_the_whole_rates():
    pacing = {"jobs": 4, "requests_per_minute": 600, "tokens_per_minute": None}
    assert job_pacing(pacing, LOCAL) == PacingConfig(requests_per_minute=600)


def test_unlimited_rates_stay_unlimited_and_jobs_defaults():
    assert job_pacing({}, HOSTED) == PacingConfig()
    assert llm_jobs({}) == DEFAULT_LLM_JOBS == 4
    assert job_pacing({"requests_per_minute": 100}, HOSTED).requests_per_minute == 100 / DEFAULT_LLM_JOBS


@pytest.mark.parametrize("jobs", [1, 3, 4])
def test_hosted_jobs_together_stay_within_the_configured_rates(jobs):
    pacing = {"jobs": jobs, "requests_per_minute": 90, "tokens_per_minute": 30000}
    share = job_pacing(pacing, HOSTED)
    assert share.requests_per_minute * jobs == pytest.approx(90)
    assert share.tokens_per_minute * jobs == pytest.approx(30000)


def test_the_resource_follows_the_model_kind():
    assert llm_units([HOSTED], 4) == 1
    assert llm_units([HOSTED, HOSTED], 4) == 1
    assert llm_units([LOCAL], 4) == 4
    assert llm_units([HOSTED, LOCAL], 6) == 6, "a job with one local model holds the whole cap"
    assert llm_units([None], 4) == 1


def test_the_cap_comes_from_the_config_unless_a_smaller_one_is_given():
    assert llm_cap(None, 4, "c.yaml") == 4
    assert llm_cap(2, 4, "c.yaml") == 2
    assert llm_cap(4, 4, "c.yaml") == 4
    with pytest.raises(InputError, match=r"^c\.yaml: config key llm\.pacing\.jobs: --resources llm=8 .*"
                                         r"set llm\.pacing\.jobs to 8"):
        llm_cap(8, 4, "c.yaml")
