"""A value that looks like a secret is never printed: the class of such values, the start-up line
of a key pasted where its variable's name belongs, every InputError, JobFailure and log line; and
a model string litellm cannot route, refused at start-up in litellm's words, which also reach
the job's one-line failure."""

from __future__ import annotations

import logging

import polars as pl
import pytest
from snakemake.utils import validate

from conftest import REPO
from retrieval_response.infra.errors import InputError, JobFailure
from retrieval_response.infra.logs import log_to_file
from retrieval_response.infra.secrets import looks_like_secret, redact_secrets
from retrieval_response.llm.jobs import check_failures
from retrieval_response.workflow_config.checks import check_config

pytestmark = pytest.mark.unit

SCHEMA = str(REPO / "workflow" / "schemas" / "config.schema.yaml")
GENERIC = REPO / "tests" / "fixtures" / "datasets" / "generic.jsonl"

SECRETS = {
    "OpenAI": "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
    "OpenAI project": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_7AbCdEfGh",
    "Anthropic": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-abcdefghij",
    "GitHub": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "GitHub fine-grained": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "Hugging Face": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "Groq": "gsk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "Slack": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "AWS key id": "AKIAIOSFODNN7EXAMPLE",
    "Google": "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "JWT": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "random 40": "Zx8Qm2Lp7Vn4Rt1Yk6Hs3Dg9Jw5Fb0Cc2Ee4Aa7Bb",
}
NOT_SECRETS = ["RR_LOOPBACK_KEY", "OPENAI_API_KEY", "openai/gpt-4o-mini", "ms_marco_v1.1_train_sample200.json",
               "resources/data/hotpotqa_beir/qrels/test.tsv", "a" * 64, "0123456789abcdef" * 4,
               "HotpotQA_distractor_validation_2024_sample", "sk-short", "http://127.0.0.1:8765/v1"]


@pytest.mark.parametrize("name", SECRETS)
def test_every_form_of_key_looks_like_a_secret_and_is_redacted_in_text(name):
    secret = SECRETS[name]
    assert looks_like_secret(secret)
    text = f"before '{secret}' after"
    assert redact_secrets(text) == "before 'REDACTED' after"


@pytest.mark.parametrize("value", NOT_SECRETS)
def test_names_paths_and_hashes_do_not_look_like_secrets(value):
    assert not looks_like_secret(value) and redact_secrets(value) == value


def valid_config(**generator) -> dict:
    config = {
        "datasets": {"faq": {"layout": "generic", "path": str(GENERIC)}},
        "rankers": {"ML6": {"backend": "gt_minilm_l6"}},
        "llm": {
            "generator": {"model": "openai/gpt-4o-mini", "api_key_env": "RR_TEST_KEY", **generator},
            "grader": {"model": "openai/gpt-4o-mini"},
            "prompts": {"answer": str(REPO / "resources/prompts/answer.txt"),
                        "grade": str(REPO / "resources/prompts/grade.txt")},
        },
    }
    validate(config, SCHEMA)
    return config


def refused(config: dict, environ: dict) -> str:
    with pytest.raises(InputError) as caught:
        check_config(config, "run.yaml", environ)
    message = str(caught.value)
    assert message.startswith("run.yaml: config key ") and "\n" not in message
    return message


@pytest.mark.parametrize("name", SECRETS)
@pytest.mark.parametrize("exported", [False, True], ids=["unset", "set"])
def test_a_key_pasted_as_api_key_env_is_refused_without_being_shown(name, exported):
    """Whether or not a variable of that name happens to exist, the line names the key, says what
    went wrong, and shows no part of the value."""
    secret = SECRETS[name]
    message = refused(valid_config(api_key_env=secret), {secret: "x"} if exported else {})
    assert message.startswith("run.yaml: config key llm.generator.api_key_env: holds what looks like an API key")
    assert secret not in message and secret[:12] not in message and secret[-8:] not in message


@pytest.mark.parametrize("model", ["my-hosted", "loopback/x", "gpt4o-typo-model"])
def test_a_model_string_without_a_provider_is_refused_at_start_up_in_litellms_words(model):
    message = refused(valid_config(model=model), {"RR_TEST_KEY": "k"})
    assert message.startswith(f"run.yaml: config key llm.generator.model: litellm cannot route '{model}': "
                              f"LLM Provider NOT provided.")
    assert f"e.g. openai/{model}" in message


@pytest.mark.parametrize("model", ["openai/my-hosted", "gpt-4o-mini", "hosted_vllm/my-model", "anthropic/claude-3-5"])
def test_a_model_string_litellm_routes_passes(model):
    check_config(valid_config(model=model), "run.yaml", {"RR_TEST_KEY": "k"})


def test_a_key_pasted_as_the_model_is_not_echoed():
    secret = SECRETS["OpenAI project"]
    message = refused(valid_config(model=secret), {"RR_TEST_KEY": "k"})
    assert "config key llm.generator.model" in message and secret not in message and "REDACTED" in message


@pytest.mark.parametrize("name", ["OpenAI", "JWT", "random 40"])
def test_no_error_line_and_no_log_line_shows_a_secret(tmp_path, name):
    secret = SECRETS[name]
    for error in (InputError(f"/data/{secret}.jsonl", f"id {secret}", f"value {secret!r} is bad"),
                  JobFailure(f"answer_topk job: provider said: bad key {secret}")):
        assert secret not in str(error) and "REDACTED" in str(error)
    logger = log_to_file(tmp_path / "job.log")
    logger.warning("key %s in a message", secret)
    for handler in logger.handlers:
        handler.flush()
    assert secret not in (tmp_path / "job.log").read_text() and "REDACTED" in (tmp_path / "job.log").read_text()


def test_the_failure_line_says_what_the_provider_said(caplog):
    status = pl.Series(["ok"] * 2 + ["api_error:BadRequestError"] * 5 + ["retries_exhausted:server_error"] * 3)
    details = {"api_error:BadRequestError": "LLM Provider NOT provided. You passed model=my-hosted",
               "server_error": "OpenAIException - injected 500"}
    with pytest.raises(JobFailure) as caught:
        check_failures("answer_topk", "d/E/Nc5_Np2/0", status, {"model": "my-hosted"}, 0.1,
                       logging.getLogger("retrieval_response"), details)
    line = str(caught.value)
    assert "\n" not in line and line.startswith("answer_topk d/E/Nc5_Np2/0: 8 of 10 LLM requests failed: "
                                                "api_error:BadRequestError 5, retries_exhausted:server_error 3 (my-hosted)")
    assert ("; the provider said: api_error:BadRequestError: LLM Provider NOT provided. You passed model=my-hosted"
            " | retries_exhausted:server_error: OpenAIException - injected 500; more than") in line
