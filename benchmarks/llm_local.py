"""Local LLM throughput: the workflow's LLM path against a plain single-stream llama.cpp baseline.

Prompts: real queries of the shipped data, as the default run asks them: ``config.yaml``'s
datasets, designs and embedders, with the first ``--queries`` sampled queries of each dataset
(the dataset's own seed), candidates ranked by each configured embedder. The workflow path runs
the jobs of a Snakemake run on them, in the run's order: per dataset the ideal answers, then one
top-K answer job and one grade job per (embedder, design), exactly as the jobs do (``LLMClient`` +
``llm.pipeline`` with ``config.yaml``'s generator and grader, one fresh response cache shared by
the jobs, one ``llama-server`` per model kept across the jobs, as a Snakemake run keeps its shared
server; a run would use one server for both when their settings are equal). The servers start
before the clock, as the baseline loads its model before it. Every message list it sent is
recorded in call order, and the baseline then sends the same distinct message lists, one at a
time, in that order:

- ``llama_cpp_python`` (when ``llama_cpp`` is importable: ``pip install llama-cpp-python==0.3.36``):
  the workflow's previous local path, llama.cpp in-process through llama-cpp-python's high-level
  ``create_chat_completion`` (it reuses the prefix shared with the previous prompt);
- otherwise ``llama_server_single``: ``llama-server --parallel 1`` with the workflow's server
  settings and prompt cache, one request at a time.

Both use the same GGUF, threads (the cores available), temperature 0, the same max_tokens.
Last line: ``local_speedup=<x> samples_per_minute=<y> decode_tokens_per_second=<d>
prompt_tokens_reused=<share>``: graded samples per minute of the workflow path over the
baseline's (same prompts, same run), the workflow path's graded samples per minute, its
completion tokens per wall second, and the share of its prompt tokens the server took from its
prompt cache.
Run: ``HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True .venv/bin/python benchmarks/llm_local.py``
(``--smoke``: one query of the first dataset, one ranker, both paths sending to the loopback OpenAI
server instead of a model: checks that it runs; its rates mean nothing.)
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import json
import tempfile
import time
import urllib.request
from pathlib import Path

import polars as pl
import yaml
from snakemake.utils import validate

from retrieval_response.datasets.layouts import prepare
from retrieval_response.embedding import make_embedder
from retrieval_response.llm import pipeline
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import TOP_LOGPROBS, ModelConfig
from retrieval_response.llm.jobs import job_pacing
from retrieval_response.llm.prompts import ANSWER_FIELDS, GRADE_FIELDS, load_prompt
from retrieval_response.llm.server import LOOPBACK, LlamaServer, available_cores
from retrieval_response.ranking.cosine_ranking import rank_samples
from retrieval_response.reports.benchmark_record import write_benchmark_json
from retrieval_response.testing.openai_server import serve_in_subprocess
from retrieval_response.workflow_config import plan
from retrieval_response.workflow_config.llm_requests import ideal_answer_requests

REPO = Path(__file__).resolve().parents[1]


def dataset_workload(config: dict, name: str, queries: int) -> tuple[pl.DataFrame, int, list[pl.DataFrame]]:
    """One dataset of ``config`` as the default run prepares and ranks it, limited to its first
    ``queries`` sampled queries: its texts, its distinct Np, and one ranked table per (embedder,
    design) unit in the run's order."""
    dataset = config["datasets"][name]
    texts = prepare(dataset["layout"], REPO / dataset["path"], level=dataset.get("level"), n_queries=queries,
                    seed=dataset["seed"], designs=[tuple(pair) for pair in plan.design_pairs(config, name)])[0]
    units = []
    for code in plan.registered_rankers(config, name):
        embedder = make_embedder(code, config["rankers"][code], threads=available_cores())
        for design in plan.dataset_designs(config, name):
            units.append(rank_samples(texts, embedder.encode, ranker_code=code, Nc=design["Nc"], Np=design["Np"],
                                      Ks=plan.design_cutoffs(config, design))[0])
    return texts, plan.dataset_nps(config, name), units


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
    """An ``LLMClient`` that appends every message list it is asked to complete, with its model
    config, to ``sent`` (shared by the clients of a run: one list in call order)."""

    def __init__(self, sent: list, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sent = sent

    async def complete(self, messages):
        self.sent.append((messages, self.model))
        return await super().complete(messages)


def workflow_path(workload: list, config: dict, cache_dir: Path) -> tuple[pl.DataFrame, float, list, dict]:
    """Graded table, wall seconds, message lists sent (with their max_tokens and logprobs), and
    token counters of the workflow's path over ``workload`` (``dataset_workload`` per dataset)."""
    cache, sent = ResponseCache(cache_dir), []
    generator = RecordingClient(sent, ModelConfig.from_mapping(config["llm"]["generator"]),
                                job_pacing(config["llm"]["pacing"], config["llm"]["generator"]), cache,
                                local_threads=available_cores())
    grader = RecordingClient(sent, ModelConfig.from_mapping(config["llm"]["grader"]),
                             job_pacing(config["llm"]["pacing"], config["llm"]["grader"]), cache,
                             local_threads=available_cores())
    answer = load_prompt(REPO / "resources/prompts/answer.txt", ANSWER_FIELDS)
    grade = load_prompt(REPO / "resources/prompts/grade.txt", GRADE_FIELDS, needs_reask=True)
    graded = []
    with generator, grader:  # each model's server kept across the jobs, as a Snakemake run shares its own
        start = time.monotonic()  # servers started, as the baseline's model is loaded, before the clock
        for texts, nps, units in workload:
            ideal = pipeline.ideal_answers(ideal_answer_requests(texts, nps), generator, answer)
            topk = [pipeline.topk_answers(ranked, texts, generator, answer) for ranked in units]
            graded += [pipeline.grade_answers(table, ideal, texts, grader, grade) for table in topk]
        seconds = time.monotonic() - start
    sent = distinct(sent)
    tokens = {name: getattr(generator.stats, name) + getattr(grader.stats, name)
              for name in ("prompt_tokens", "cached_prompt_tokens", "completion_tokens", "calls")}
    return pl.concat(graded), seconds, sent, tokens | {"slots": generator.concurrency}


def logprob_params(model: ModelConfig) -> dict:
    """The log-probability request of ``model`` (the grader's), as the workflow sends it."""
    return {"logprobs": True, "top_logprobs": TOP_LOGPROBS} if model.logprobs else {}


def baseline_llama_cpp_python(sent: list, generator: ModelConfig) -> float:
    """Wall seconds to send ``sent`` through llama-cpp-python in-process, one at a time."""
    from llama_cpp import Llama

    llama = Llama(model_path=generator.model_path, n_ctx=generator.n_ctx, n_threads=available_cores(), seed=0, verbose=False)
    start = time.monotonic()
    for messages, model in sent:  # log-probabilities need logits_all here; the old path took them from a
        # logits processor at a cost of one log-softmax per generated token, so none are asked
        llama.create_chat_completion(messages=messages, temperature=model.temperature,
                                     max_tokens=model.max_tokens, seed=0)
    return time.monotonic() - start


def one_at_a_time(base: str, sent: list) -> float:
    """Wall seconds to send ``sent`` to the OpenAI-compatible server at ``base``, one request at a time."""
    start = time.monotonic()
    for messages, model in sent:
        body = json.dumps({"model": "baseline", "messages": messages, "temperature": model.temperature,
                           "max_tokens": model.max_tokens, "seed": 0, **logprob_params(model)}).encode()
        request = urllib.request.Request(f"{base}/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with LOOPBACK.open(request, timeout=600) as response:
            response.read()
    return time.monotonic() - start


def baseline_llama_server_single(sent: list, generator: ModelConfig) -> float:
    """Wall seconds to send ``sent`` to ``llama-server --parallel 1`` (the workflow's server
    settings), one request at a time."""
    server = LlamaServer(model_path=generator.model_path, alias="baseline", slots=1, ctx_per_slot=generator.n_ctx,
                         threads=available_cores(), repack_weights=generator.repack_weights)
    with server.running() as base:
        return one_at_a_time(base, sent)


def smoke_config(config: dict, base: str) -> dict:
    """``config`` cut to one ranker of its first dataset, its LLM roles sent to the loopback
    server at ``base`` (their other settings kept)."""
    first = min(config["datasets"])
    code = plan.registered_rankers(config, first)[0]
    roles = {role: {**{k: v for k, v in config["llm"][role].items() if k != "model_path"},
                    "model": "openai/loopback", "api_base": base, "api_key_env": "RR_LOOPBACK_KEY"}
             for role in ("generator", "grader")}
    return {**config, "datasets": {first: {**config["datasets"][first], "rankers": [code]}},
            "llm": {**config["llm"], **roles}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2, help="sampled queries per dataset of config.yaml")
    parser.add_argument("--baseline", choices=["auto", "llama_cpp_python", "llama_server_single"], default="auto")
    parser.add_argument("--json", metavar="PATH", help="also write the results, with their provenance, to this JSON file")
    parser.add_argument("--smoke", action="store_true", help="one query, one ranker, the loopback server in place of "
                        "the models: checks that it runs")
    args = parser.parse_args()
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    validate(config, schema=str(REPO / "workflow/schemas/config.schema.yaml"))  # the defaults, as the workflow reads it
    for role in ("generator", "grader"):
        config["llm"][role]["model_path"] = str(REPO / config["llm"][role]["model_path"])
    with serve_in_subprocess() if args.smoke else contextlib.nullcontext() as loopback:
        if args.smoke:
            config, args.queries, args.baseline = smoke_config(config, loopback.base_url), 1, "loopback_single"
        workload = [dataset_workload(config, name, args.queries) for name in sorted(config["datasets"])]
        with tempfile.TemporaryDirectory() as tmp:
            graded, seconds, sent, tokens = workflow_path(workload, config, Path(tmp) / "cache")
        samples = int((graded["status"] == "graded").sum())
        expected_filled = int(graded.filter(pl.col("status") == "graded")["grade_expected"].is_not_null().sum())
        baseline = args.baseline
        if baseline == "auto":
            baseline = "llama_cpp_python" if importlib.util.find_spec("llama_cpp") else "llama_server_single"
        generator = ModelConfig.from_mapping(config["llm"]["generator"])
        if baseline == "loopback_single":
            baseline_seconds = one_at_a_time(loopback.base_url, sent)
        else:
            run_baseline = baseline_llama_cpp_python if baseline == "llama_cpp_python" else baseline_llama_server_single
            baseline_seconds = run_baseline(sent, generator)
    print(f"prompts={len(sent)} graded_samples={samples}/{graded.height} grade_expected_filled={expected_filled} "
          f"calls={tokens['calls']} prompt_tokens={tokens['prompt_tokens']} "
          f"cached_prompt_tokens={tokens['cached_prompt_tokens']} completion_tokens={tokens['completion_tokens']}")
    print(f"workflow_seconds={seconds:.1f} baseline={baseline} baseline_seconds={baseline_seconds:.1f} "
          f"generator_slots={tokens['slots']} threads={available_cores()}")
    per_minute = samples / seconds * 60
    print(f"local_speedup={baseline_seconds / seconds:.2f} samples_per_minute={per_minute:.2f} "
          f"decode_tokens_per_second={tokens['completion_tokens'] / seconds:.2f} "
          f"prompt_tokens_reused={tokens['cached_prompt_tokens'] / max(tokens['prompt_tokens'], 1):.3f}")
    if args.json:
        write_benchmark_json(args.json, {
            "local_speedup": baseline_seconds / seconds, "samples_per_minute": per_minute,
            "decode_tokens_per_second": tokens["completion_tokens"] / seconds,
            "prompt_tokens_reused": tokens["cached_prompt_tokens"] / max(tokens["prompt_tokens"], 1),
            "workflow_seconds": seconds, "baseline": baseline, "baseline_seconds": baseline_seconds,
            "prompts": len(sent), "graded_samples": samples, "prompt_tokens": tokens["prompt_tokens"],
            "cached_prompt_tokens": tokens["cached_prompt_tokens"], "completion_tokens": tokens["completion_tokens"],
            "generator_slots": tokens["slots"],
            **({"llama_cpp_python_version": importlib.metadata.version("llama-cpp-python")}
               if baseline == "llama_cpp_python" else {})})


if __name__ == "__main__":
    main()
