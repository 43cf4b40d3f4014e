"""Traces at production size: a traces file of ``--queries`` queries answered by ``--systems``
systems (``--k`` documents each; 200,000 x 5 x 5 = 1,000,000 traces by default), written to a
temporary folder as JSON lines, gzip'd JSON lines and Parquet, through the workflow's stages,
against reading the same file with polars alone.

Every stage runs in a fresh Python process (this script with ``--stage``), one after the other, and
is measured in wall seconds, CPU seconds (user + system of the process and its children) and peak
memory (the largest resident set of the process or of a child it waited for,
``resource.getrusage``; the files are written by a child too, so that each stage's process starts
small):

- ``polars_read`` (the baseline): ``pl.read_ndjson`` of the JSON-lines file with the traces' fields
  and types (``docs`` a list of structs), ``pl.read_ndjson`` of the gunzipped bytes for the gzip'd
  file, ``pl.read_parquet`` for the Parquet file;
- ``startup_cold`` and ``startup_warm``: the start-up check of the workflow
  (``input_checks.check_trace_records`` with its cache file), first with an empty cache, then again;
- ``dry_run_cold`` and ``dry_run_warm`` (JSON lines only): ``snakemake -n`` of a traces config
  naming the file, in a fresh run folder, then again in the same folder (the second start-up finds
  the file checked);
- ``polars_floor`` (Parquet only): the least work the texts table needs, in polars alone (the
  file read, its documents exploded, one ``unique`` over query and document id): no stage that
  builds the texts table can be faster;
- ``prepare_traces``: the rule's work (``datasets.traces.read_traces``, both tables written as Parquet);
- ``sampling``: ``--sample`` queries of the prepared traces table, stratified by system, as the
  workflow's ``traces.sample`` draws them (``datasets.traces.sample_queries``);
- ``collect_traces``: ``tables.trace_samples.collect_traces`` on the sampled traces, with random
  UMBRELA labels for each of their (query, document) pairs and random grades (what the LLM jobs
  would write).

Ratios: each stage's wall and CPU seconds over the baseline's of the same format. Aim: within 3x
of the read and under 4 GB peak. ``--smoke``: 200 queries, seconds in all (the unit test of the
benchmarks runs it).

Usage: python benchmarks/traces.py [--queries N] [--systems S] [--k K] [--sample N] [--smoke] [--json PATH]
Last line: ``<format>_<stage>_over_read=<wall ratio>`` per format and stage, ``peak_gb=<largest peak>``.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
FORMATS = {"jsonl": "traces.jsonl", "gz": "traces.jsonl.gz", "parquet": "traces.parquet"}
LLM = {role: {"model": "openai/gpt-4o-mini", "api_key_env": "OPENAI_API_KEY"} for role in ("generator", "grader")}
POOL = 8
"""Documents per query that its systems' traces draw their documents from."""


def generate(folder: Path, queries: int, systems: int, k: int, seed: int = 0) -> dict[str, Path]:
    """The traces files (one per format of :data:`FORMATS`) of ``queries`` queries, each answered by
    ``systems`` systems with ``k`` of the query's :data:`POOL` documents (one text per document id),
    a 0/1 feedback and no gold answer."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    n = queries * systems
    query = np.repeat(np.arange(queries), systems)
    picks = np.argsort(rng.random((n, POOL)), axis=1)[:, :k]
    docs = (pl.DataFrame({"_trace": np.repeat(np.arange(n), k), "_doc": (query[:, None] * POOL + picks).ravel()})
            .select("_trace", id=pl.format("d{}", "_doc"), text=pl.format("text of document {} on its topic", "_doc"))
            .group_by("_trace", maintain_order=True).agg(docs=pl.struct("id", "text")))
    frame = pl.DataFrame({"_query": query, "_system": np.tile(np.arange(systems), queries),
                          "feedback": rng.integers(0, 2, n)}).select(
        query_id=pl.format("q{}", "_query"), query=pl.format("what does question {} ask?", "_query"),
        docs=docs["docs"], answer=pl.format("answer {} of system {}", "_query", "_system"), feedback="feedback",
        system=pl.format("sys{}", "_system"))
    paths = {name: folder / file for name, file in FORMATS.items()}
    frame.write_ndjson(paths["jsonl"])
    with open(paths["jsonl"], "rb") as source, gzip.open(paths["gz"], "wb", compresslevel=6) as target:
        while chunk := source.read(1 << 24):
            target.write(chunk)
    frame.write_parquet(paths["parquet"])
    return paths


def traces_config(path: Path) -> dict:
    """A traces config of the file ``path`` (UMBRELA labels, a remote LLM: a dry run sends nothing)."""
    return {"datasets": {"prod": {"layout": "traces", "path": str(path)}},
            "document_judgments": {"kinds": ["umbrela"]}, "llm": LLM}


def stage_polars_read(path: str) -> dict:
    """The baseline: the file read by polars alone, with the traces' fields and types."""
    import polars as pl

    schema = {"query_id": pl.String, "query": pl.String,
              "docs": pl.List(pl.Struct({"id": pl.String, "text": pl.String})), "answer": pl.String,
              "feedback": pl.Int64, "system": pl.String}
    if path.endswith(".parquet"):
        frame = pl.read_parquet(path)
    elif path.endswith(".gz"):
        with gzip.open(path, "rb") as stream:
            frame = pl.read_ndjson(io.BytesIO(stream.read()), schema=schema)
    else:
        frame = pl.read_ndjson(path, schema=schema)
    return {"rows": frame.height}


