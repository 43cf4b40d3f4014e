"""config/findings.yaml rebuilds the study's analysis from the committed samples (docs/findings/samples/)
in published mode, and the tables committed in docs/findings/ are that rebuild when their samples
manifest (samples.sha256.json) says they come from those samples."""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest

from conftest import REPO, run_snakemake
from retrieval_response.reports.doc_pages import fill_tables, fragments, tables_for
from retrieval_response.reports.findings import read_tables
from retrieval_response.reports.findings_tables import MANIFEST, TABLES, samples_digest, table_differences

pytestmark = pytest.mark.workflow

FINDINGS = REPO / "docs/findings"
SAMPLES = FINDINGS / "samples"


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory):
    """The working directory of one run of config/findings.yaml (its published paths resolve to the
    workflow's committed samples), with its log."""
    workdir = tmp_path_factory.mktemp("findings")
    shutil.copy(REPO / "config/findings.yaml", workdir / "config.yaml")
    proc = run_snakemake(workdir, "--cores", "2")
    return workdir, proc.stdout + proc.stderr


def test_the_committed_samples_rebuild_every_table_without_embedder_or_llm(rebuilt):
    workdir, log = rebuilt
    assert "rule embed" not in log and "rule grade" not in log and "rule prepare_dataset" not in log
    analysis = workdir / "results/analysis"
    assert all((analysis / f"{name}.parquet").is_file() for name in TABLES)
    graded = pl.read_parquet(analysis / "graded.parquet")
    assert graded.height == len(json.loads((SAMPLES / "samples_graded.json").read_text()))
    assert graded["grade_expected"].is_not_null().any() and graded["status"].is_not_null().all()
    assert graded["answer_contains"].is_not_null().any(), "gold answers joined from samples_texts.json"
    targets = set(pl.read_parquet(analysis / "correlations_fit.parquet")["target"])
    assert {"grade", "grade_expected", "answer_f1", "answer_recall", "answer_contains"} <= targets
    assert {"auc_grade", "ideal_contains"} <= set(pl.read_parquet(analysis / "judge_agreement.parquet").columns)
    assert (workdir / "results/figures/figures.json").is_file()


def test_committed_findings_tables_are_the_rebuild_of_the_committed_samples(rebuilt):
    manifest = FINDINGS / MANIFEST
    if not manifest.exists():
        pytest.skip(f"{manifest.relative_to(REPO)} absent: the committed tables predate the committed samples")
    assert json.loads(manifest.read_text()) == samples_digest(SAMPLES), (
        "docs/findings/samples changed since the tables were rebuilt: regenerate them (docs/FINDINGS.md header)")
    workdir, _ = rebuilt
    for name in TABLES:
        committed = FINDINGS / f"{name}.parquet"
        rebuilt_table = pl.read_parquet(workdir / "results/analysis" / f"{name}.parquet")
        assert committed.exists(), name
        assert table_differences(pl.read_parquet(committed), rebuilt_table) == [], name
    page = (REPO / "docs/FINDINGS.md").read_text(encoding="utf-8")
    tables = {**tables_for("\n".join(fragments(page)), REPO), **read_tables(workdir / "results/analysis")}
    assert fill_tables(page, tables, "docs/FINDINGS.md") == page
