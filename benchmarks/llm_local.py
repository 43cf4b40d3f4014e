"""Local LLM throughput: the workflow's LLM path against a plain single-stream llama.cpp baseline.

Prompts: real queries of the shipped data (HotpotQA at paragraph and sentence level, MS MARCO),
design Nc=5, Np=2, K = 1..3, candidates ranked by a fixed bag-of-words cosine so the set is the
same on every machine. The workflow path runs the ideal answers, the top-K answers and the grades
exactly as the workflow's jobs do (``LLMClient`` + ``llm.pipeline`` with ``config.yaml``'s
generator and grader, a fresh response cache, one ``llama-server`` per model with its ``parallel``
slots (at most ``--concurrency``) kept across the stages as a Snakemake run shares it, prompts
sharing a prefix back to back). Every message list it sent is
recorded, and the baseline then sends the same distinct message lists, one at a time, in the
same order:

- ``llama_cpp_python`` (when ``llama_cpp`` is importable: ``pip install llama-cpp-python==0.3.36``):
  the workflow's previous local path, llama.cpp in-process through llama-cpp-python's high-level
  ``create_chat_completion`` (it reuses the prefix shared with the previous prompt);
- otherwise ``llama_server_single``: ``llama-server --parallel 1`` with its prompt cache, one
  request at a time.

Both use the same GGUF, threads (the cores available), temperature 0, the same max_tokens.
Last line: ``local_speedup=<x> samples_per_minute=<y> decode_tokens_per_second=<d>
prompt_tokens_reused=<share>``: graded samples per minute of the workflow path over the
baseline's (same prompts, same run), the workflow path's graded samples per minute, its
completion tokens per wall second, and the share of its prompt tokens the server took from its
prompt cache.
Run: ``HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True .venv/bin/python benchmarks/llm_local.py``
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import tempfile
import time
import urllib.request
import zlib
from pathlib import Path

import numpy as np
import polars as pl
import yaml

from retrieval_response.datasets.layouts import prepare
from retrieval_response.llm import pipeline
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import TOP_LOGPROBS, ModelConfig, PacingConfig
from retrieval_response.llm.prompts import ANSWER_FIELDS, GRADE_FIELDS, load_prompt
from retrieval_response.llm.server import LlamaServer, available_cores
from retrieval_response.ranking.cosine_ranking import rank_samples

REPO = Path(__file__).resolve().parents[1]
SOURCES = [  # (layout, file, level, queries)
    ("hotpotqa_ircot", "resources/data/hotpotqa/hotpot_dev_ircot_subsample500.jsonl", "paragraph", 2),
    ("hotpotqa_hf", "resources/data/hotpotqa/hotpot_dev_distractor_sample100.json", "sentence", 2),
    ("msmarco", "resources/data/msmarco/ms_marco_v1.1_train_sample200.json", None, 2),
]
NC, NP, KS = 5, 2, [1, 2, 3]
DIM = 512


def bag_of_words(texts: list[str], kind: str) -> np.ndarray:
    """Hashed bag-of-words vectors (crc32 of lower-cased words mod DIM): a fixed ranking."""
    vectors = np.zeros((len(texts), DIM))
    for row, text in enumerate(texts):
        for word in text.lower().split():
            vectors[row, zlib.crc32(word.encode()) % DIM] += 1.0
    return vectors


def benchmark_texts_and_ranking() -> tuple[pl.DataFrame, pl.DataFrame]:
    """The texts and ranked tables of the fixed prompt set."""
    texts = pl.concat([prepare(layout, REPO / path, level=level, n_queries=n, seed=1, designs=[(NC, NP)])[0]
                       .select("id", "subset", "q", "p", "n")
                       for layout, path, level, n in SOURCES])
    ranked, _ = rank_samples(texts, bag_of_words, embedder_code="BOW", Nc=NC, Np=NP, Ks=KS)
    return texts, ranked


def distinct(sent: list) -> list:
    """``sent`` without repeats (first kept): the workflow answers a repeated prompt from its cache."""
    seen, kept = set(), []
    for messages, model in sent:
        key = (json.dumps(messages), model.max_tokens, model.logprobs)
        if key not in seen:
            seen.add(key)
            kept.append((messages, model))
    return kept


class RecordingClient(LLMClient):
    """An ``LLMClient`` that records every message list it is asked to complete, in call order."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sent: list[list[dict]] = []

    async def complete(self, messages):
        self.sent.append(messages)
        return await super().complete(messages)


