"""Every script under benchmarks/ runs at its smoke size (``--smoke``), so that a change of the
library's API breaks this test, not a user's benchmark run.

The list of scripts is read from the folder at test time: a new benchmark without a ``--smoke``
mode fails here. Each runs in a fresh process, as a user runs it, and writes its JSON record into
the test's own folder (never over docs/benchmarks/); the benchmarks that talk to an LLM run
against the loopback OpenAI server at their smoke size, never a real model.
"""

from __future__ import annotations

import concurrent.futures
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, python_env

pytestmark = pytest.mark.unit

BENCHMARKS = sorted((REPO / "benchmarks").glob("*.py"))
SMOKE_TIMEOUT_S = 180
"""A smoke run takes seconds; the bound only stops a hung run (a loaded machine is slow, not stuck)."""
PARALLEL_RUNS = 3
"""Smoke runs at once."""


def test_benchmarks_found():
    """The folder is read (a wrong path would make the parametrized test below run nothing)."""
    assert len(BENCHMARKS) >= 10


def smoke_run(script: Path, folder: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """``<script> --smoke --json <folder>/<script>.json`` in ``folder``: the finished process and the JSON's path."""
    record = folder / f"{script.stem}.json"
    proc = subprocess.run(
        [sys.executable, str(script), "--smoke", "--json", str(record)],
        capture_output=True, text=True, cwd=folder, timeout=SMOKE_TIMEOUT_S,
        env=python_env(HF_HUB_OFFLINE="1", LITELLM_LOCAL_MODEL_COST_MAP="True", RR_LOOPBACK_KEY="loopback-key"),
    )
    return proc, record


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """Every benchmark's smoke run, :data:`PARALLEL_RUNS` at a time (several wait on a loopback
    server or a subprocess much of their time), each in a folder of its own."""
    with concurrent.futures.ThreadPoolExecutor(PARALLEL_RUNS) as pool:
        runs = {script.name: pool.submit(smoke_run, script, tmp_path_factory.mktemp(script.stem))
                for script in BENCHMARKS}
        return {name: run.result() for name, run in runs.items()}


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda path: path.name)
def test_benchmark_smoke(script: Path, smoke_runs):
    """``<script> --smoke --json <tmp>/<script>.json`` exits 0 and writes its JSON: a benchmark
    record (``reports.benchmark_record``: provenance and non-empty results), or the rows of a table."""
    proc, record_path = smoke_runs[script.name]
    assert proc.returncode == 0, f"{script.name} --smoke failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    record = json.loads(record_path.read_text())
    results = record["results"] if isinstance(record, dict) else record
    assert results, f"{script.name} --smoke wrote no results"
