"""A value that looks like a secret is never printed: the class of such values, the start-up line
of a key pasted where its variable's name belongs, every InputError, JobFailure and log line; and
a model string litellm cannot route, refused at start-up in litellm's words, which also reach
the job's one-line failure."""

from __future__ import annotations

import copy
import functools
import json
import logging
from pathlib import Path

import polars as pl
import pytest
import yaml
from snakemake.utils import validate

from conftest import REPO, run_snakemake
from retrieval_response.datasets.traces import read_traces
from retrieval_response.infra.errors import InputError, JobFailure
from retrieval_response.infra.logs import log_to_file
from retrieval_response.infra.secrets import looks_like_secret, redact_secrets
from retrieval_response.llm.jobs import check_failures
from retrieval_response.workflow_config.checks import check_config, check_secrets
from retrieval_response.workflow_config.plan import resolve_run_codes

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


@pytest.mark.unit
@pytest.mark.parametrize("name", SECRETS)
def test_every_form_of_key_looks_like_a_secret_and_is_redacted_in_text(name):
    secret = SECRETS[name]
    assert looks_like_secret(secret)
    text = f"before '{secret}' after"
    assert redact_secrets(text) == "before 'REDACTED' after"


@pytest.mark.unit
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


@pytest.mark.unit
@pytest.mark.parametrize("name", SECRETS)
@pytest.mark.parametrize("exported", [False, True], ids=["unset", "set"])
def test_a_key_pasted_as_api_key_env_is_refused_without_being_shown(name, exported):
    """Whether or not a variable of that name happens to exist, the line names the key, says what
    went wrong, and shows no part of the value."""
    secret = SECRETS[name]
    message = refused(valid_config(api_key_env=secret), {secret: "x"} if exported else {})
    assert message.startswith("run.yaml: config key llm.generator.api_key_env: holds what looks like an API key")
    assert secret not in message and secret[:12] not in message and secret[-8:] not in message


@pytest.mark.unit
@pytest.mark.parametrize("model", ["my-hosted", "loopback/x", "gpt4o-typo-model"])
def test_a_model_string_without_a_provider_is_refused_at_start_up_in_litellms_words(model):
    message = refused(valid_config(model=model), {"RR_TEST_KEY": "k"})
    assert message.startswith(f"run.yaml: config key llm.generator.model: litellm cannot route '{model}': "
                              f"LLM Provider NOT provided.")
    assert f"e.g. openai/{model}" in message


@pytest.mark.unit
@pytest.mark.parametrize("model", ["openai/my-hosted", "gpt-4o-mini", "hosted_vllm/my-model", "anthropic/claude-3-5"])
def test_a_model_string_litellm_routes_passes(model):
    check_config(valid_config(model=model), "run.yaml", {"RR_TEST_KEY": "k"})


@pytest.mark.unit
def test_a_key_pasted_as_the_model_is_not_echoed():
    secret = SECRETS["OpenAI project"]
    message = refused(valid_config(model=secret), {"RR_TEST_KEY": "k"})
    assert message.startswith("run.yaml: config key llm.generator.model: holds what looks like an API key")
    assert secret not in message


@pytest.mark.unit
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


@pytest.mark.unit
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


def schema_string_fields(node: dict, path: str = "") -> list[str]:
    """The dotted key of every string the config schema allows, free text (no enum): ``[0]`` for a
    list's items, ``<name>`` for a mapping's own keys (a dataset name, a ranker code, a label)."""
    node = SCHEMA_YAML["$defs"][node["$ref"].rsplit("/", 1)[-1]] if "$ref" in node else node
    types = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
    fields = [path] if "string" in types and "enum" not in node else []
    if "array" in types and "items" in node:
        fields += schema_string_fields(node["items"], f"{path}[0]")
    for key, child in (node.get("properties") or {}).items():
        fields += schema_string_fields(child, f"{path}.{key}" if path else key)
    if isinstance(node.get("additionalProperties"), dict):
        fields += [f"{path}.<name>", *schema_string_fields(node["additionalProperties"], f"{path}.<name>")]
    return fields


SCHEMA_YAML = yaml.safe_load(Path(SCHEMA).read_text())
FIELDS = schema_string_fields(SCHEMA_YAML)
NAMES = {"datasets": "faq", "rankers": "ML6", "feedback_labels": "up"}
"""The name each ``<name>`` of a field path takes when it is not the value under test."""
SHAPES = ["OpenAI project", "Anthropic", "Google", "GitHub", "JWT", "random 40"]
AZURE = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"


def pasted(field: str, secret: str) -> str:
    """``secret`` as a user would paste it into ``field``: a model string, a URL, a path."""
    last = field.rsplit(".", 1)[-1]
    return {"api_key_env": secret, "model": f"openai/{secret}",
            "api_base": f"https://llm.example.com/v1/{secret}"}.get(last, f"data/{secret}.jsonl")


@functools.cache
def _valid() -> dict:
    return valid_config()


def fresh_config() -> dict:
    """A copy of :func:`valid_config` (validated once: the schema check takes a tenth of a second)."""
    return copy.deepcopy(_valid())


def with_value(config: dict, field: str, value: str) -> str:
    """Put ``value`` at ``field`` of ``config`` (a ``<name>`` at the end: a new key ``value``) and
    return the config key the start-up line must name."""
    parts, node, names = field.split("."), config, []
    for part in parts[:-1]:
        name = NAMES.get(names[-1] if names else "", part) if part == "<name>" else part.removesuffix("[0]")
        node = node.setdefault(name, {})
        names.append(name)
    last = parts[-1]
    if last == "<name>":
        node[value] = {}
        return ".".join(names)
    if last.endswith("[0]"):
        node[last.removesuffix("[0]")] = [value]
    else:
        node[last] = value
    return ".".join([*names, last])


