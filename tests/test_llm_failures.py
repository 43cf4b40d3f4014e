"""Failures that speak, reruns that heal: LLM jobs against a loopback server that refuses
connections, then answers HTTP 500 for some prompts, then serves.

Above ``llm.max_failed_share`` (default 0) a job stops with one line naming the reasons, writes
nothing, and a plain rerun plans exactly the jobs that failed and their dependants and sends
exactly the failed prompts (the cache holds the rest). Within it, the job warns in one line and
keeps the failed samples; ``--forcerun`` of the answer rules then asks for them again, and for
the grades that depend on them. The final tables equal those of a run that never failed.

The upstream stages are replaced by synthetic texts and ranked files (``--allowed-rules``)."""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path

import polars as pl
import pytest

from conftest import LOOPBACK_KEY_ENV, llm_config, llm_workdir, loopback_model, planned_files, run_snakemake
from retrieval_response.testing.openai_server import OpenAIServer
from retrieval_response.testing.synthetic import synthetic_texts

pytestmark = pytest.mark.workflow

LLM_RULES = ("--allowed-rules", "answer_ideal", "answer_topk", "grade", "merge_graded", "llm_summary")
UNIT = "tiny/ML6/Nc5_Np2"
GRADED = f"results/graded/{UNIT}"
TOPK = f"results/answers/topk/{UNIT}"
IDEAL = "results/answers/ideal/tiny"
TARGETS = ("--", "results/llm_summary.json", f"{GRADED}.parquet")
QUERY_1 = "(1)?"  # in the prompts of query S-1 only (synthetic_texts), which falls in shard 2 of 2


def _bound_port() -> socket.socket:
    """A socket bound to a free loopback port and not listening: a connection to the port is
    refused, and no other process (another test worker's server) can take the port while it is held."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    return probe


def _text(messages: list[dict]) -> str:
    return " ".join(str(m.get("content", "")) for m in messages)


def _workdir(path: Path, port: int, **llm) -> Path:
    """Texts and ranked samples of 4 queries (Nc 5, Np 2, K 1-3) and a config whose models are
    at ``http://127.0.0.1:<port>/v1``, with no retries."""
    config = llm_config(loopback_model(f"http://127.0.0.1:{port}/v1"),
                        llm={"pacing": {"concurrency": 4, "max_retries": 0}, **llm})
    return llm_workdir(path, config, {"tiny": synthetic_texts(4).with_columns(p=pl.col("p").list.head(2))})


def _planned(workdir: Path, *args: str) -> set[str]:
    return planned_files(workdir, *args, *LLM_RULES, *TARGETS)


FAILURE_LINE = re.compile(r"(?:ERROR|WARNING) [a-z_]+ [^\r\n]*LLM requests failed[^\r\n]*")
"""A job's failure line, ``<LEVEL> <stage> <job>: ...``; a log line Snakemake prints of a failed
job (``<time> WARNING retrieval_response: <stage> ...``) does not match."""


def _said(proc) -> list[str]:
    """The failure lines the jobs printed, wherever they start: two jobs at once write to one
    stream, and a line may follow another job's progress bar (written without a line end)."""
    return sorted(FAILURE_LINE.findall(proc.stderr))


INJECTED_500 = "the provider said: retries_exhausted:server_error: InternalServerError: OpenAIException - injected 500"
"""What the failure line quotes of the loopback server's injected HTTP 500."""

def _failed_prompts(stats: dict) -> set[str]:
    return {digest for digest in stats["by_prompt"] if digest not in stats["ok_by_prompt"]}


def _tables(workdir: Path, shards: list[str]) -> dict[str, pl.DataFrame]:
    """The answer and graded tables of a run, the shard files concatenated in query order."""
    def joined(folder: str) -> pl.DataFrame:
        return pl.concat([pl.read_parquet(workdir / f"{folder}/{s}.parquet") for s in shards]).sort("id", "Np", "K")
    return {"ideal": pl.read_parquet(workdir / f"{IDEAL}.parquet"), "topk": joined(TOPK),
            "graded": pl.read_parquet(workdir / f"{GRADED}.parquet").sort("id", "Np", "K")}


@pytest.fixture(scope="module", autouse=True)
def api_key():
    os.environ[LOOPBACK_KEY_ENV] = "loopback-key"


@pytest.fixture(scope="module")
def never_failed(tmp_path_factory) -> dict[str, pl.DataFrame]:
    """The tables of a run whose server never failed."""
    with OpenAIServer() as server:
        workdir = _workdir(tmp_path_factory.mktemp("never_failed") / "run", server.port, shards=2)
        run_snakemake(workdir, "--cores", "2", *LLM_RULES, *TARGETS)
    return _tables(workdir, ["1-of-2", "2-of-2"])


