"""Throughput and fault handling of the LLM layer against the loopback OpenAI server.

The server runs in a child process with 100 ms latency and a 20 requests/s limit (sliding one-second
window; excess gets 429 + Retry-After). Phases, all in this run:

1. baseline: concurrency 8, no client pacing -> achieved requests/s and 429s it provokes;
2. paced: concurrency 8, requests_per_minute = 0.95 x the limit -> sustained fraction = achieved
   requests/s over the limit, and the 429s caused by our own pacing (target 0);
3. faults: ideal answers, top-K answers and grades of a synthetic design under 20% injected faults
   (429 with Retry-After, 500, timeouts, malformed JSON, unparseable grades): samples that ended
   neither graded nor recorded as failed (target 0);
4. rerun of phase 3 with the same cache: calls made (target 0).

Last line: ``sustained_fraction=<x> faults_unaccounted=<n> rerun_calls=<m>``.
Run: ``PYTHONPATH=src HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True .venv/bin/python benchmarks/llm_throughput.py``
(``--smoke``: 10 requests per phase, 2 queries: checks that it runs.)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

from retrieval_response.llm import pipeline
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig
from retrieval_response.llm.prompts import ANSWER_FIELDS, GRADE_FIELDS, load_prompt
from retrieval_response.reports.benchmark_record import write_benchmark_json
from retrieval_response.testing.openai_server import FaultSchedule, serve_in_subprocess
from retrieval_response.testing.synthetic import synthetic_ranked, synthetic_texts
from retrieval_response.workflow_config.llm_requests import ideal_answer_requests

REPO = Path(__file__).resolve().parents[1]
LIMIT_RPS = 20.0
LATENCY_S = 0.1
FAULT_MIX = FaultSchedule(rate_limit_429=5, server_error_500=5, timeout=3, malformed_json=4,
                          unparseable_grade=3, retry_after_s=0.2, timeout_sleep_s=2.0, seed=1)


def _client(api_base: str, cache: ResponseCache, pacing: PacingConfig, **model) -> LLMClient:
    return LLMClient(ModelConfig("openai/loopback", api_base=api_base, api_key_env="RR_LOOPBACK_KEY", **model),
                     pacing, cache, jitter_seed=0)


def throughput(requests: int, rpm: float | None, cache_dir: Path, label: str) -> tuple[float, float, int]:
    """For ``requests`` distinct prompts: sustained requests/s (200s per second between the
    server's first and last 200, i.e. without the client's start-up), wall-clock requests/s
    (including litellm's first-call imports), and 429s from the server's own limit."""
    with serve_in_subprocess(LATENCY_S, LIMIT_RPS) as server:
        client = _client(server.base_url, ResponseCache(cache_dir / label),
                         PacingConfig(concurrency=8, requests_per_minute=rpm, max_retries=10,
                                      backoff_base_seconds=0.05, backoff_max_seconds=1.0))
        messages = [[{"role": "user", "content": f"{label} question {i}"}] for i in range(requests)]
        start = time.monotonic()
        results = client.run_all([client.complete(m) for m in messages], label)
        elapsed = time.monotonic() - start
        stats = server.stats()
    assert all(r.ok for r in results), "every request must end answered"
    return stats["ok_rps"], requests / elapsed, stats["outcomes"].get("rate_limited", 0)


def graded_run(api_base: str, cache_dir: Path, n_queries: int) -> pl.DataFrame:
    """Ideal answers, top-K answers and grades of a synthetic design (Nc=5, Np=2, K=1..3)."""
    texts = synthetic_texts(n_queries, seed=3)
    ranked = synthetic_ranked(texts, "E1", nc=5, np_=2, ks=[1, 2, 3], seed=3)
    cache = ResponseCache(cache_dir)
    pacing = PacingConfig(concurrency=16, requests_per_minute=0.95 * 60 * LIMIT_RPS, max_retries=8,
                          timeout_seconds=1.0, backoff_base_seconds=0.1, backoff_max_seconds=2.0)
    generator = _client(api_base, cache, pacing)
    grader = _client(api_base, cache, pacing, max_tokens=4, logprobs=True)
    answer = load_prompt(REPO / "resources/prompts/answer.txt", ANSWER_FIELDS)
    grade = load_prompt(REPO / "resources/prompts/grade.txt", GRADE_FIELDS, needs_reask=True)
    ideal = pipeline.ideal_answers(ideal_answer_requests(texts, [2]), generator, answer)
    topk = pipeline.topk_answers(ranked, texts, generator, answer)
    return pipeline.grade_answers(topk, ideal, texts, grader, grade)


def unaccounted(graded: pl.DataFrame, expected_rows: int) -> int:
    """Samples missing, or neither graded (status graded + grade) nor failed (reason + no grade)."""
    graded_ok = (pl.col("status") == "graded") & pl.col("grade").is_not_null()
    failed = pl.col("status").is_not_null() & (pl.col("status") != "graded") & pl.col("grade").is_null()
    return expected_rows - graded.filter(graded_ok | failed).height


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--json", metavar="PATH", help="also write the results, with their provenance, to this JSON file")
    parser.add_argument("--smoke", action="store_true", help="10 requests per phase, 2 queries: checks that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.requests, args.queries = 10, 2
    os.environ.setdefault("RR_LOOPBACK_KEY", "loopback")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base_rps, base_wall, base_429 = throughput(args.requests, None, tmp, "baseline")
        paced_rps, paced_wall, own_429 = throughput(args.requests, 0.95 * 60 * LIMIT_RPS, tmp, "paced")
        print(f"baseline (unpaced): sustained {base_rps:.2f} req/s = {base_rps / LIMIT_RPS:.3f} of the limit "
              f"(wall clock {base_wall:.2f}), 429s provoked {base_429}", file=sys.stderr)
        print(f"paced (rpm 0.95 x limit): sustained {paced_rps:.2f} req/s = {paced_rps / LIMIT_RPS:.3f} of the "
              f"limit (wall clock {paced_wall:.2f} = {paced_wall / LIMIT_RPS:.3f}), 429s from own pacing "
              f"{own_429}; paced/baseline sustained rps {paced_rps / base_rps:.3f}", file=sys.stderr)
        with serve_in_subprocess(LATENCY_S, LIMIT_RPS, FAULT_MIX.scaled_to(0.20)) as server:
            start = time.monotonic()
            graded = graded_run(server.base_url, tmp / "faults", args.queries)
            seconds = time.monotonic() - start
            first = server.stats()
            rerun = graded_run(server.base_url, tmp / "faults", args.queries)
            rerun_calls = server.stats()["requests"] - first["requests"]
        lost = unaccounted(graded, args.queries * 3)
        print(f"faults phase: {first['requests']} requests in {seconds:.1f} s, outcomes {first['outcomes']}, "
              f"statuses {dict(graded['status'].value_counts().iter_rows())}, "
              f"rerun identical: {rerun.equals(graded)}", file=sys.stderr)
    print(f"sustained_fraction={paced_rps / LIMIT_RPS:.3f} faults_unaccounted={lost} rerun_calls={rerun_calls}")
    if args.json:
        write_benchmark_json(args.json, {"sustained_fraction": paced_rps / LIMIT_RPS, "faults_unaccounted": lost,
                                         "rerun_calls": rerun_calls})


if __name__ == "__main__":
    main()
