"""Grading runs as separate processes (``doubles.grading_worker``) against the loopback server.

A run killed with SIGKILL resumes: no completed prompt is requested again, the output equals that
of an uninterrupted run, and the calls of the killed run still count in the summary. A run stopped
with SIGTERM while requests are in flight caches their answers before it ends: no prompt the
server answered is asked again. Two runs sharing one response cache pay for each prompt once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from conftest import python_env
from retrieval_response.llm.accounting import merge_summaries, read_journal
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.testing.openai_server import OpenAIServer

pytestmark = pytest.mark.workflow

N_QUERIES = 6  # 6 ideal + 18 top-K answers + 18 grades = 42 prompts


def _worker(api_base: str, cache: Path, out: Path, journal: Path, start: Path | None = None) -> subprocess.Popen:
    """A grading run of N_QUERIES queries in its own process; with ``start``, it writes
    ``<out>.ready`` once imported and makes its first call when ``start`` exists."""
    return subprocess.Popen([sys.executable, "-m", "doubles.grading_worker", api_base, str(cache), str(out),
                             str(N_QUERIES), str(journal), *([str(start)] if start else [])],
                            env=python_env(RR_LOOPBACK_KEY="x"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)


def _completed(cache_dir: Path) -> set[str]:
    """Prompt hash prefixes of the responses durably in the cache (the server's ids carry them)."""
    cache = ResponseCache(cache_dir)
    return {cache.get(k)["response_id"].removeprefix("chatcmpl-") for k in cache.keys()}


def test_sigkill_then_rerun_repeats_no_completed_call_and_matches_an_uninterrupted_run(tmp_path):
    with OpenAIServer(latency_s=0.1) as reference_server:
        proc = _worker(reference_server.base_url, tmp_path / "cache_ref", tmp_path / "ref.parquet",
                       tmp_path / "journal_cache_ref")
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
        assert reference_server.stats()["requests"] == 42
    with OpenAIServer(latency_s=0.1) as server:
        proc = _worker(server.base_url, tmp_path / "cache", tmp_path / "out.parquet", tmp_path / "journal_cache")
        deadline = time.monotonic() + 120
        while len(_completed(tmp_path / "cache")) < 15 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        done_before_kill = _completed(tmp_path / "cache")
        assert 15 <= len(done_before_kill) < 42 and not (tmp_path / "out.parquet").exists()
        rerun = _worker(server.base_url, tmp_path / "cache", tmp_path / "out.parquet", tmp_path / "journal_cache")
        assert rerun.wait(timeout=120) == 0, rerun.stderr.read()
        counts = server.stats()["by_prompt"]
        requests = server.stats()["requests"]
    assert len(counts) == 42
    for prefix in done_before_kill:
        [count] = [n for digest, n in counts.items() if digest.startswith(prefix)]
        assert count == 1, f"completed prompt {prefix} was requested {count} times"
    repeated = sum(n - 1 for n in counts.values())
    assert repeated <= 2  # at most the calls in flight at the kill (concurrency 2)
    out, ref = pl.read_parquet(tmp_path / "out.parquet"), pl.read_parquet(tmp_path / "ref.parquet")
    assert out.equals(ref) and (out["status"] == "graded").all()

    # Accounting: every call that returned is in the journal, the killed run's included (only
    # the calls in flight at the kill, at most the concurrency of 2, are not), and the run
    # summary counts them although the killed run never wrote a job summary.
    journal = read_journal(tmp_path / "journal_cache")
    assert requests - 2 <= journal.height <= requests
    rerun_jobs = json.loads((tmp_path / "out.parquet.summaries.json").read_text())
    total = merge_summaries(rerun_jobs, journal)["total"]
    assert total["calls"] == journal.height > sum(job["calls"] for job in rerun_jobs)
    assert total["calls_without_job_summary"] >= len(done_before_kill)
    reference = read_journal(tmp_path / "journal_cache_ref")
    assert reference.height == 42
    assert total["prompt_tokens"] >= reference["prompt_tokens"].sum()  # the killed run's usage is not lost


def test_sigterm_with_requests_in_flight_then_rerun_asks_no_answered_prompt_again(tmp_path):
    """SIGTERM once 10 answers are sent and two requests are in flight at the server (its request
    log, not a clock, says when): the run ends by SIGTERM without output, having cached every
    answer the server sent, those in flight included; the rerun asks each of them no more."""
    with OpenAIServer(latency_s=0.5) as server:
        proc = _worker(server.base_url, tmp_path / "cache", tmp_path / "out.parquet", tmp_path / "journal")
        deadline = time.monotonic() + 120  # a bound on a broken run, not a synchronisation

        def in_flight_after_answers() -> bool:
            stats = server.stats()
            answered = sum(stats["ok_by_prompt"].values())
            return answered >= 10 and stats["requests"] - answered == 2

        while not in_flight_after_answers() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        assert in_flight_after_answers(), "the run never had two requests in flight after 10 answers"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM, proc.stderr.read()
        assert not (tmp_path / "out.parquet").exists()
        answered_before_rerun = server.stats()["ok_by_prompt"]
        assert 12 <= len(answered_before_rerun) < 42
        rerun = _worker(server.base_url, tmp_path / "cache", tmp_path / "out.parquet", tmp_path / "journal")
        assert rerun.wait(timeout=120) == 0, rerun.stderr.read()
        counts = server.stats()["by_prompt"]
    assert len(counts) == 42
    asked_again = {prompt: counts[prompt] for prompt in answered_before_rerun if counts[prompt] > 1}
    assert not asked_again, f"answered prompts asked again by the rerun: {asked_again}"
    assert read_journal(tmp_path / "journal").height == sum(counts.values())


def test_two_processes_sharing_a_cache_pay_for_each_prompt_once(tmp_path):
    """Two grading runs (42 prompts each) started together on one cache: the server sees each
    prompt once, the runs wait for each other's answers, each call is counted by exactly one run
    (which run makes how many depends on scheduling), and both write the same graded table. Both
    make their first call together, however long their imports take."""
    outs = [tmp_path / f"out{i}.parquet" for i in (1, 2)]
    with OpenAIServer(latency_s=0.15) as server:
        procs = [_worker(server.base_url, tmp_path / "cache", out, tmp_path / "journal", tmp_path / "start")
                 for out in outs]
        deadline = time.monotonic() + 120
        while not all(Path(f"{out}.ready").exists() for out in outs):
            assert time.monotonic() < deadline and all(proc.poll() is None for proc in procs), "a worker never got ready"
            time.sleep(0.05)
        (tmp_path / "start").touch()
        for proc in procs:
            assert proc.wait(timeout=180) == 0, proc.stderr.read()
        stats = server.stats()
    assert stats["requests"] == len(stats["by_prompt"]) == 42, "a prompt was paid for twice"
    jobs = [json.loads((tmp_path / f"out{i}.parquet.summaries.json").read_text()) for i in (1, 2)]
    assert sum(job["claim_waits"] for run in jobs for job in run) > 0, "the runs never met on a key"
    assert sum(job["calls"] for run in jobs for job in run) == 42, "a call was counted by both runs or by none"
    assert read_journal(tmp_path / "journal").height == 42
    assert pl.read_parquet(tmp_path / "out1.parquet").equals(pl.read_parquet(tmp_path / "out2.parquet"))
    assert not list((tmp_path / "cache" / "claims").iterdir())
