"""Put the committed ML6 answers of the HotpotQA subsets back into the study's response cache.

The cache of parts 1-3 was lost; their answers live on in docs/findings/samples/samples_graded.json.
Part 5 grades them against the gold answers and answers the top-K sets of two more embedders,
which must not pay for these answers again. This script rebuilds, with the workflow's own code,
the exact request of each committed answer (prompt, model, sampling parameters: the cache key)
from the study's prepared texts and ML6 rankings, checks that the recomputed ranking equals the
committed one, and appends one record per request with the committed answer as its content
(response_id "samples_graded.json", token counts 0). It prints how many it wrote and how many of
those keys the cache held before with the same or another content (answers the live model
wrote again: a check that the committed answers are what the model writes). Run from the repository root,
after `snakemake --configfile config/study.yaml --directory study` has prepared and ranked:

    .venv/bin/python docs/findings/runs/part5/warm_cache.py [--check N]

``--check N`` then asks the local model again for N of these requests drawn at random (seed 0),
with an empty cache and one llama thread, and prints how many answers equal the committed ones.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

import polars as pl
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "src"))

from retrieval_response.llm.cache import ResponseCache  # noqa: E402
from retrieval_response.llm.jobs import client_from_config  # noqa: E402
from retrieval_response.llm.pipeline import topk_selections  # noqa: E402
from retrieval_response.llm.prompts import ANSWER_FIELDS, format_references, load_prompt  # noqa: E402

STUDY = Path("study")
DATASETS = {"hotpotqa_sentences": "Hs", "hotpotqa_paragraphs": "Hp"}
RECORD = {"model": None, "logprobs": None, "prompt_tokens": 0, "cached_prompt_tokens": 0, "completion_tokens": 0,
          "usage_invalid": True, "cost_usd": None, "finish_reason": "stop", "response_id": "samples_graded.json"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", type=int, default=0, metavar="N", help="requests to ask the live model again")
    args = parser.parse_args()
    config = yaml.safe_load(Path("config/study.yaml").read_text())
    llm = dict(config["llm"], cache=str(Path("docs/findings/llm_cache")))
    client = client_from_config(llm["generator"], llm, 1, "warm_cache", "warm_cache", "/dev/null")
    prompt = load_prompt("resources/prompts/answer.txt", ANSWER_FIELDS)
    cache = ResponseCache(llm["cache"])
    samples = pl.DataFrame(json.loads(Path("docs/findings/samples/samples_graded.json").read_text()),
                           infer_schema_length=None).filter(pl.col("E") == "ML6")
    held_before = cache.keys()
    written = same = other = repeated = 0
    warmed: list[tuple[list[dict], str]] = []
    for dataset, subset in DATASETS.items():
        texts = pl.read_parquet(STUDY / f"results/texts/{dataset}.parquet")
        ranked = pl.concat([pl.read_parquet(p) for p in sorted((STUDY / f"results/ranked/{dataset}/ML6").glob("*.parquet"))])
        rows = topk_selections(ranked, texts).join(
            samples.select("id", "Nc", "Np", "K", pl.col("rank").alias("rank_committed"), "answer_topK", "answer_ideal")
            .with_columns(pl.col("Nc", "Np", "K").cast(pl.Int32), pl.col("rank_committed").cast(pl.List(pl.Int32))),
            on=["id", "Nc", "Np", "K"], how="inner")
        committed = samples.filter(pl.col("id").str.starts_with(subset + "-")).height
        if rows.height != committed or (rows["rank"] != rows["rank_committed"]).any():
            raise SystemExit(f"{dataset}: {rows.height} of {committed} committed samples found with their ranking")
        requests = [(q, refs, answer) for q, refs, answer in rows.select("q", "refs", "answer_topK").iter_rows()]
        ideal = (rows.select("id", "Np", "answer_ideal").unique(["id", "Np"])
                 .join(texts.select("id", "q", "p"), on="id")
                 .with_columns(refs=pl.col("p").list.head(pl.col("Np"))))
        requests += [(q, refs, answer) for q, refs, answer in ideal.select("q", "refs", "answer_ideal").iter_rows()]
        for q, refs, answer in requests:
            if answer is None:
                continue
            messages = prompt.messages(query=q, references=format_references(refs))
            key = client.key(messages)
            held = cache.get(key)
            if held is not None and key in held_before:
                same += held["content"] == answer
                other += held["content"] != answer
                continue
            if held is not None:
                if held["content"] != answer:
                    raise SystemExit(f"{dataset}: one prompt has two committed answers: {held['content']!r}, {answer!r}")
                repeated += 1
                continue
            cache.put(key, dict(RECORD, model=client.model.model, content=answer))
            warmed.append((messages, answer))
            written += 1
        print(f"{dataset}: {rows.height} top-K samples, {ideal.height} ideal answers")
    cache.close()
    print(f"written {written} ({repeated} more requests repeat one of them); "
          f"held before: {same} with the committed answer, {other} with another")
    if args.check:
        check_live(llm, random.Random(0).sample(warmed, args.check))


def check_live(llm: dict, requests: list[tuple[list[dict], str]]) -> None:
    """Ask the local model for ``requests`` with an empty cache; print how many answers are the committed ones."""
    with tempfile.TemporaryDirectory() as empty:
        client = client_from_config(llm["generator"], dict(llm, cache=empty), 1, "warm_check", "warm_check", "/dev/null")
        completions = client.run_all([client.complete(m) for m, _ in requests], "check")
    equal = sum(c.content == answer for c, (_, answer) in zip(completions, requests, strict=True))
    print(f"live check: {equal} of {len(requests)} answers equal the committed ones")
    for c, (_, answer) in zip(completions, requests, strict=True):
        if c.content != answer:
            print(f"  committed: {answer!r}\n  live:      {c.content!r}")


if __name__ == "__main__":
    main()
