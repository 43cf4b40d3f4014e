"""A grading run against an OpenAI-compatible server, as a separate process (for the SIGKILL and
shared-cache tests; ``conftest.python_env`` puts ``tests`` on its module path).

``python -m doubles.grading_worker API_BASE CACHE_DIR OUT.parquet N_QUERIES JOURNAL_DIR [START_FILE]``
answers and grades a synthetic design (one embedder, Nc=5, Np=2, K=1..3) with the shipped prompts,
journals its calls in JOURNAL_DIR (stages ``answer`` and ``grade``), and writes the graded table
and, next to it, the two clients' job summaries (``OUT.parquet.summaries.json``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from retrieval_response.infra.atomic import write_json, write_parquet
from retrieval_response.llm import pipeline
from retrieval_response.llm.accounting import CallJournal
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig
from retrieval_response.llm.prompts import ANSWER_FIELDS, GRADE_FIELDS, load_prompt
from retrieval_response.testing.synthetic import synthetic_ranked, synthetic_texts
from retrieval_response.workflow_config.llm_requests import ideal_answer_requests

PROMPTS = Path(__file__).resolve().parents[2] / "resources" / "prompts"


def wait_for_start(out: str, start_file: str | None) -> None:
    """Write ``out``.ready, then return once ``start_file`` exists (at once without one)."""
    if start_file is None:
        return
    Path(f"{out}.ready").touch()
    while not Path(start_file).exists():
        time.sleep(0.01)


def run(api_base: str, cache_dir: str, out: str, n_queries: int, journal_dir: str,
        start_file: str | None = None) -> None:
    """Ideal answers, top-K answers and grades of the synthetic design, written to ``out``."""
    texts = synthetic_texts(n_queries)
    ranked = synthetic_ranked(texts, "E1", nc=5, np_=2, ks=[1, 2, 3])
    cache = ResponseCache(cache_dir)
    pacing = PacingConfig(concurrency=2, max_retries=3, timeout_seconds=5)
    generator = LLMClient(ModelConfig("openai/loopback", api_base=api_base, api_key_env="RR_LOOPBACK_KEY"),
                          pacing, cache, journal=CallJournal(journal_dir, "answer", out))
    grader = LLMClient(ModelConfig("openai/loopback", api_base=api_base, api_key_env="RR_LOOPBACK_KEY",
                                   max_tokens=4, logprobs=True), pacing, cache,
                       journal=CallJournal(journal_dir, "grade", out))
    answer = load_prompt(PROMPTS / "answer.txt", ANSWER_FIELDS)
    grade = load_prompt(PROMPTS / "grade.txt", GRADE_FIELDS, needs_reask=True)
    wait_for_start(out, start_file)
    ideal = pipeline.ideal_answers(ideal_answer_requests(texts, [2]), generator, answer)
    topk = pipeline.topk_answers(ranked, texts, generator, answer)
    write_parquet(pipeline.grade_answers(topk, ideal, texts, grader, grade), out)
    write_json([client.stats.summary(stage, out, 0.0) for stage, client in (("answer", generator), ("grade", grader))],
               f"{out}.summaries.json")


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], *sys.argv[6:7])
