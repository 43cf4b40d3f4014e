"""Credentials in ``api_base`` (``https://user:password@host/v1?token=...``) reach the provider as an
HTTP Basic header and a query string and nowhere else: not the rule params (Snakemake metadata),
job scripts, logs, caches, claims, the call journal or results, even when a run is killed."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import time

import polars as pl
import pytest
import yaml

from conftest import REPO, SNAKEMAKE
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.logs import log_to_file, redact_url_secrets
from retrieval_response.llm.accounting import CallJournal
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import (
    API_BASES_ENV,
    ModelConfig,
    PacingConfig,
    with_api_base_secret,
    withhold_api_base_secrets,
)
from retrieval_response.llm.endpoint import endpoint
from retrieval_response.testing.openai_server import OpenAIServer, serve_in_subprocess
from retrieval_response.testing.synthetic import synthetic_ranked, synthetic_texts

USER, PASSWORD, TOKEN = "alice", "pw-SECRET-4711", "tok-QUERY-0815"


def _with_credentials(base_url: str, user: str = USER, password: str = PASSWORD) -> str:
    return base_url.replace("http://", f"http://{user}:{password}@")


def _with_token(base_url: str) -> str:
    return f"{_with_credentials(base_url)}?token={TOKEN}"


def _files_holding(root, *secrets: str) -> list[str]:
    """Every file under ``root`` (hidden folders included) whose bytes hold one of ``secrets``."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and any(x.encode() in p.read_bytes() for x in secrets))


@pytest.mark.unit
@pytest.mark.parametrize("api_base", [
    "https://alice:pw-SECRET-4711@api.example.com/v1",
    "https://alice:pw-SECRET-4711@api.example.com:8443/v1/?key=pw-SECRET-4711#pw-SECRET-4711",
    "http://alice%40corp:pw-SECRET-4711@10.0.0.1/v1",
])
def test_the_param_form_has_no_credentials_and_ignores_them(api_base):
    model = ModelConfig("openai/m", api_base=api_base, api_key_env="KEY")
    form = json.dumps(model.param_form())
    assert "SECRET" not in form and "alice" not in form
    rotated = ModelConfig("openai/m", api_base=api_base.replace("pw-SECRET-4711", "other"), api_key_env="KEY")
    assert rotated.param_form() == model.param_form()  # new credentials rerun nothing
    assert model.param_form()["api_base"].endswith("/v1") and "@" not in model.param_form()["api_base"]
    moved = ModelConfig("openai/m", api_base=api_base.replace("api.example.com", "b.example.com").replace("10.0.0.1", "10.0.0.2"))
    assert moved.param_form()["api_base"] != model.param_form()["api_base"]


@pytest.mark.unit
@pytest.mark.parametrize("api_base, base, user, query", [
    ("https://alice:pw@api.example.com/v1", "https://api.example.com/v1", "alice:pw", {}),
    ("https://api.example.com/v1?token=t1", "https://api.example.com/v1", None, {"token": "t1"}),
    ("https://alice:pw@api.example.com:8443/v1/?token=t1&org=o#frag", "https://api.example.com:8443/v1/", "alice:pw",
     {"token": "t1", "org": "o"}),
    ("http://alice%40corp:p%3Aw@10.0.0.1/v1?key=a%26b", "http://10.0.0.1/v1", "alice@corp:p:w", {"key": "a&b"}),
    ("http://u:p@[::1]:8080/v1?t=", "http://[::1]:8080/v1", "u:p", {"t": ""}),
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1", None, {}),
])
def test_an_api_base_splits_into_a_plain_url_a_basic_header_and_query_parameters(api_base, base, user, query):
    import base64
    target = endpoint(api_base)
    assert target.base == base and target.query == query
    assert "@" not in target.base and "?" not in target.base and "#" not in target.base
    header = target.headers.get("Authorization")
    assert (header is None) if user is None else base64.b64decode(header.removeprefix("Basic ")).decode() == user


