"""Credentials in ``api_base`` (``https://user:password@host/v1``) reach the provider as an HTTP
Basic header and nowhere else: not the rule params (Snakemake metadata), logs, caches, claims,
the call journal or results."""

from __future__ import annotations

import json
import logging
import os
import shutil

import polars as pl
import pytest
import yaml

from conftest import REPO, run_snakemake
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.llm.accounting import CallJournal
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig
from retrieval_response.testing.openai_server import OpenAIServer, serve_in_subprocess
from retrieval_response.testing.synthetic import synthetic_ranked, synthetic_texts

USER, PASSWORD = "alice", "pw-SECRET-4711"


def _with_credentials(base_url: str, user: str = USER, password: str = PASSWORD) -> str:
    return base_url.replace("http://", f"http://{user}:{password}@")


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


def test_credentials_go_to_the_server_as_basic_auth_and_nowhere_else(tmp_path, monkeypatch, capfd, caplog):
    monkeypatch.setenv("RR_TEST_KEY", "x")
    caplog.set_level(logging.DEBUG)
    with OpenAIServer(script=["ok", "fault_500", "fault_500", "fault_empty_choices", "fault_reset"]) as server:
        model = ModelConfig("openai/loopback", api_base=_with_credentials(server.base_url), api_key_env="RR_TEST_KEY")
        client = LLMClient(model, PacingConfig(max_retries=1, backoff_base_seconds=0.01, timeout_seconds=2),
                           ResponseCache(tmp_path / "cache"), journal=CallJournal(tmp_path / "journal", "s", "j"))
        results = client.run_all([client.complete([{"role": "user", "content": f"q{i}"}]) for i in range(4)], "t")
        stats = server.stats()
    assert sum(r.ok for r in results) >= 2 and stats["authorization"] == {f"Basic {USER}": stats["requests"]}
    out, err = capfd.readouterr()
    assert PASSWORD not in out + err + caplog.text
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and PASSWORD.encode() in p.read_bytes()]


def test_a_workflow_run_keeps_credentials_out_of_metadata_logs_caches_and_results(tmp_path):
    os.environ["RR_LOOPBACK_KEY"] = "loopback-key"
    (tmp_path / "tiny.jsonl").write_text("")
    shutil.copytree(REPO / "resources/prompts", tmp_path / "prompts")
    with serve_in_subprocess(latency_s=0.01) as server:
        model = {"model": "openai/loopback", "api_base": _with_credentials(server.base_url),
                 "api_key_env": "RR_LOOPBACK_KEY"}
        config = {
            "datasets": {"tiny": {"layout": "generic", "path": "tiny.jsonl"}},
            "designs": [{"Nc": 5, "Np": 2}], "K": [1, 2],
            "embedders": {"ML6": {"backend": "gt_minilm_l6"}},
            "llm": {"generator": {**model, "max_tokens": 50}, "grader": {**model, "max_tokens": 4},
                    "cache": "results/llm_cache", "pacing": {"concurrency": 2},
                    "prompts": {"answer": "prompts/answer.txt", "grade": "prompts/grade.txt"}},
        }
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
        texts = synthetic_texts(2).with_columns(p=pl.col("p").list.head(2))
        write_parquet(texts, tmp_path / "results/texts/tiny.parquet")
        write_parquet(synthetic_ranked(texts, "ML6", 5, 2, [1, 2]), tmp_path / "results/ranked/tiny/ML6/Nc5_Np2.parquet")
        run_snakemake(tmp_path, "--cores", "2", "--allowed-rules", "answer_ideal", "answer_topk", "grade",
                      "merge_graded", "llm_summary", "--", "results/llm_summary.json",
                      "results/graded/tiny/ML6/Nc5_Np2.parquet")
        requests = server.stats()["requests"]
        assert server.stats()["authorization"] == {f"Basic {USER}": requests}
    graded = pl.read_parquet(tmp_path / "results/graded/tiny/ML6/Nc5_Np2.parquet")
    assert (graded["status"] == "graded").all()
    written = [p for folder in ("results", "logs", ".snakemake") for p in (tmp_path / folder).rglob("*") if p.is_file()]
    leaked = sorted(str(p.relative_to(tmp_path)) for p in written if PASSWORD.encode() in p.read_bytes())
    assert written and not leaked, f"the api_base password leaked to {leaked}"
    total = json.loads((tmp_path / "results/llm_summary.json").read_text())["total"]
    assert total["calls"] == requests and total["calls_without_job_summary"] == 0  # from the call journal
