"""Shared test set-up: no network, the repository root, test tiers, a Snakemake runner, the
benchmark modules, and work folders for the LLM rules against the loopback server."""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import polars as pl
import pytest
import yaml

from retrieval_response.datasets import published_texts
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.testing.openai_server import RemoteServer, serve_in_subprocess
from retrieval_response.testing.synthetic import synthetic_ranked

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
TEST_CONFIGS = REPO / ".test"  # the small offline configs users run too (config/README.md)
SHIPPED_GGUF = REPO / "resources/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def local_server_missing() -> str | None:
    """Why a local llama-server cannot start here (llama-server not built, or the shipped GGUF not
    assembled; both by bash install.sh), or None when it can."""
    if not Path(sys.executable).with_name("llama-server").exists() and shutil.which("llama-server") is None:
        return "llama-server is not built (bash install.sh)"
    if not SHIPPED_GGUF.exists():
        return "the local GGUF is not assembled (bash install.sh)"
    return None


needs_local_server = pytest.mark.skipif(local_server_missing() is not None, reason=str(local_server_missing()))

TIERS = ("unit", "workflow", "live")

HOSTILE_NAME_PAIR = ("x/../../../../../escaped-1", "a\x00b")
"""Two names that must not become path components (traversal through separators, a NUL), for
each entry point that passes names to ``safe_name``; the full matrix of hostile names is tried
against ``safe_name`` itself, in ``test_paths.py``."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items) -> None:
    """Refuse the collection when a test has no tier marker or more than one: every test is
    ``unit``, ``workflow`` (runs Snakemake subprocesses) or ``live`` (llama-server, Slurm), so
    ``pytest -m <tier>`` runs a tier whole."""
    wrong = [f"{item.nodeid}: tiers {sorted(tiers) or 'none'}" for item in items
             if len(tiers := {mark.name for mark in item.iter_markers() if mark.name in TIERS}) != 1]
    if wrong:
        raise pytest.UsageError("each test needs exactly one tier marker (pytest.mark.unit, .workflow or .live):\n  "
                                + "\n  ".join(wrong))


@pytest.fixture
def repo() -> Path:
    """The repository root (where the Snakefile is)."""
    return REPO


def texts_of(path: Path) -> dict:
    """``collect_published``'s ``texts`` argument for a published ``samples_texts.json``: the file
    and its table as the ``published_texts`` layout reads it."""
    return {"texts": (path, published_texts.read(path, None)[0])}


def python_env(**extra: str) -> dict[str, str]:
    """The environment of a Python subprocess a test starts: this one's, with ``extra`` and a
    module path of this interpreter's (the package, and ``tests`` for the test doubles,
    ``python -m doubles.<module>``)."""
    path = [str(TESTS), *(entry for entry in sys.path if entry and entry != str(TESTS))]
    return {**os.environ, **extra, "PYTHONPATH": os.pathsep.join(path)}


def run_snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run the repository's Snakefile in ``workdir`` with ``workdir/config.yaml``."""
    cmd = [
        str(SNAKEMAKE),
        "--snakefile", str(REPO / "Snakefile"),
        "--directory", str(workdir),
        "--configfile", str(workdir / "config.yaml"),
        *args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def planned_files(workdir: Path, *args: str, keys: tuple[str, ...] = ("output",)) -> set[str]:
    """The files (of ``keys``: ``output``, ``log``, ``benchmark``) of every job that a dry run of
    ``args`` in ``workdir`` plans, parsed from Snakemake's job listing."""
    proc = run_snakemake(workdir, "-n", *args)
    return {part.strip() for line in (proc.stdout + proc.stderr).splitlines()
            for key, _, value in [line.strip().partition(": ")] if key in keys
            for part in value.split(",")}


def shared_config(name: str, workdir: Path) -> dict:
    """The config ``.test/<name>.yaml``, with ``.test/data`` copied to ``workdir/data``: its paths
    are relative to the working directory, ``.test`` for a user (``--directory .test``), ``workdir``
    here (a test may edit the copies, never the shipped files)."""
    shutil.copytree(TEST_CONFIGS / "data", workdir / "data", dirs_exist_ok=True)
    return yaml.safe_load((TEST_CONFIGS / f"{name}.yaml").read_text())


@functools.cache
def benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module (it is no package), loaded once."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LOOPBACK_KEY_ENV = "RR_LOOPBACK_KEY"


def loopback_model(api_base: str) -> dict:
    """A model section for the loopback server at ``api_base`` (its API key in RR_LOOPBACK_KEY)."""
    return {"model": "openai/loopback", "api_base": api_base, "api_key_env": LOOPBACK_KEY_ENV}


@contextmanager
def loopback_server(latency_s: float = 0.0) -> Iterator[RemoteServer]:
    """The loopback server in a subprocess, with RR_LOOPBACK_KEY set for the Snakemake runs."""
    os.environ[LOOPBACK_KEY_ENV] = "loopback-key"
    with serve_in_subprocess(latency_s=latency_s) as running:
        yield running


@pytest.fixture(scope="module")
def loopback() -> Iterator[RemoteServer]:
    """The loopback server of a test module (no latency), RR_LOOPBACK_KEY set."""
    with loopback_server() as running:
        yield running


@pytest.fixture(scope="module")
def loopback_llm(loopback) -> dict:
    """A model section for the module's loopback server."""
    return loopback_model(loopback.base_url)


def llm_config(model: dict, *, datasets: dict | None = None, designs: list[dict] | None = None,
               K: list[int] | None = None, rankers: dict | None = None,
               prompts: tuple[str, ...] = ("answer", "grade"), llm: dict | None = None, **sections) -> dict:
    """A config of the LLM rules with ``model`` as generator (50 tokens) and grader (4 tokens,
    log-probabilities), the response cache in ``results/llm_cache``, concurrency 4 and the
    ``prompts`` of the folder ``prompts``; by default one generic dataset ``tiny`` (source
    ``tiny.jsonl``), one design (Nc 5, Np 2), K 1 to 3 and the ML6 ranker. ``llm`` adds or
    replaces keys of the ``llm`` section (``pacing`` whole), ``sections`` top-level keys."""
    return {
        "datasets": datasets or {"tiny": {"layout": "generic", "path": "tiny.jsonl"}},
        "designs": designs or [{"Nc": 5, "Np": 2}], "K": K or [1, 2, 3],
        "rankers": rankers or {"ML6": {"backend": "gt_minilm_l6"}},
        "llm": {"generator": {**model, "max_tokens": 50}, "grader": {**model, "max_tokens": 4, "logprobs": True},
                "cache": "results/llm_cache", "pacing": {"concurrency": 4},
                "prompts": {name: f"prompts/{name}.txt" for name in prompts}, **(llm or {})},
        **sections,
    }


def llm_workdir(workdir: Path, config: dict, texts: dict[str, pl.DataFrame] | None = None) -> Path:
    """``workdir`` ready for the LLM rules alone (``--allowed-rules``): ``config.yaml``, the shipped
    prompts, an empty source file for each dataset that has none, and for each dataset of
    ``texts`` its texts table and a synthetic ranked table per embedder and design of the config
    (seeded 0, 1, ... in the order of datasets, embedders and designs); with ``texts``, the check
    before the LLM rules (``check_dataset_ids``) stands as done, written after its inputs."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    shutil.copytree(REPO / "resources/prompts", workdir / "prompts")
    for dataset in config["datasets"].values():
        if not (workdir / dataset["path"]).exists():
            (workdir / dataset["path"]).write_text("")
    units = [(embedder, design["Nc"], design["Np"]) for embedder in config["rankers"] for design in config["designs"]]
    for number, (name, table) in enumerate((texts or {}).items()):
        write_parquet(table, workdir / f"results/texts/{name}.parquet")
        for seed, (embedder, nc, np_) in enumerate(units, start=number * len(units)):
            write_parquet(synthetic_ranked(table, embedder, nc, np_, config["K"], seed=seed),
                          workdir / f"results/ranked/{name}/{embedder}/Nc{nc}_Np{np_}.parquet")
    if texts:
        (workdir / "results/texts/ids_checked.json").write_text("{}")
    return workdir


def refused_record(read, path: Path, record: str, rule: str):
    """The InputError of ``read(path)``, asserted to name ``path`` and ``record`` first and to hold
    ``rule`` in its rule."""
    from retrieval_response.infra.errors import InputError

    with pytest.raises(InputError) as error:
        read(path)
    assert str(error.value).startswith(f"{path}: {record}: ")
    assert rule in error.value.rule
    return error.value
