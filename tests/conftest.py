"""Shared test set-up: no network, the repository root, test tiers, and a Snakemake runner."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

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