@pytest.mark.unit
def test_the_fields_under_test_are_every_free_string_of_the_schema():
    assert {"llm.generator.model", "llm.grader.api_base", "datasets.<name>.paths[0]", "published.judgments[0]",
            "rankers.<name>", "datasets.<name>.feedback_labels.<name>", "analysis.human"} <= set(FIELDS)
    assert len(FIELDS) == len(set(FIELDS)) >= 30


@pytest.mark.unit
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("field", FIELDS)
def test_a_key_pasted_into_any_config_string_is_refused_at_start_up_without_being_shown(field, shape):
    """Whatever string of the config the key is pasted into (a path, a name, a model string, the
    path of a URL, a prompt), start-up refuses it in one line naming the key, and no part of the
    key is in that line."""
    secret = SECRETS[shape]
    config = fresh_config()
    key = with_value(config, field, pasted(field, secret))
    message = refused(config, {"RR_TEST_KEY": "k"})
    assert message.startswith(f"run.yaml: config key {key}: ") and "looks like an API key" in message
    assert secret not in message and secret[:12] not in message and secret[-8:] not in message


@pytest.mark.unit
@pytest.mark.parametrize("field", [f"llm.{role}.{key}" for role in ("generator", "grader")
                                   for key in ("model", "api_key_env")])
def test_an_azure_style_hex_key_as_model_or_variable_name_is_refused(field):
    config = fresh_config()
    key = with_value(config, field, pasted(field, AZURE))
    message = refused(config, {"RR_TEST_KEY": "k", AZURE: "x"})
    assert message.startswith(f"run.yaml: config key {key}: holds what looks like an API key")
    assert AZURE not in message and AZURE[:12] not in message


@pytest.mark.unit
@pytest.mark.parametrize(("field", "value"), [
    ("llm.generator.model", "replicate/meta/llama-2-70b-chat:" + "02e509c789964a7e" * 4),
    ("llm.generator.api_base", f"https://gateway.ai.cloudflare.com/v1/{AZURE}/my-gateway/openai"),
    ("llm.generator.api_base", f"https://alice:{SECRETS['OpenAI project']}@llm.example.com/v1?key={SECRETS['Google']}"),
    ("llm.generator.model_path", f"models/snapshots/{'0123456789abcdef' * 2}/model.gguf"),
    ("datasets.<name>.path", f"mlruns/0/{AZURE}/artifacts/traces.jsonl"),
])
def test_hashes_ids_and_withheld_url_credentials_are_no_pasted_key(field, value):
    """A content hash or an account id is no key; credentials and a query string of ``api_base``
    are kept out of every file (docs/LLM_SERVERS.md), so only its host and path are judged."""
    config = fresh_config()
    with_value(config, field, value)
    check_secrets(config, "run.yaml")


@pytest.mark.unit
@pytest.mark.parametrize("path", [REPO / "config.yaml", *sorted(REPO.glob("config/*.yaml")), *sorted(REPO.glob(".test/*.yaml"))],
                         ids=lambda p: p.name)
def test_no_shipped_config_looks_like_it_holds_a_key(path):
    check_secrets(yaml.safe_load(path.read_text()), str(path))


@pytest.mark.workflow
@pytest.mark.parametrize("field", ["llm.generator.model", "llm.grader.api_base", "datasets.<name>.path"])
def test_a_pasted_key_stops_snakemake_before_anything_is_written(tmp_path, field):
    secret = SECRETS["OpenAI project"]
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    key = with_value(config, field.replace("<name>", "msmarco"), pasted(field, secret))
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    proc = run_snakemake(tmp_path, "-n", check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"config.yaml: config key {key}: holds what looks like an API key" in proc.stderr
    assert secret[:12] not in proc.stdout + proc.stderr
    holding = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "config.yaml" and secret.encode() in p.read_bytes()]
    assert holding == []


@pytest.mark.unit
@pytest.mark.parametrize("shape", SHAPES)
def test_a_key_as_a_traces_system_or_a_run_tag_is_refused_without_being_shown(tmp_path, shape):
    """Names read from data that reach every result: a trace's system, the tag that names a run."""
    secret = SECRETS[shape]
    traces = tmp_path / "prod.jsonl"
    traces.write_text(json.dumps({"query_id": "q1", "query": "Who?", "docs": [{"id": "d1", "text": "t"}],
                                  "answer": "a", "system": secret}) + "\n")
    with pytest.raises(InputError) as caught:
        read_traces([traces])
    assert str(caught.value).startswith(f"{traces}: line 1: system looks like an API key or token")
    run = tmp_path / "run.txt"
    run.write_text(f"q1 Q0 d1 1 2.5 {secret}\n")
    with pytest.raises(InputError) as ran:
        resolve_run_codes({"datasets": {"c": {"layout": "beir", "path": "q.tsv", "run": str(run), "rankers": []}},
                           "rankers": {}}, "run.yaml")
    assert str(ran.value).startswith("run.yaml: config key datasets.c.run: the run's code looks like an API key")
    for message in (str(caught.value), str(ran.value)):
        assert secret not in message and secret[:12] not in message and secret[-8:] not in message
