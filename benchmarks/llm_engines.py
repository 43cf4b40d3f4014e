"""Raw speed of the local engines on this machine: prompt evaluation and decode, tokens per second.

Three paths, same GGUF (``config.yaml``'s generator), same threads (the cores available),
temperature 0, measured in one run:

- ``llama_cpp_python``: llama.cpp in-process through llama-cpp-python's high-level
  ``create_chat_completion`` (the workflow's previous path; ``pip install llama-cpp-python==0.3.36``);
- ``server``: ``llama-server`` as the workflow starts it (``LlamaServer``), one request at a time;
- ``server_batched``: the same server with ``--batch`` slots, that many requests at once;
- ``server_repacked``: the server of ``server`` with the other ``repack_weights`` setting.

Prompt evaluation: a fixed prompt of about 500 tokens (shipped MS MARCO passages), max_tokens 1;
no prefix is reused (the server is asked not to cache prompts, the in-process model is reset
before each call), and each request has a distinct first line. Decode: a prompt asking
for a long list, ``--tokens`` tokens; the rate is (tokens - 1) / (wall time of ``--tokens`` tokens -
wall time of 1 token), the best of ``--repeats``. Last line: ``decode_ratio=<server / previous>
batched_decode_ratio=<server_batched / previous> prompt_ratio=<server / previous>
repacked_prompt_ratio=<server_repacked / server> repacked_decode_ratio=<server_repacked / server>``.
Run: ``.venv/bin/python benchmarks/llm_engines.py`` (``--smoke``: every path sends to the loopback
OpenAI server instead of a model, 4 tokens, one repeat: checks that it runs; its rates mean nothing.)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import yaml

from retrieval_response.llm.config import ModelConfig
from retrieval_response.llm.server import LOOPBACK, LlamaServer, available_cores
from retrieval_response.reports.benchmark_record import write_benchmark_json
from retrieval_response.testing.openai_server import serve_in_subprocess

REPO = Path(__file__).resolve().parents[1]
LIST_PROMPT = "List the numbers from 1 to 400 in words, one per line, and nothing else."


def passages_prompt() -> str:
    """About 500 tokens of shipped MS MARCO passages."""
    records = json.loads((REPO / "resources/data/msmarco/ms_marco_v1.1_train_sample200.json").read_text())
    passages = [text for record in records[:3] for text in record["passages"]["passage_text"]]
    return "Summarise these passages.\n\n" + "\n\n".join(passages)[:2400]


def messages(text: str, salt: int) -> list[dict]:
    return [{"role": "user", "content": f"Request {salt:04d}.\n{text}"}]


class InProcess:
    """llama-cpp-python's high-level chat completion, one call at a time."""

    def __init__(self, model: ModelConfig):
        from llama_cpp import Llama

        self.llama = Llama(model_path=model.model_path, n_ctx=model.n_ctx, n_threads=available_cores(), seed=0,
                           verbose=False)

    def complete(self, batch: list[list[dict]], max_tokens: int) -> int:
        tokens = 0
        for m in batch:
            self.llama.reset()  # evaluate the whole prompt: no prefix kept from the previous call
            tokens += self.llama.create_chat_completion(messages=m, temperature=0, max_tokens=max_tokens,
                                                        seed=0)["usage"]["completion_tokens"]
        return tokens


