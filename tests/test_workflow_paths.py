"""No input makes the workflow write outside results/ and logs/: names are checked at start-up, data when read.

A failing job prints its InputError as one line on stderr and in its own log file, without a traceback.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from conftest import REPO, planned_files, run_snakemake

pytestmark = pytest.mark.workflow

GENERIC = REPO / "tests" / "fixtures" / "datasets" / "generic.jsonl"
LONGEST = (hashlib.sha256(b"longest").hexdigest() * 2)[:100]
"""A safe name of the greatest length (not periodic: Snakemake refuses wildcard values ending in 20 repeats)."""
ODD_BUT_SAFE_DATASETS = ["a.b+c-1", "9", LONGEST]
ODD_BUT_SAFE_EMBEDDERS = ["E.1-x+", LONGEST]
LLM = {"generator": {"model": "openai/x"}, "grader": {"model": "openai/x"}}


def write_config(workdir: Path, config: dict) -> None:
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))


def test_every_planned_file_of_accepted_names_stays_in_results_or_logs(tmp_path):
    workdir = tmp_path / "work"
    workdir.mkdir()
    write_config(workdir, {
        "datasets": {name: {"layout": "generic", "path": str(GENERIC)} for name in ODD_BUT_SAFE_DATASETS},
        "rankers": {code: {"backend": "gt_minilm_l6"} for code in ODD_BUT_SAFE_EMBEDDERS},
        "designs": [{"Nc": 4, "Np": 2}], "K": [1, 2], "llm": {**LLM, "shards": 2},
        "analysis": {"alpha_grid": "linear:3"},
    })
    paths = planned_files(workdir, keys=("output", "log", "benchmark"))
    assert len(paths) > 100
    allowed = [(workdir / "results").resolve(), (workdir / "logs").resolve()]
    for path in paths:
        resolved = (workdir / path).resolve()
        assert any(folder in resolved.parents for folder in allowed), path
        assert all(len(part.encode()) < 255 for part in resolved.parts)
    for name in ODD_BUT_SAFE_DATASETS + ODD_BUT_SAFE_EMBEDDERS:
        assert any(f"/{name}/" in path or f"/{name}." in path for path in paths)


def test_hostile_id_in_a_dataset_fails_its_job_with_one_line_in_log_and_stderr(tmp_path):
    workdir = tmp_path / "a" / "b" / "c" / "d" / "e" / "work"
    workdir.mkdir(parents=True)
    source = REPO / "tests" / "bad_inputs" / "datasets" / "generic_id_path_traversal.jsonl"
    write_config(workdir, {"datasets": {"faq": {"layout": "generic", "path": str(source)}},
                           "rankers": {"ML6": {"backend": "gt_minilm_l6"}}, "designs": [{"Nc": 5, "Np": 2}],
                           "K": [1, 2], "llm": LLM})
    proc = run_snakemake(workdir, "--cores", "1", "results/texts/faq.parquet", check=False)
    line = f"{source}: line 2: id 'x/../../../../../escaped-1' cannot be used in a file name"
    assert proc.returncode != 0
    assert [row for row in proc.stderr.splitlines() if row.startswith(line)]
    assert "Traceback" not in proc.stderr
    assert line in (workdir / "logs" / "prepare_dataset" / "faq.log").read_text()
    assert not (workdir / "results" / "texts" / "faq.parquet").exists()
    assert not list(tmp_path.rglob("escaped*"))


def test_hostile_id_in_published_files_fails_with_one_line_and_writes_no_figure(tmp_path):
    """Ids like x/../../../../../escaped-1 in samples_graded.json wrote PNGs outside and exited 0."""
    workdir = tmp_path / "a" / "b" / "c" / "d" / "e" / "work"
    workdir.mkdir(parents=True)
    graded = tmp_path / "samples_graded.json"
    records = [{"id": f"{prefix}-{q}", "E": "ML6", "Nc": 5, "Np": 2, "K": k, "rank": list(range(k)),
                "inK": [int(r < 2) for r in range(k)], "grade": 1 + (q + k) % 5}
               for prefix in ("A", "x/../../../../../escaped") for q in range(4) for k in (1, 2, 3)]
    graded.write_text(json.dumps(records))
    write_config(workdir, {"published": {"graded": str(graded)},
                           "analysis": {"alpha_grid": "linear:3", "min_segment_samples": 2, "bootstrap_resamples": 0}})
    proc = run_snakemake(workdir, "--cores", "1", check=False)
    line = f"{graded}: record 13: id must be a safe name: 'x/../../../../../escaped-0' cannot be used in a file name"
    assert proc.returncode != 0
    assert [row for row in proc.stderr.splitlines() if row.startswith(line)] and "Traceback" not in proc.stderr
    assert line in (workdir / "logs" / "collect_published.log").read_text()
    assert not list(tmp_path.rglob("*.png")) and not list(tmp_path.rglob("escaped*"))