def stage_polars_floor(path: str) -> dict:
    """The least work of the texts table, in polars alone: the Parquet file read, its documents
    exploded to one row each, and one ``unique`` over (query id, document id)."""
    import polars as pl

    docs = (pl.read_parquet(path).select("query_id", "docs").explode("docs")
            .select("query_id", doc=pl.col("docs").struct.field("id"), text=pl.col("docs").struct.field("text")))
    return {"documents": docs.height, "distinct": docs.unique(["query_id", "doc"], keep="first", maintain_order=True).height}


def stage_startup(path: str, cache: str) -> dict:
    """The workflow's start-up check of the traces file, with the cache file ``cache`` (on the config
    with the schema's defaults, as the workflow gives it)."""
    from snakemake.utils import validate

    from retrieval_response.workflow_config.input_checks import check_trace_records

    config = traces_config(Path(path))
    validate(config, str(ROOT / "workflow/schemas/config.schema.yaml"))
    check_trace_records(config, "config.yaml", cache)
    return {}


def stage_dry_run(path: str, folder: str) -> dict:
    """``snakemake -n`` of a traces config of ``path`` in the run folder ``folder``."""
    import yaml

    Path(folder).mkdir(exist_ok=True)
    config = Path(folder) / "config.yaml"
    config.write_text(yaml.safe_dump(traces_config(Path(path))))
    env = {**os.environ, "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY") or "dry-run",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([str(SNAKEMAKE), "-n", "--snakefile", str(ROOT / "Snakefile"), "--directory", folder,
                           "--configfile", str(config), "--quiet", "rules"], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"dry run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return {}


def stage_prepare(path: str, out: str) -> dict:
    """The prepare_traces rule's work: the texts and traces tables of the file, written as Parquet."""
    from retrieval_response.datasets.traces import read_traces
    from retrieval_response.infra.atomic import write_parquet

    texts, traces, report = read_traces([path])
    write_parquet(texts, Path(out) / "texts.parquet")
    write_parquet(traces, Path(out) / "traces.parquet")
    return {"traces": report["traces"], "queries": report["queries"]}


def stage_sampling(out: str, queries: int, seed: int) -> dict:
    """``queries`` queries of the prepared traces table, stratified by system, as ``traces.sample``
    draws them (``datasets.traces.sample_queries``)."""
    import polars as pl

    from retrieval_response.datasets.traces import sample_queries

    traces = pl.read_parquet(Path(out) / "traces.parquet")
    chosen = sample_queries(traces.select(query_id="id", system="E"), queries, seed)
    sample = traces.filter(pl.col("id").is_in(list(chosen)))
    sample.write_parquet(Path(out) / "sample.parquet")
    return {"sampled_traces": sample.height, "sampled_queries": sample["id"].n_unique()}


def stage_collect(out: str, seed: int) -> dict:
    """collect_traces on the sampled traces, with random UMBRELA labels and grades."""
    import numpy as np
    import polars as pl

    from retrieval_response.tables.trace_samples import collect_traces

    rng = np.random.default_rng(seed)
    traces = pl.read_parquet(Path(out) / "sample.parquet")
    texts = pl.scan_parquet(Path(out) / "texts.parquet").filter(pl.col("id").is_in(traces["id"].unique().implode())).collect()
    pairs = texts.select("id", text=pl.concat_list("p", "n")).explode("text")
    judgments = pairs.with_columns(
        umbrela_label=pl.Series(rng.integers(0, 4, pairs.height), dtype=pl.Int8), umbrela_status=pl.lit("ok"),
        **{c: pl.lit(None, pl.String) for c in ("erag_answer", "erag_status", "udcg_raw", "udcg_status", "umbrela_raw")},
        no_response_p=pl.lit(None, pl.Float64))
    grades = traces.select("id", "E", grade_context=pl.Series(rng.integers(1, 6, traces.height), dtype=pl.Int8))
    table, report = collect_traces(traces, texts, grades, judgments, resamples=100, seed=seed)
    return {"samples": table.height}


def stage_generate(folder: str, queries: int, systems: int, k: int, seed: int) -> dict:
    """:func:`generate` in a child process, so that this process stays small (a child's peak memory
    starts from its parent's resident set at the fork)."""
    return {name: str(path) for name, path in generate(Path(folder), queries, systems, k, seed).items()}


STAGES = {"generate": stage_generate, "polars_read": stage_polars_read, "polars_floor": stage_polars_floor,
          "startup": stage_startup, "dry_run": stage_dry_run,
          "prepare_traces": stage_prepare, "sampling": stage_sampling, "collect_traces": stage_collect}


def children_usage() -> tuple[float, float]:
    """(user + system CPU seconds, peak resident set in bytes) of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def run_stage(name: str, *args) -> dict:
    """Wall and CPU seconds and peak memory of :data:`STAGES` ``name`` run in a fresh process."""
    cpu_before = children_usage()[0]
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--stage", name, json.dumps(list(args))],
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"stage {name} failed:\n{proc.stderr[-3000:]}")
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"wall_seconds": round(wall, 3), "cpu_seconds": round(children_usage()[0] - cpu_before, 3), **report}


def child(name: str, args: list) -> None:
    """Run stage ``name`` in this process; print its outcome and peak memory (of this process and
    of the children it waited for) as one JSON line."""
    outcome = STAGES[name](*args)
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    print(json.dumps({**outcome, "peak_gb": round(peak * 1024 / 1e9, 3)}))


def measure(folder: Path, paths: dict[str, Path], sample: int, seed: int) -> dict:
    """Every stage of every format (module docstring), with its ratios to the format's baseline."""
    results = {}
    for name, path in paths.items():
        out = folder / f"prepared_{name}"
        out.mkdir()
        cache = folder / f"cache_{name}.json"
        stages = {"polars_read": run_stage("polars_read", str(path)),
                  "startup_cold": run_stage("startup", str(path), str(cache)),
                  "startup_warm": run_stage("startup", str(path), str(cache))}
        if name == "parquet":
            stages["polars_floor"] = run_stage("polars_floor", str(path))
        if name == "jsonl":
            stages["dry_run_cold"] = run_stage("dry_run", str(path), str(folder / "run"))
            stages["dry_run_warm"] = run_stage("dry_run", str(path), str(folder / "run"))
        stages["prepare_traces"] = run_stage("prepare_traces", str(path), str(out))
        stages["sampling"] = run_stage("sampling", str(out), sample, seed)
        stages["collect_traces"] = run_stage("collect_traces", str(out), seed)
        read = stages["polars_read"]
        for stage in stages.values():
            stage["wall_over_read"] = round(stage["wall_seconds"] / read["wall_seconds"], 3)
            stage["cpu_over_read"] = round(stage["cpu_seconds"] / read["cpu_seconds"], 3)
        results[name] = {"file_bytes": path.stat().st_size, "stages": stages}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200_000)
    parser.add_argument("--systems", type=int, default=5)
    parser.add_argument("--k", type=int, default=5, help="documents per trace")
    parser.add_argument("--sample", type=int, default=2000, help="queries sampled (stratified by system)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="200 queries: seconds in all")
    parser.add_argument("--json", metavar="PATH", help="also write the results, with their provenance, to this JSON file")
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    parser.add_argument("stage_args", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        child(args.stage, json.loads(args.stage_args))
        return
    if args.smoke:
        args.queries, args.sample = 200, 20
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        generated = run_stage("generate", tmp, args.queries, args.systems, args.k, args.seed)
        paths = {name: Path(generated[name]) for name in FORMATS}
        formats = measure(folder, paths, args.sample, args.seed)
    peak = max(stage["peak_gb"] for result in formats.values() for stage in result["stages"].values())
    for name, result in formats.items():
        for stage, figures in result["stages"].items():
            print(f"{name} {stage}: {figures['wall_seconds']:.2f} s ({figures['cpu_seconds']:.2f} s CPU), "
                  f"peak {figures['peak_gb']:.2f} GB, x{figures['wall_over_read']:.2f} of the read "
                  f"(CPU x{figures['cpu_over_read']:.2f})")
    print(" ".join(f"{name}_{stage}_over_read={figures['wall_over_read']:.2f}" for name, result in formats.items()
                   for stage, figures in result["stages"].items() if stage != "polars_read") + f" peak_gb={peak:.2f}")
    if args.json:
        from retrieval_response.reports.benchmark_record import write_benchmark_json

        write_benchmark_json(args.json, {"queries": args.queries, "systems": args.systems, "k": args.k,
                                         "traces": args.queries * args.systems, "sample": args.sample,
                                         "formats": formats, "peak_gb": peak})


if __name__ == "__main__":
    main()