class Server:
    """Requests to a running llama-server, ``len(batch)`` at once."""

    def __init__(self, base: str):
        self.base = base

    def _one(self, body: dict) -> int:
        request = urllib.request.Request(f"{self.base}/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with LOOPBACK.open(request, timeout=600) as response:
            return json.load(response)["usage"]["completion_tokens"]

    def complete(self, batch: list[list[dict]], max_tokens: int) -> int:
        bodies = [{"messages": m, "temperature": 0, "max_tokens": max_tokens, "seed": 0, "cache_prompt": False}
                  for m in batch]
        with concurrent.futures.ThreadPoolExecutor(len(bodies)) as pool:
            return sum(pool.map(self._one, bodies))


def timed(engine, batch: list[list[dict]], max_tokens: int) -> tuple[float, int]:
    start = time.monotonic()
    tokens = engine.complete(batch, max_tokens)
    return time.monotonic() - start, tokens


def rates(engine, width: int, tokens: int, repeats: int, prompt: str, prompt_tokens: int,
          salt: list[int]) -> tuple[float, float]:
    """(prompt tokens per second, decode tokens per second) of ``engine`` with ``width`` requests at once."""
    engine.complete([messages("Say hi.", 0)], 4)  # warm-up
    prompt_rate, decode_rate = 0.0, 0.0
    for _ in range(repeats):
        salt[0] += width
        batch = [messages(prompt, salt[0] + i) for i in range(width)]
        seconds, _ = timed(engine, batch, 1)
        prompt_rate = max(prompt_rate, width * prompt_tokens / seconds)
        listing = [messages(LIST_PROMPT, salt[0] + i) for i in range(width)]
        first, _ = timed(engine, listing, 1)
        whole, generated = timed(engine, listing, tokens)
        tick = time.get_clock_info("monotonic").resolution  # a loopback server's two times may be equal
        decode_rate = max(decode_rate, (generated - width) / max(whole - first, tick))
    return prompt_rate, decode_rate


def count_prompt_tokens(base: str, prompt: str) -> int:
    """Prompt tokens of ``messages(prompt, 0)`` (the same for every salt) by the server's count."""
    request = urllib.request.Request(f"{base}/chat/completions", data=json.dumps(
        {"messages": messages(prompt, 0), "max_tokens": 1, "cache_prompt": False}).encode(),
        headers={"Content-Type": "application/json"})
    with LOOPBACK.open(request, timeout=600) as response:
        return json.load(response)["usage"]["prompt_tokens"]


@contextlib.contextmanager
def endpoint(model: ModelConfig, slots: int, repack: bool, smoke: bool) -> Iterator[str]:
    """The base URL of a ``llama-server`` of ``model`` with ``slots`` slots, as the workflow starts
    it, running for the block; with ``smoke``, of the loopback OpenAI server instead."""
    if smoke:
        with serve_in_subprocess() as server:
            yield server.base_url
        return
    server = LlamaServer(model_path=model.model_path, alias="bench", slots=slots, ctx_per_slot=model.n_ctx,
                         threads=available_cores(), repack_weights=repack)
    with server.running() as base:
        yield base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=128, help="tokens to decode per request")
    parser.add_argument("--batch", type=int, default=4, help="requests at once for server_batched")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", metavar="PATH", help="also write the results, with their provenance, to this JSON file")
    parser.add_argument("--smoke", action="store_true", help="the loopback server in place of every engine, 4 tokens, "
                        "one repeat: checks that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.tokens, args.batch, args.repeats = 4, 2, 1
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    model = ModelConfig.from_mapping({**config["llm"]["generator"],
                                      "model_path": str(REPO / config["llm"]["generator"]["model_path"])})
    prompt, prompt_tokens, salt = passages_prompt(), 0, [0]
    results = {}
    paths = (("server", 1, 1, model.repack_weights), ("server_batched", args.batch, args.batch, model.repack_weights),
             ("server_repacked", 1, 1, not model.repack_weights))
    for name, slots, width, repack in paths:
        with endpoint(model, slots, repack, args.smoke) as base:
            prompt_tokens = prompt_tokens or count_prompt_tokens(base, prompt)
            results[name] = rates(Server(base), width, args.tokens, args.repeats, prompt, prompt_tokens, salt)
    with (endpoint(model, 1, model.repack_weights, True) if args.smoke else contextlib.nullcontext()) as base:
        previous = Server(base) if args.smoke else InProcess(model)
        results["llama_cpp_python"] = rates(previous, 1, args.tokens, args.repeats, prompt, prompt_tokens, salt)
    for name, (prompt_rate, decode_rate) in results.items():
        print(f"{name}: prompt_tokens_per_second={prompt_rate:.1f} decode_tokens_per_second={decode_rate:.1f}")
    previous = results["llama_cpp_python"]
    ratios = {"decode_ratio": results["server"][1] / previous[1],
              "batched_decode_ratio": results["server_batched"][1] / previous[1],
              "prompt_ratio": results["server"][0] / previous[0],
              "repacked_prompt_ratio": results["server_repacked"][0] / results["server"][0],
              "repacked_decode_ratio": results["server_repacked"][1] / results["server"][1]}
    print(" ".join(f"{name}={ratio:.2f}" for name, ratio in ratios.items()))
    if args.json:
        write_benchmark_json(args.json, {**ratios, **{
            name: {"prompt_tokens_per_second": prompt_rate, "decode_tokens_per_second": decode_rate}
            for name, (prompt_rate, decode_rate) in results.items()}})


if __name__ == "__main__":
    main()