def test_a_failed_job_stops_with_one_line_and_a_plain_rerun_sends_only_the_failed_prompts(tmp_path, never_failed):
    held = _bound_port()
    port = held.getsockname()[1]
    workdir = _workdir(tmp_path / "run", port, shards=2)
    place = f"(openai/loopback at http://127.0.0.1:{port}/v1)"

    # 1. Nothing listens: every LLM job stops with one line, writes nothing, journals its calls.
    down = run_snakemake(workdir, "--cores", "2", "--keep-going", *LLM_RULES, *TARGETS, check=False)
    assert down.returncode != 0
    assert _said(down) == sorted(
        f"ERROR {job}: {n} of {n} LLM requests failed: retries_exhausted:connection_error {n} {place}; "
        "the provider said: retries_exhausted:connection_error: InternalServerError: OpenAIException - Connection "
        "error.; more than llm.max_failed_share 0: no output, a rerun sends the failed requests again "
        "(the others come from the cache)"
        for job, n in (("answer_ideal tiny", 4), (f"answer_topk {UNIT}/1-of-2", 3), (f"answer_topk {UNIT}/2-of-2", 9)))
    assert not (workdir / f"{IDEAL}.parquet").exists() and not (workdir / f"{IDEAL}.summary.json").exists()
    assert not list((workdir / "results/answers/topk").rglob("*.parquet"))
    journal = pl.concat([pl.read_ndjson(p) for p in (workdir / "results/llm_journal").glob("*.jsonl")])
    assert journal["outcome"].value_counts().rows() == [("connection_error", 16)]

    held.close()
    with OpenAIServer(port=port, fail_when=lambda m: QUERY_1 in _text(m) and "Negative" in _text(m)) as server:
        # 2. The server is up but answers 500 to the 3 top-K prompts of query S-1 (shard 2): that
        # shard's answer job stops; the ideal answers, shard 1 and its grades are done.
        partly = run_snakemake(workdir, "--cores", "2", "--keep-going", *LLM_RULES, *TARGETS, check=False)
        assert partly.returncode != 0
        assert _said(partly) == [
            f"ERROR answer_topk {UNIT}/2-of-2: 3 of 9 LLM requests failed: retries_exhausted:server_error 3 {place}; "
            f"{INJECTED_500}; more than llm.max_failed_share 0: no output, a rerun sends the failed requests again "
            "(the others come from the cache)"]
        failed = _failed_prompts(server.stats())
        assert len(failed) == 3 and server.stats()["outcomes"]["fault_500"] == 3
        assert (workdir / f"{GRADED}/1-of-2.parquet").exists() and not (workdir / f"{TOPK}/2-of-2.parquet").exists()

        # 3. Served again: a plain rerun plans exactly the failed job and what depends on it ...
        server.fail_when = None
        server.reset_stats()
        assert _planned(workdir) == {
            f"{TOPK}/2-of-2.parquet", f"{TOPK}/2-of-2.summary.json",
            f"{GRADED}/2-of-2.parquet", f"{GRADED}/2-of-2.summary.json",
            f"{GRADED}.parquet", f"{GRADED}.json", "results/llm_summary.json"}
        run_snakemake(workdir, "--cores", "2", *LLM_RULES, *TARGETS)
        stats = server.stats()

    # ... and sends the 3 failed prompts once each, then the 9 grades of shard 2 that never ran.
    topk_job = json.loads((workdir / f"{TOPK}/2-of-2.summary.json").read_text())
    grade_job = json.loads((workdir / f"{GRADED}/2-of-2.summary.json").read_text())
    assert (topk_job["calls"], topk_job["cache_hits"]) == (3, 6)
    assert (grade_job["calls"], grade_job["cache_hits"]) == (9, 0)
    assert stats["requests"] == 12 and failed <= set(stats["by_prompt"])
    assert all(stats["by_prompt"][digest] == 1 for digest in failed)
    assert _planned(workdir) == set()
    for name, table in _tables(workdir, ["1-of-2", "2-of-2"]).items():
        assert table.equals(never_failed[name]), name
    summary = json.loads((workdir / "results/llm_summary.json").read_text())
    assert summary["total"]["calls_by_outcome"] == {"connection_error": 16, "ok": 4 + 3 + 6 + 3 + 3 + 9,
                                                    "server_error": 3}


def test_within_the_share_a_job_warns_and_forcerun_asks_for_the_failed_samples_again(tmp_path, never_failed):
    with OpenAIServer(fail_when=lambda m: QUERY_1 in _text(m)) as server:
        workdir = _workdir(tmp_path / "run", server.port, max_failed_share=0.5)
        place = f"(openai/loopback at {server.base_url})"
        # Query S-1's ideal answer and its 3 top-K answers fail: 1 of 4 and 3 of 12, within 0.5.
        warned = run_snakemake(workdir, "--cores", "2", *LLM_RULES, *TARGETS)
        assert _said(warned) == sorted(
            f"WARNING {stage} {job}: {n} of {of} LLM requests failed: retries_exhausted:server_error {n} {place}; "
            f"{INJECTED_500}; within llm.max_failed_share 0.5: kept as failed samples (--forcerun {stage} asks for them again)"
            for stage, job, n, of in (("answer_ideal", "tiny", 1, 4), ("answer_topk", f"{UNIT}/1-of-1", 3, 12)))
        graded = pl.read_parquet(workdir / f"{GRADED}.parquet")
        assert graded.filter(pl.col("id") == "S-1")["status"].to_list() == ["topk_answer:retries_exhausted:server_error"] * 3
        assert (graded.filter(pl.col("id") != "S-1")["status"] == "graded").all()

        server.fail_when = None
        server.reset_stats()
        # Kept failures are outputs like any other: a plain rerun plans nothing; --forcerun of the
        # answer rules plans them and every grade job that depends on them ...
        assert _planned(workdir) == set()
        forced = ("--forcerun", "answer_ideal", "answer_topk")
        assert _planned(workdir, *forced) == {
            f"{IDEAL}.parquet", f"{IDEAL}.summary.json", f"{TOPK}/1-of-1.parquet", f"{TOPK}/1-of-1.summary.json",
            f"{GRADED}/1-of-1.parquet", f"{GRADED}/1-of-1.summary.json", f"{GRADED}.parquet", f"{GRADED}.json",
            "results/llm_summary.json"}
        run_snakemake(workdir, "--cores", "2", *forced, *LLM_RULES, *TARGETS)
        # ... and sends the 4 failed answers and the 3 grades of S-1; the rest comes from the cache.
        assert server.stats()["requests"] == 4 + 3
    tables = _tables(workdir, ["1-of-1"])
    for name in ("ideal", "graded"):
        assert tables[name].equals(never_failed[name]), name
