"""Start-up against work of the default run's ``embed`` jobs: a job against loading its model once
and encoding its texts.

The default run (``config.yaml``) has six embed jobs: each of its two datasets (their texts
prepared here from the committed samples, as ``prepare_dataset`` does) with each of its three
embedders. Each job is measured two ways, with an empty embedding store each time:

- cold: ``workflow/scripts/embed.py`` (the file Snakemake runs) in a fresh Python process, with a
  stand-in ``snakemake`` object naming the same inputs, outputs and parameters (interpreter,
  imports, model load, hashing, encoding, store and vectors written);
- baseline: in this process, already warm (modules imported, the model loaded once before), the
  model loaded again (``make_embedder``) plus the job's distinct texts encoded by it in batches
  (``Embedder.encode``): what a job cannot avoid; the median of ``--repeats`` runs.

Wall and CPU seconds (user + system) of each; on a loaded machine the wall clock counts waiting
for a core. Ratio: ``cold_over_baseline`` (wall) and ``cold_cpu_over_baseline_cpu``; the goal is
at most 1.5. Models come from the installed packages (no download).

Usage: python benchmarks/embed_job.py [--repeats N] [--json PATH] [--smoke]
(``--smoke``: one job, the first dataset's 2 queries with the quickest model to load, one repeat:
checks that it runs.)
Last line: ``<embedder>_<dataset>_cold_over_baseline=<r> ...``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import polars as pl
import yaml
from snakemake.utils import validate
from startup import cold_seconds

from retrieval_response.datasets import prepare
from retrieval_response.embedding import make_embedder
from retrieval_response.embedding.dataset import embed_dataset
from retrieval_response.embedding.store import EmbeddingStore
from retrieval_response.reports.benchmark_record import write_benchmark_json
from retrieval_response.workflow_config import plan

REPO = Path(__file__).resolve().parents[1]
SMOKE_BACKEND = "paraphrase_minilm_l3_onnx"
"""The backend of the ``--smoke`` job: one ONNX file, the quickest model to load."""


def default_config() -> dict:
    """``config.yaml`` with the schema's defaults filled in, as the workflow reads it."""
    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    validate(config, schema=str(REPO / "workflow/schemas/config.schema.yaml"))
    return config


def prepared_texts(config: dict, dataset: str) -> pl.DataFrame:
    """The texts table of ``dataset``, as the ``prepare_dataset`` job writes it."""
    spec = config["datasets"][dataset]
    texts, _ = prepare(spec["layout"], str(REPO / spec["path"]), level=spec.get("level"), subset=spec.get("subset"),
                       n_queries=spec["queries"], seed=spec["seed"],
                       designs=[tuple(d) for d in plan.design_pairs(config, dataset)],
                       text_words=spec.get("text_words"), allow_downloads=False)
    return texts


def embed_job(config: dict, dataset: str, embedder: str, folder: Path) -> dict:
    """The ``embed`` job of (``dataset``, ``embedder``) as plain data (``startup.run_job``'s form),
    with a store of its own in ``folder``."""
    return {"script": "embed", "input": {"texts": str(folder / f"{dataset}.parquet")},
            "output": {"vectors": str(folder / f"vectors_{embedder}_{dataset}.parquet")},
            "log": [str(folder / f"embed_{embedder}_{dataset}.log")],
            "wildcards": {"ranker": embedder, "dataset": dataset},
            "params": {"spec": config["rankers"][embedder], "store": str(folder / f"store_{embedder}_{dataset}"),
                       "designs": plan.design_pairs(config, dataset)},
            "threads": 2}  # the rule's


def baseline_seconds(config: dict, dataset: str, embedder: str, texts: pl.DataFrame, store: Path) -> tuple[float, float]:
    """Wall and CPU seconds of loading ``embedder``'s model and encoding ``dataset``'s texts once,
    in this process. The texts are the ones the job encodes (collected through a store that is
    then thrown away), encoded in one call per kind, as the job's store does."""
    spec = config["rankers"][embedder]
    collector = EmbeddingStore(store)
    recorder = _Recorder(make_embedder(embedder, spec, threads=2))
    embed_dataset(texts, [tuple(d) for d in plan.design_pairs(config, dataset)], recorder, collector)
    cpu, wall = time.process_time(), time.perf_counter()
    model = make_embedder(embedder, spec, threads=2)
    for kind, batch in recorder.calls:
        model.encode(batch, kind)
    return time.perf_counter() - wall, time.process_time() - cpu


class _Recorder:
    """Delegates to an embedder and keeps what it was asked to encode."""

    def __init__(self, embedder):
        self.embedder, self.calls = embedder, []
        self.fingerprint, self.prompt = embedder.fingerprint, embedder.prompt

    def encode(self, texts, kind):
        self.calls.append((kind, list(texts)))
        return self.embedder.encode(texts, kind)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="warm baseline runs per job (the median is taken)")
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    parser.add_argument("--smoke", action="store_true", help="one small job, one repeat: checks that it runs")
    args = parser.parse_args()
    config = default_config()
    if args.smoke:
        first = min(config["datasets"])
        ranker = next(code for code, spec in sorted(config["rankers"].items()) if spec["backend"] == SMOKE_BACKEND)
        config["datasets"] = {first: {**config["datasets"][first], "queries": 2, "rankers": [ranker]}}
        args.repeats = 1
    env = {**os.environ, "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for dataset in config["datasets"]:
            texts = prepared_texts(config, dataset)
            texts.write_parquet(folder / f"{dataset}.parquet")
            for embedder in plan.registered_rankers(config, dataset):
                job = embed_job(config, dataset, embedder, folder)
                cold, cold_cpu = cold_seconds(job, env)
                baseline_seconds(config, dataset, embedder, texts, folder / "warm-up")  # imports, first load
                runs = [baseline_seconds(config, dataset, embedder, texts, folder / f"collect{i}")
                        for i in range(args.repeats)]
                base, base_cpu = statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)
                name = f"{embedder}_{dataset}"
                results[name] = {"cold_seconds": round(cold, 3), "cold_cpu_seconds": round(cold_cpu, 3),
                                 "baseline_seconds": round(base, 3), "baseline_cpu_seconds": round(base_cpu, 3),
                                 "cold_over_baseline": round(cold / base, 2),
                                 "cold_cpu_over_baseline_cpu": round(cold_cpu / base_cpu, 2)}
                print(f"{name}: cold {cold:.2f} s ({cold_cpu:.2f} s CPU), model load + encoding {base:.2f} s "
                      f"({base_cpu:.2f} s CPU): cold/baseline {cold / base:.2f} ({cold_cpu / base_cpu:.2f} on CPU)",
                      flush=True)
    if args.json:
        write_benchmark_json(args.json, {"jobs": results, "repeats": args.repeats})
    print(" ".join(f"{name}_cold_over_baseline={r['cold_over_baseline']}" for name, r in results.items()))


if __name__ == "__main__":
    main()