def workflow_path(texts, ranked, config: dict, slots: int, cache_dir: Path) -> tuple[pl.DataFrame, float, list, dict]:
    """Graded table, wall seconds, message lists sent (with their max_tokens and logprobs), and
    token counters of the workflow's path."""
    pacing = PacingConfig(concurrency=slots)
    cache = ResponseCache(cache_dir)
    generator = RecordingClient(ModelConfig.from_mapping(config["llm"]["generator"]), pacing, cache,
                                local_threads=available_cores())
    grader = RecordingClient(ModelConfig.from_mapping(config["llm"]["grader"]), pacing, cache,
                             local_threads=available_cores())
    answer = load_prompt(REPO / "resources/prompts/answer.txt", ANSWER_FIELDS)
    grade = load_prompt(REPO / "resources/prompts/grade.txt", GRADE_FIELDS, needs_reask=True)
    start = time.monotonic()
    with generator, grader:  # each model's server kept across the stages, as a Snakemake run shares it
        ideal = pipeline.ideal_answers(texts, [NP], generator, answer)
        topk = pipeline.topk_answers(ranked, texts, generator, answer)
        graded = pipeline.grade_answers(topk, ideal, texts, grader, grade)
    seconds = time.monotonic() - start
    sent = distinct([(m, generator.model) for m in generator.sent] + [(m, grader.model) for m in grader.sent])
    tokens = {name: getattr(generator.stats, name) + getattr(grader.stats, name)
              for name in ("prompt_tokens", "cached_prompt_tokens", "completion_tokens", "calls")}
    return graded, seconds, sent, tokens | {"slots": generator.concurrency}


def logprob_params(model: ModelConfig) -> dict:
    """The log-probability request of ``model`` (the grader's), as the workflow sends it."""
    return {"logprobs": True, "top_logprobs": TOP_LOGPROBS} if model.logprobs else {}


def baseline_llama_cpp_python(sent: list, model_path: str, n_ctx: int) -> float:
    """Wall seconds to send ``sent`` through llama-cpp-python in-process, one at a time."""
    from llama_cpp import Llama

    llama = Llama(model_path=model_path, n_ctx=n_ctx, n_threads=available_cores(), seed=0, verbose=False)
    start = time.monotonic()
    for messages, model in sent:  # log-probabilities need logits_all here; the old path took them from a
        # logits processor at a cost of one log-softmax per generated token, so none are asked
        llama.create_chat_completion(messages=messages, temperature=model.temperature,
                                     max_tokens=model.max_tokens, seed=0)
    return time.monotonic() - start


def baseline_llama_server_single(sent: list, model_path: str, n_ctx: int) -> float:
    """Wall seconds to send ``sent`` to ``llama-server --parallel 1``, one request at a time."""
    server = LlamaServer(model_path=model_path, alias="baseline", slots=1, ctx_per_slot=n_ctx,
                         threads=available_cores())
    with server.running() as base:
        start = time.monotonic()
        for messages, model in sent:
            body = json.dumps({"model": "baseline", "messages": messages, "temperature": model.temperature,
                               "max_tokens": model.max_tokens, "seed": 0, **logprob_params(model)}).encode()
            request = urllib.request.Request(f"{base}/chat/completions", data=body,
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=600) as response:
                response.read()
        return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=4, help="server slots of the workflow path")
    parser.add_argument("--baseline", choices=["auto", "llama_cpp_python", "llama_server_single"], default="auto")
    args = parser.parse_args()
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    for role in ("generator", "grader"):
        config["llm"][role]["model_path"] = str(REPO / config["llm"][role]["model_path"])
    texts, ranked = benchmark_texts_and_ranking()
    with tempfile.TemporaryDirectory() as tmp:
        graded, seconds, sent, tokens = workflow_path(texts, ranked, config, args.concurrency, Path(tmp) / "cache")
    samples = int((graded["status"] == "graded").sum())
    expected_filled = int(graded.filter(pl.col("status") == "graded")["grade_expected"].is_not_null().sum())
    baseline = args.baseline
    if baseline == "auto":
        baseline = "llama_cpp_python" if importlib.util.find_spec("llama_cpp") else "llama_server_single"
    generator = config["llm"]["generator"]
    run_baseline = baseline_llama_cpp_python if baseline == "llama_cpp_python" else baseline_llama_server_single
    baseline_seconds = run_baseline(sent, generator["model_path"], generator["n_ctx"])
    print(f"prompts={len(sent)} graded_samples={samples}/{graded.height} grade_expected_filled={expected_filled} "
          f"calls={tokens['calls']} prompt_tokens={tokens['prompt_tokens']} "
          f"cached_prompt_tokens={tokens['cached_prompt_tokens']} completion_tokens={tokens['completion_tokens']}")
    print(f"workflow_seconds={seconds:.1f} baseline={baseline} baseline_seconds={baseline_seconds:.1f} "
          f"generator_slots={tokens['slots']} threads={available_cores()}")
    per_minute = samples / seconds * 60
    print(f"local_speedup={baseline_seconds / seconds:.2f} samples_per_minute={per_minute:.2f} "
          f"decode_tokens_per_second={tokens['completion_tokens'] / seconds:.2f} "
          f"prompt_tokens_reused={tokens['cached_prompt_tokens'] / max(tokens['prompt_tokens'], 1):.3f}")


if __name__ == "__main__":
    main()