@pytest.mark.unit
@pytest.mark.parametrize("text", [
    f"POST http://{USER}:{PASSWORD}@127.0.0.1:80/v1/chat/completions?token={TOKEN} 200",
    f"error connecting to 'https://{USER}:{PASSWORD}@h.example/v1?token={TOKEN}&x=1'",
    f"url=http://h/v1#{TOKEN} and http://{PASSWORD}@h/v1",
    f"{{\"api_base\": \"http://{USER}:{PASSWORD}@h/v1?token={TOKEN}\"}}",
])
def test_every_log_line_has_the_url_secrets_redacted(tmp_path, text):
    redacted = redact_url_secrets(text)
    assert PASSWORD not in redacted and TOKEN not in redacted and "REDACTED" in redacted
    logger = log_to_file(tmp_path / "job.log")
    logger.warning("%s", text)
    try:
        raise RuntimeError(text)
    except RuntimeError:
        logger.exception("failed")
    logging.getLogger("LiteLLM").warning(text)
    logging.getLogger("httpx").warning("HTTP Request: %s", text)
    logged = (tmp_path / "job.log").read_text()
    assert "REDACTED" in logged and PASSWORD not in logged and TOKEN not in logged


@pytest.mark.unit
def test_the_secret_parts_of_api_base_leave_the_config_for_the_environment(monkeypatch):
    monkeypatch.delenv(API_BASES_ENV, raising=False)
    full = f"http://{USER}:{PASSWORD}@h.example/v1?token={TOKEN}"
    llm = {"generator": {"model": "openai/m", "api_base": full}, "grader": {"model": "openai/m", "api_base": full},
           "other": {"model": "openai/n", "api_base": "http://plain.example/v1"}, "cache": "c", "pacing": {}}
    withhold_api_base_secrets(llm, "config.yaml")
    assert PASSWORD not in json.dumps(llm) and TOKEN not in json.dumps(llm)
    assert llm["generator"]["api_base"] == "http://h.example/v1" and llm["other"]["api_base"] == "http://plain.example/v1"
    assert with_api_base_secret(llm["grader"])["api_base"] == full
    assert with_api_base_secret(llm["other"])["api_base"] == "http://plain.example/v1"
    clash = {"generator": {"model": "m", "api_base": full},
             "grader": {"model": "m", "api_base": full.replace(TOKEN, "other")}}
    with pytest.raises(InputError, match=r"config\.yaml: config key llm\.grader\.api_base: another model section"):
        withhold_api_base_secrets(clash, "config.yaml")


@pytest.mark.unit
@pytest.mark.parametrize("with_token", [False, True])
def test_credentials_go_to_the_server_as_basic_auth_and_query_and_nowhere_else(tmp_path, monkeypatch, capfd, caplog, with_token):
    monkeypatch.setenv("RR_TEST_KEY", "x")
    caplog.set_level(logging.DEBUG)
    required = {"token": TOKEN} if with_token else None
    script = ["ok", "fault_500", "fault_500", "fault_empty_choices", "fault_reset"]
    with OpenAIServer(script=script, required_query=required) as server:
        api_base = _with_token(server.base_url) if with_token else _with_credentials(server.base_url)
        model = ModelConfig("openai/loopback", api_base=api_base, api_key_env="RR_TEST_KEY")
        client = LLMClient(model, PacingConfig(max_retries=1, backoff_base_seconds=0.01, timeout_seconds=10),
                           ResponseCache(tmp_path / "cache"), journal=CallJournal(tmp_path / "journal", "s", "j"))
        results = client.run_all([client.complete([{"role": "user", "content": f"q{i}"}]) for i in range(4)], "t")
        again = client.run_all([client.complete([{"role": "user", "content": "q9"}])], "t")
        stats = server.stats()
    assert sum(r.ok for r in results) >= 2 and again[0].ok, [r.status for r in [*results, *again]]
    assert stats["authorization"] == {f"Basic {USER}": stats["requests"]}
    assert stats["query"] == {("token" if with_token else "none"): stats["requests"]}
    out, err = capfd.readouterr()
    assert PASSWORD not in out + err + caplog.text and TOKEN not in out + err + caplog.text
    assert not _files_holding(tmp_path, PASSWORD, TOKEN)


