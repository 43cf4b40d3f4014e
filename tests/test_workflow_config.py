"""Config validation at start-up: defaults filled in, every broken config gives one clear error."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import REPO, planned_files, run_snakemake

BAD_CONFIGS = REPO / "tests" / "bad_inputs" / "config"


def expectations() -> list[tuple[str, str]]:
    """(config file, expected error line fragment) rows of the corpus' expected.tsv."""
    with (BAD_CONFIGS / "expected.tsv").open() as f:
        return [(row["file"], row["expected line"]) for row in csv.DictReader(f, delimiter="\t")]


def workdir_with(tmp_path: Path, config_file: Path) -> Path:
    """A working folder with the shipped data linked in, the corpus' prompt files, and ``config_file`` as its config."""
    (tmp_path / "resources").symlink_to(REPO / "resources")
    for prompt in BAD_CONFIGS.glob("*.txt"):
        shutil.copy(prompt, tmp_path / prompt.name)
    shutil.copy(config_file, tmp_path / "config.yaml")
    return tmp_path


def error_lines(stderr: str) -> list[str]:
    """The lines of Snakemake's stderr other than its notice about the workflow profile."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("Using workflow specific profile")]


@pytest.mark.unit
def test_every_corpus_config_has_an_expectation():
    assert {p.name for p in BAD_CONFIGS.glob("*.yaml")} == {name for name, _ in expectations()}


@pytest.mark.workflow
@pytest.mark.parametrize(("name", "fragment"), expectations())
def test_broken_config_is_one_line_at_start_up_and_nothing_is_written(tmp_path, name, fragment):
    workdir = workdir_with(tmp_path, BAD_CONFIGS / name)
    before = sorted(p.name for p in workdir.iterdir())
    proc = run_snakemake(workdir, "-n", check=False)
    assert proc.returncode != 0
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and fragment in lines[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    assert sorted(p.name for p in workdir.iterdir() if p.name != ".snakemake") == before


@pytest.mark.workflow
def test_default_config_is_valid_and_plans_every_unit_with_the_schema_defaults(tmp_path):
    """The shipped config.yaml passes the start-up checks, and its dry run plans a graded file for
    every (dataset, embedder, design) of the library's plan on the config with the schema's
    defaults filled in, and the run summary (whose rule reads the defaults' pacing and models)."""
    from snakemake.utils import validate

    from retrieval_response.workflow_config import plan

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    validate(config, str(REPO / "workflow/schemas/config.schema.yaml"))
    assert config["llm"]["generator"]["parallel"] == config["llm"]["grader"]["parallel"] == 1
    workdir = workdir_with(tmp_path, REPO / "config.yaml")
    planned = planned_files(workdir)
    units = plan.dataset_units(config)
    assert units and {f"results/graded/{d}/{e}/{s}.parquet" for d, e, s in units} <= planned
    assert "results/run_summary.json" in planned


def renamed_config(config: dict, name: str) -> dict:
    """``config`` with its ``rankers`` (top level, and dataset msmarco's list set to [ML6]) under ``name``."""
    config = {key: value for key, value in config.items() if key != "rankers"} | {name: config["rankers"]}
    config["datasets"]["msmarco"][name] = ["ML6"]
    return config


@pytest.mark.workflow
def test_the_old_embedders_key_plans_what_rankers_plans_with_one_notice_and_both_are_refused(tmp_path):
    """``embedders`` (top level and per dataset) is read as ``rankers``: the same jobs, one notice
    line; the two names together stop the run with one line."""
    shipped = yaml.safe_load((REPO / "config.yaml").read_text())
    runs = {}
    for name in ("rankers", "embedders"):
        (tmp_path / name).mkdir()
        workdir = workdir_with(tmp_path / name, REPO / "config.yaml")
        (workdir / "config.yaml").write_text(yaml.safe_dump(renamed_config(yaml.safe_load(yaml.safe_dump(shipped)), name)))
        runs[name] = run_snakemake(workdir, "-n")
    jobs = {name: {line for line in proc.stdout.splitlines() if line.strip().startswith("output: ")}
            for name, proc in runs.items()}
    assert jobs["rankers"] and jobs["embedders"] == jobs["rankers"]
    assert any("results/graded/msmarco/ML6/" in line for line in jobs["rankers"])
    assert not any("results/graded/msmarco/PML3/" in line for line in jobs["rankers"])
    notices = [line for line in runs["embedders"].stderr.splitlines() if "embedders" in line]
    assert notices == [f"{tmp_path / 'embedders' / 'config.yaml'}: config key embedders: read as rankers; "
                       "embedders will be removed in the next release: rename it"]
    assert "embedders" not in runs["rankers"].stderr
    both = renamed_config(yaml.safe_load(yaml.safe_dump(shipped)), "rankers") | {"embedders": shipped["rankers"]}
    (tmp_path / "embedders" / "config.yaml").write_text(yaml.safe_dump(both))
    proc = run_snakemake(tmp_path / "embedders", "-n", check=False)
    assert proc.returncode != 0
    assert error_lines(proc.stderr) == [f"{tmp_path / 'embedders' / 'config.yaml'}: config key embedders: renamed to "
                                        "rankers, which is given too: keep rankers only"]


@pytest.mark.unit
def test_schema_fills_defaults():
    from snakemake.utils import validate

    config = yaml.safe_load("datasets: {d: {layout: generic, path: x.jsonl}}\nrankers: {E: {backend: gt_minilm_l6}}")
    validate(config, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
    assert config["datasets"]["d"]["seed"] == 0
    assert config["designs"] == [{"Nc": 8, "Np": 2}]
    assert config["rankers"]["E"] == {"backend": "gt_minilm_l6"}  # a ranker's keys are its backend's: none filled in
    assert config["analysis"]["alpha_grid"] == "l350^0.95"
    assert config["llm"]["pacing"]["max_retries"] == 5


@pytest.mark.unit
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
