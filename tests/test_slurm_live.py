"""Live Slurm test: the smoke config through ``snakemake --executor slurm`` on a real
single-node cluster equals a local run.

tests/slurm/start_cluster.sh installs Debian's slurm-wlm, munge, slurmdbd and mariadb-server
when they are missing and starts the daemons on localhost; the finalizer stops every daemon the
script started, also when the test fails. The test is skipped, with the reason, only where
Slurm cannot run at all (not root, or no apt-get to install it). Both runs use the project's
Snakefile on the same tiny generic dataset, one offline embedder and the loopback OpenAI
server; every Parquet table under results/ must be equal, timing columns aside, and floats within
rounding: a text's vector depends at the 1e-7 level on the batch it was encoded in, and which
job encodes a text two datasets share is the order the jobs ran in (docs/DATA.md).
Last printed line: ``slurm_jobs=<n> slurm_seconds=<s> local_seconds=<t> outputs_equal=<true|false>``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
import yaml
from polars.testing import assert_frame_equal

from conftest import REPO, SNAKEMAKE, shared_config
from retrieval_response.testing.openai_server import serve_in_subprocess

pytestmark = pytest.mark.live


CLUSTER_SCRIPTS = REPO / "tests/slurm"
SLURM_PROFILE = REPO / "profiles/slurm"
CANNOT_RUN_SLURM = 2  # start_cluster.sh exit code: this machine cannot run Slurm
RUN_TIMEOUT_S = 1200
# results/ folders whose files are per-process or per-run (cache shards, store internals)
PER_RUN_FOLDERS = ("llm_cache", "embedding_store")
TIMING_COLUMN = re.compile(r"seconds|elapsed|latency|duration|timestamp|_at$", re.IGNORECASE)
LOOPBACK_KEY_ENV = "RR_LOOPBACK_KEY"
SMOKE_CONFIG = "config_smoke"  # .test/config_smoke.yaml
# an encoder's rounding: the vectors of one text encoded in two batches differ by about 1.5e-7
FLOAT_RTOL, FLOAT_ATOL = 1e-5, 1e-6


def cannot_run_slurm_reason() -> str | None:
    """Why this machine cannot run a Slurm cluster at all, or None when it can try."""
    if os.geteuid() != 0:
        return "starting a test cluster (daemons, /etc/slurm, package install) needs root"
    if not shutil.which("slurmctld") and not shutil.which("apt-get"):
        return "Slurm is not installed and there is no apt-get to install it"
    return None


def run_cluster_script(name: str) -> subprocess.CompletedProcess:
    """Run tests/slurm/``name`` (output captured)."""
    return subprocess.run(["bash", str(CLUSTER_SCRIPTS / name)], check=False, capture_output=True, text=True)


def cluster_answers() -> bool:
    """True when a Slurm controller answers ``scontrol ping``."""
    if not shutil.which("scontrol"):
        return False
    proc = subprocess.run(["scontrol", "ping"], check=False, capture_output=True, text=True)
    return proc.returncode == 0 and "UP" in proc.stdout


@pytest.fixture(scope="module")
def slurm_cluster():
    """A running single-node cluster; stopped afterwards unless it was already running."""
    reason = cannot_run_slurm_reason()
    if reason:
        pytest.skip(f"live Slurm test: {reason}")
    already_running = cluster_answers()
    start = run_cluster_script("start_cluster.sh")
    try:
        if start.returncode == CANNOT_RUN_SLURM:
            pytest.skip(f"live Slurm test: {start.stderr.strip().splitlines()[-1]}")
        assert start.returncode == 0, f"start_cluster.sh failed ({start.returncode}):\n{start.stderr}"
        yield
    finally:
        if not already_running:
            stop = run_cluster_script("stop_cluster.sh")
            assert stop.returncode == 0, f"stop_cluster.sh failed:\n{stop.stderr}"


@pytest.fixture(scope="module")
def llm_server():
    """The loopback OpenAI-compatible server, reachable from jobs on this host."""
    with serve_in_subprocess(latency_s=0.01) as running:
        yield running


def smoke_workdir(folder: Path, llm_base_url: str) -> Path:
    """``folder`` with the smoke config (.test/config_smoke.yaml: two tiny generic datasets, one
    offline embedder, a quick analysis), its data, and both models at the loopback server."""
    folder.mkdir()
    config = shared_config(SMOKE_CONFIG, folder)
    for role in ("generator", "grader"):
        assert config["llm"][role]["api_key_env"] == LOOPBACK_KEY_ENV
        config["llm"][role]["api_base"] = llm_base_url
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    return folder


def run_workflow(workdir: Path, *args: str) -> tuple[float, str | None]:
    """Run the project's Snakefile in ``workdir`` (the loopback API key in its environment, which
    sbatch passes on to the jobs): (wall seconds, None) on success, else the seconds and the
    failure with the tail of Snakemake's output (all of it in ``workdir/snakemake.out``)."""
    cmd = [str(SNAKEMAKE), "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(workdir / "config.yaml"), *args]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=workdir, timeout=RUN_TIMEOUT_S,
                              env={**os.environ, LOOPBACK_KEY_ENV: "loopback-key"})
    except subprocess.TimeoutExpired:
        return time.monotonic() - start, f"snakemake {' '.join(args)} still running after {RUN_TIMEOUT_S} s"
    seconds = time.monotonic() - start
    (workdir / "snakemake.out").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        return seconds, f"snakemake {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-6000:]}"
    return seconds, None