def _tiny_workflow(tmp_path, server) -> tuple:
    """A working directory with ranked samples of one tiny dataset, and a config outside it (the
    file that holds the secrets, as a user keeps it) whose api_base has a password and a token."""
    work, private = tmp_path / "work", tmp_path / "private"
    work.mkdir()
    private.mkdir()
    (work / "tiny.jsonl").write_text("")
    shutil.copytree(REPO / "resources/prompts", work / "prompts")
    model = {"model": "openai/loopback", "api_base": _with_token(server.base_url), "api_key_env": "RR_LOOPBACK_KEY"}
    config = {
        "datasets": {"tiny": {"layout": "generic", "path": "tiny.jsonl"}},
        "designs": [{"Nc": 5, "Np": 2}], "K": [1, 2],
        "rankers": {"ML6": {"backend": "gt_minilm_l6"}},
        "llm": {"generator": {**model, "max_tokens": 50}, "grader": {**model, "max_tokens": 4},
                "cache": "results/llm_cache", "pacing": {"concurrency": 2},
                "prompts": {"answer": "prompts/answer.txt", "grade": "prompts/grade.txt"}},
    }
    (private / "config.yaml").write_text(yaml.safe_dump(config))
    texts = synthetic_texts(3).with_columns(p=pl.col("p").list.head(2))
    write_parquet(texts, work / "results/texts/tiny.parquet")
    write_parquet(synthetic_ranked(texts, "ML6", 5, 2, [1, 2]), work / "results/ranked/tiny/ML6/Nc5_Np2.parquet")
    args = [str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
            "--configfile", str(private / "config.yaml"), "--cores", "2",
            "--allowed-rules", "answer_ideal", "answer_topk", "grade", "merge_graded", "llm_summary",
            "--", "results/llm_summary.json", "results/graded/tiny/ML6/Nc5_Np2.parquet"]
    return work, args


@pytest.mark.workflow
def test_a_workflow_run_keeps_password_and_token_out_of_every_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RR_LOOPBACK_KEY", "loopback-KEY-4242")
    with serve_in_subprocess(latency_s=0.01, required_query={"token": TOKEN}) as server:
        work, args = _tiny_workflow(tmp_path, server)
        proc = subprocess.run(args, capture_output=True, text=True, cwd=work)
        assert proc.returncode == 0, proc.stderr[-4000:]
        stats = server.stats()
    assert stats["authorization"] == {f"Basic {USER}": stats["requests"]} and stats["query"] == {"token": stats["requests"]}
    graded = pl.read_parquet(work / "results/graded/tiny/ML6/Nc5_Np2.parquet")
    assert graded.height and (graded["status"] == "graded").all()
    assert (work / ".snakemake/metadata").is_dir() and any((work / "results/llm_cache").glob("*.jsonl"))
    leaked = _files_holding(work, PASSWORD, TOKEN, "loopback-KEY-4242")
    assert not leaked, f"a secret of api_base or the API key leaked to {leaked}"
    assert PASSWORD not in proc.stdout + proc.stderr and TOKEN not in proc.stdout + proc.stderr
    total = json.loads((work / "results/llm_summary.json").read_text())["total"]
    assert total["calls"] == stats["requests"] and total["calls_without_job_summary"] == 0


@pytest.mark.workflow
def test_a_run_killed_mid_way_leaves_neither_password_nor_token_in_any_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RR_LOOPBACK_KEY", "loopback-KEY-4242")
    with serve_in_subprocess(latency_s=2.0, required_query={"token": TOKEN}) as server:
        work, args = _tiny_workflow(tmp_path, server)
        run = subprocess.Popen(args, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            while not any((work / ".snakemake/scripts").glob("*")) and time.monotonic() < deadline:
                assert run.poll() is None, "the run ended before any job script was written"
                time.sleep(0.2)
            while server.stats()["requests"] == 0 and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            os.killpg(run.pid, signal.SIGKILL)  # the run's own process group, jobs included
            run.wait(timeout=30)
        requests = server.stats()["requests"]
    scripts = list((work / ".snakemake/scripts").glob("*"))
    assert scripts and requests > 0, "the kill came before any job script or call"
    leaked = _files_holding(work, PASSWORD, TOKEN, "loopback-KEY-4242")
    assert not leaked, f"a killed run left a secret in {leaked}"
