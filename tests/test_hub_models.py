"""Hub models of the sentence_transformers backend: offline by default, downloads when the config
allows them, one clear line for a model that is neither shipped nor cached. No test uses the
network: they inspect the cache folder and the environment a job gets, never download."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import REPO, SNAKEMAKE
from retrieval_response.embedding import hub_models, make_embedder
from retrieval_response.infra.errors import InputError

HUB_ID = "sentence-transformers/multi-qa-MiniLM-L6-cos-v1"  # the example of docs/DATA.md; not cached in tests


def rule_for(cache: Path) -> str:
    return (
        f"hub model {HUB_ID!r} is neither shipped nor in the Hugging Face cache ({cache}), and downloads are off "
        "(HF_HUB_OFFLINE=1): set 'models.allow_downloads: true' in the config to let it download"
    )


@pytest.mark.unit
def test_model_neither_shipped_nor_cached_gives_the_rule(tmp_path):
    environ = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path)}
    assert hub_models.missing_model_rule(HUB_ID, environ) == rule_for(tmp_path)


@pytest.mark.unit
def test_user_offline_flag_with_downloads_allowed_says_to_unset_it(tmp_path):
    environ = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path)}
    rule = hub_models.missing_model_rule(HUB_ID, environ, allow_downloads=True)
    assert rule.endswith("your environment sets HF_HUB_OFFLINE=1: unset it to let it download")


@pytest.mark.unit
def test_cached_model_local_folder_or_downloads_allowed_need_nothing(tmp_path):
    offline = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub")}
    snapshot = tmp_path / "hub" / "models--sentence-transformers--multi-qa-MiniLM-L6-cos-v1" / "snapshots" / "abc"
    assert hub_models.missing_model_rule(HUB_ID, offline) is not None
    snapshot.mkdir(parents=True)
    assert hub_models.missing_model_rule(HUB_ID, offline) is not None  # an empty snapshot is no model
    (snapshot / "config.json").write_text("{}")
    assert hub_models.missing_model_rule(HUB_ID, offline) is None
    assert hub_models.missing_model_rule("multi-qa-MiniLM-L6-cos-v1", offline) is None  # bare name
    assert hub_models.missing_model_rule(str(tmp_path), offline) is None  # a local folder
    assert hub_models.missing_model_rule("org/other", {"HF_HUB_CACHE": str(tmp_path)}) is None


@pytest.mark.unit
def test_cache_folder_is_found_as_huggingface_hub_finds_it(tmp_path):
    assert hub_models.hub_cache_dir({"HF_HUB_CACHE": "/c"}) == Path("/c")
    assert hub_models.hub_cache_dir({"HF_HOME": "/h"}) == Path("/h/hub")
    assert hub_models.hub_cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/huggingface/hub")


@pytest.mark.unit
def test_download_policy_sets_the_offline_flag_only_when_downloads_are_not_allowed():
    environ: dict[str, str] = {}
    hub_models.apply_download_policy(True, environ)
    assert "HF_HUB_OFFLINE" not in environ and not hub_models.downloads_off(environ)
    hub_models.apply_download_policy(False, environ)
    assert environ == {"HF_HUB_OFFLINE": "1"} and hub_models.downloads_off(environ)
    user = {"HF_HUB_OFFLINE": "0"}
    hub_models.apply_download_policy(False, user)
    assert user == {"HF_HUB_OFFLINE": "0"}  # the user's own value wins


@pytest.mark.unit
def test_embedding_job_refuses_the_missing_model_with_the_rule(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(InputError) as caught:
        make_embedder("MQ", {"backend": "sentence_transformers", "model": HUB_ID}, threads=1, source="c.yaml")
    assert str(caught.value) == f"c.yaml: config key rankers.MQ.model: {rule_for(tmp_path)}"


def write_workdir(tmp_path: Path, rankers: dict, allow_downloads: bool | None) -> Path:
    """A tiny generic dataset and a config with ``rankers`` (and models.allow_downloads if given)."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    with (workdir / "tiny.jsonl").open("w") as f:
        for i in range(3):
            record = {"id": f"T-{i}", "q": f"question {i}", "p": [f"yes {i}", f"also {i}"], "n": [f"no {i}", f"nor {i}"]}
            f.write(json.dumps(record) + "\n")
    llm = {"model": "openai/gpt-4o-mini"}
    config = {
        "datasets": {"tiny": {"layout": "generic", "path": "tiny.jsonl"}},
        "designs": [{"Nc": 3, "Np": 2}],
        "K": [1, 2],
        "rankers": rankers,
        "llm": {"generator": llm, "grader": llm},
    }
    if allow_downloads is not None:
        config["models"] = {"allow_downloads": allow_downloads}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    return workdir


def snakemake(workdir: Path, cache: Path, *args: str) -> subprocess.CompletedProcess:
    """The workflow in ``workdir``, in an environment without HF_HUB_OFFLINE and with an empty hub cache."""
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"} | {"HF_HUB_CACHE": str(cache)}
    cmd = [str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(workdir / "config.yaml"), *args]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=workdir, env=env)


@pytest.mark.workflow
def test_start_up_refuses_an_uncached_hub_model_in_one_line(tmp_path):
    workdir = write_workdir(tmp_path, {"MQ": {"backend": "sentence_transformers", "model": HUB_ID}}, None)
    proc = snakemake(workdir, tmp_path / "hub", "-n")
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("Using workflow")]
    assert lines == [f"{workdir / 'config.yaml'}: config key rankers.MQ.model: {rule_for(tmp_path / 'hub')}"]


@pytest.mark.workflow
def test_start_up_lets_a_hub_model_through_when_downloads_are_allowed(tmp_path):
    workdir = write_workdir(tmp_path, {"MQ": {"backend": "sentence_transformers", "model": HUB_ID}}, True)
    proc = snakemake(workdir, tmp_path / "hub", "-n")
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.workflow
@pytest.mark.parametrize(("allow", "expected"), [
    (True, "Hugging Face hub downloads allowed (HF_HUB_OFFLINE unset)"),
    (False, "Hugging Face hub downloads off (HF_HUB_OFFLINE=1)"),
])
def test_embedding_job_environment_follows_the_config(tmp_path, allow, expected):
    # a shipped offline model (ONNX, no torch): the job runs without network either way, and its
    # log says which environment it got
    workdir = write_workdir(tmp_path, {"PML3": {"backend": "paraphrase_minilm_l3_onnx"}}, allow)
    proc = snakemake(workdir, tmp_path / "hub", "--cores", "1", "results/embeddings/PML3/tiny.parquet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = (workdir / "logs" / "embed" / "PML3" / "tiny.log").read_text()
    assert expected in log
