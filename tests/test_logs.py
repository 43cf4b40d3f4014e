"""Job scripts report failures in their log file and on stderr; bad input is one line without a traceback."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.unit

# the rule scripts (helpers such as _workflow_package.py are not jobs)
SCRIPTS = sorted(p for p in (REPO / "workflow" / "scripts").glob("*.py") if not p.name.startswith("_"))


def run_job(tmp_path: Path, body: str) -> tuple[subprocess.CompletedProcess, str]:
    """Run a script that calls job_log(<tmp>/job.log) and then ``body``; (process, log text)."""
    log = tmp_path / "logs" / "job.log"
    code = f"from retrieval_response.infra.logs import job_log\nlog = job_log({str(log)!r})\n{body}\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return proc, log.read_text()


@pytest.mark.parametrize(
    ("path", "record", "rule"),
    [("data/x.jsonl", "line 3 (id faq-2)", "missing key 'q'"), ("/abs/samples.json", "record 1", "id 'a/b-1' cannot be used")],
)
def test_input_error_is_one_line_in_the_log_and_on_stderr(tmp_path, path, record, rule):
    body = f"from retrieval_response.infra.errors import InputError\nraise InputError({path!r}, {record!r}, {rule!r})"
    proc, log = run_job(tmp_path, body)
    line = f"{path}: {record}: {rule}"
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [line]
    assert log.rstrip("\n").endswith(f"ERROR retrieval_response: {line}") and log.count("\n") == 1


def test_a_job_failure_is_one_error_line_in_the_log_and_on_stderr(tmp_path):
    body = "from retrieval_response.infra.errors import JobFailure\nraise JobFailure('grade j: 3 of 3 LLM requests failed')"
    proc, log = run_job(tmp_path, body)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["ERROR grade j: 3 of 3 LLM requests failed"]
    assert log.rstrip("\n").endswith("ERROR retrieval_response: grade j: 3 of 3 LLM requests failed") and log.count("\n") == 1


def test_other_errors_keep_their_traceback_in_the_log_and_on_stderr(tmp_path):
    proc, log = run_job(tmp_path, "raise RuntimeError('disk full')")
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "RuntimeError: disk full" in proc.stderr
    assert "job failed" in log and "RuntimeError: disk full" in log


def test_a_job_that_succeeds_exits_zero_and_keeps_its_messages(tmp_path):
    proc, log = run_job(tmp_path, "log.info('3 queries written')")
    assert proc.returncode == 0 and proc.stderr == ""
    assert "3 queries written" in log


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_job_script_logs_through_job_log(script):
    text = script.read_text()
    assert re.search(r"^log = job_log\(snakemake\.log\[0\]\)$", text, re.MULTILINE), "use retrieval_response.infra.logs.job_log"
    assert "log_to_file" not in text
