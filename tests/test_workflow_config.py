"""Config validation at start-up: defaults filled in, every broken config gives one clear error."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import REPO, run_snakemake

BAD_CONFIGS = REPO / "tests" / "bad_inputs" / "config"


def expectations() -> list[tuple[str, str]]:
    """(config file, expected message fragment) rows of the corpus' expected.tsv."""
    with (BAD_CONFIGS / "expected.tsv").open() as f:
        return [(row["file"], row["expected fragment"]) for row in csv.DictReader(f, delimiter="\t")]


def workdir_with(tmp_path: Path, config_file: Path) -> Path:
    """A working folder with the shipped data linked in and ``config_file`` as its config."""
    (tmp_path / "resources").symlink_to(REPO / "resources")
    shutil.copy(config_file, tmp_path / "config.yaml")
    return tmp_path


@pytest.mark.parametrize(("name", "fragment"), expectations())
def test_broken_config_is_rejected_with_file_key_and_rule(tmp_path, name, fragment):
    workdir = workdir_with(tmp_path, BAD_CONFIGS / name)
    proc = run_snakemake(workdir, "-n", check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert fragment in output
    assert f"{workdir / 'config.yaml'}: config key " in output
    assert not (workdir / "results").exists()


def test_default_config_is_valid_and_defaults_are_filled(tmp_path):
    workdir = workdir_with(tmp_path, REPO / "config.yaml")
    proc = run_snakemake(workdir, "-n", check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_schema_fills_defaults():
    from snakemake.utils import validate

    config = yaml.safe_load("datasets: {d: {layout: generic, path: x.jsonl}}\nembedders: {E: {backend: gt_minilm_l6}}")
    validate(config, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
    assert config["datasets"]["d"]["seed"] == 0
    assert config["designs"] == [{"Nc": 8, "Np": 2}]
    assert config["embedders"]["E"]["batch_size"] == 32
    assert config["analysis"]["alpha_grid"] == "l350^0.95"
    assert config["llm"]["pacing"]["max_retries"] == 5


def test_schema_analysis_targets_and_compat():
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    schema = str(REPO / "workflow" / "schemas" / "config.schema.yaml")
    config = yaml.safe_load("analysis: {}")
    validate(config, schema)
    assert config["analysis"]["compat"] == "exact" and "targets" not in config["analysis"]
    chosen = yaml.safe_load("analysis: {compat: paper, targets: [grade_expected, answer_f1]}")
    validate(chosen, schema)
    assert chosen["analysis"]["targets"] == ["grade_expected", "answer_f1"]
    for bad in ("analysis: {compat: fast}", "analysis: {targets: [bleu]}", "analysis: {targets: []}",
                "analysis: {targets: [grade, grade]}"):
        with pytest.raises(WorkflowError):
            validate(yaml.safe_load(bad), schema)
