"""Shared test set-up: no network, the repository root, and a Snakemake runner."""

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

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
TEST_CONFIGS = REPO / ".test"  # the small offline configs users run too (config/README.md)
SHIPPED_GGUF = REPO / "resources/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def skip_module_without_local_server() -> None:
    """Skip the calling test module unless llama-server is built and the shipped GGUF is
    assembled (both by bash install.sh)."""
    if not Path(sys.executable).with_name("llama-server").exists() and shutil.which("llama-server") is None:
        pytest.skip("llama-server is not built (bash install.sh)", allow_module_level=True)
    if not SHIPPED_GGUF.exists():
        pytest.skip("the local GGUF is not assembled (bash install.sh)", allow_module_level=True)


@pytest.fixture
def repo() -> Path:
    """The repository root (where the Snakefile is)."""
    return REPO


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


def shared_config(name: str, workdir: Path) -> dict:
    """The config ``.test/<name>.yaml``, with ``.test/data`` copied to ``workdir/data``: its paths
    are relative to the working directory, ``.test`` for a user (``--directory .test``), ``workdir``
    here (a test may edit the copies, never the shipped files)."""
    shutil.copytree(TEST_CONFIGS / "data", workdir / "data", dirs_exist_ok=True)
    return yaml.safe_load((TEST_CONFIGS / f"{name}.yaml").read_text())
