"""The small offline configs of .test/, which the tests and users share, pass the start-up checks
and plan a run as a user starts them (``--configfile .test/<name>.yaml``, the working directory
holding ``data/`` as ``.test`` does)."""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import REPO, SNAKEMAKE, TEST_CONFIGS, shared_config

CONFIGS = sorted(TEST_CONFIGS.glob("*.yaml"))


@pytest.mark.unit
def test_there_are_shared_configs_and_config_readme_names_each():
    readme = (REPO / "config/README.md").read_text()
    assert CONFIGS
    for config in CONFIGS:
        assert f".test/{config.name}" in readme, f"config/README.md does not mention .test/{config.name}"


@pytest.mark.workflow
@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_a_shared_config_dry_runs_from_another_folder(config, tmp_path):
    shared_config(config.stem, tmp_path)  # a copy of .test/data as tmp_path/data
    cmd = [str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
           "--configfile", str(config), "-n"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "RR_LOOPBACK_KEY": "loopback-key"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "This was a dry-run" in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists()