def slurm_jobs_in(workdir: Path, since: datetime) -> int:
    """Number of Slurm jobs submitted since ``since`` whose working directory is ``workdir`` (sacct)."""
    proc = subprocess.run(["sacct", "-X", "-n", "-P", "--starttime", since.strftime("%Y-%m-%dT%H:%M:%S"),
                           "--format=JobIdRaw,WorkDir"], capture_output=True, text=True, check=True)
    rows = [line.split("|") for line in proc.stdout.splitlines() if line]
    return sum(1 for _, folder in rows if Path(folder) == workdir)


def result_tables(workdir: Path) -> dict[str, pl.DataFrame]:
    """Every Parquet table under results/ (per-run folders aside), timing columns dropped."""
    results = workdir / "results"
    tables = {}
    for path in sorted(results.rglob("*.parquet")):
        relative = path.relative_to(results)
        if relative.parts[0] in PER_RUN_FOLDERS:
            continue
        table = pl.read_parquet(path)
        tables[str(relative)] = table.drop([c for c in table.columns if TIMING_COLUMN.search(c)])
    return tables


def tables_equal(left: pl.DataFrame, right: pl.DataFrame) -> bool:
    """Same columns, types and rows; floats (also inside arrays) within FLOAT_RTOL and FLOAT_ATOL."""
    try:
        assert_frame_equal(left, right, check_exact=False, rel_tol=FLOAT_RTOL, abs_tol=FLOAT_ATOL)
    except AssertionError:
        return False
    return True


def unequal_tables(local: dict[str, pl.DataFrame], slurm: dict[str, pl.DataFrame]) -> list[str]:
    """Names of the tables that are missing on one side or differ (NaN equal to NaN)."""
    names = sorted(set(local) | set(slurm))
    return [name for name in names
            if name not in local or name not in slurm or not tables_equal(local[name], slurm[name])]


def test_smoke_config_on_slurm_equals_local_run(slurm_cluster, llm_server, tmp_path, capsys):
    local_dir = smoke_workdir(tmp_path / "local", llm_server.base_url)
    slurm_dir = smoke_workdir(tmp_path / "slurm", llm_server.base_url)

    local_seconds, local_failure = run_workflow(local_dir, "--cores", "2")
    submitted_since = datetime.now().replace(microsecond=0)
    slurm_seconds, slurm_failure = run_workflow(
        slurm_dir, "--workflow-profile", str(SLURM_PROFILE),
        # a test cluster answers at once: poll early, and do not wait a minute for NFS
        "--slurm-init-seconds-before-status-checks", "2", "--latency-wait", "10",
        "--slurm-keep-successful-logs",
    )
    slurm_jobs = slurm_jobs_in(slurm_dir, submitted_since)
    local_tables, slurm_tables = result_tables(local_dir), result_tables(slurm_dir)
    differing = unequal_tables(local_tables, slurm_tables)
    outputs_equal = not (local_failure or slurm_failure or differing)
    with capsys.disabled():
        print(f"\nslurm_jobs={slurm_jobs} slurm_seconds={slurm_seconds:.1f} local_seconds={local_seconds:.1f} "
              f"outputs_equal={str(outputs_equal).lower()}")

    assert local_failure is None, local_failure
    assert slurm_failure is None, slurm_failure
    assert slurm_jobs > 0, "no job of the Slurm run reached sacct"
    assert any(name.startswith("graded/") for name in local_tables), "the local run wrote no graded table"
    assert not differing, f"tables differ between the local and the Slurm run: {differing}"
    for run in (local_dir, slurm_dir):  # both runs say where their outputs came from
        provenance = json.loads((run / "results/run_summary.json").read_text())["provenance"]
        assert provenance["cpu"]["features"] and set(provenance["llm"]) == {"generator", "grader"}
