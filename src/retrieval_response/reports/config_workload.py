"""Where the LLM calls of a config are counted: the config's own data when its files are there,
else the published set's counts.

- Datasets: each read and sampled exactly as the prepare stage does, its calls counted over its
  rankers and designs (:mod:`.llm_workload`); a corpus-level dataset's top-K texts at its corpus's
  mean reference length; a traces config on its traces files only (one not yet built is named and
  not counted), on the queries ``traces.sample`` or ``--queries`` samples, as the workflow samples
  them (more queries than a file holds: its workload scaled).
- Otherwise, as for ``config/paper.yaml`` before its data is downloaded, or a dataset without a
  file (the ir_datasets layout): the published set's counts (``published_set.yaml``, with its
  source), and tokens per call the mean over the real samples shipped in ``resources/data``
  (HotpotQA at paragraph and sentence level, MS MARCO, arXiv: the paper's sources but Natural
  Questions), prepared with the config's designs; judgment pairs are the published ranked samples
  of one embedder times the stand-ins' pairs per ranked sample of one embedder.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from retrieval_response.datasets import prepare
from retrieval_response.datasets.judged_corpus import beir_qrels
from retrieval_response.datasets.layouts import corpus_table, prepare_judged_queries
from retrieval_response.datasets.traces import read_traces
from retrieval_response.infra.yaml_files import loads_yaml
from retrieval_response.llm.document_judgments import KINDS
from retrieval_response.llm.prompts import PROMPT_FIELDS, Prompt, load_prompt
from retrieval_response.reports.llm_workload import (
    Counter,
    Stage,
    Workload,
    corpus_workload,
    ranked_samples,
    scaled_workload,
    texts_workload,
    traces_workload,
)
from retrieval_response.workflow_config.plan import (
    corpus_cutoffs,
    dataset_designs,
    dataset_rankers,
    designs_with_cutoffs,
    is_corpus_level,
    is_traces,
    trace_grade_prompts,
)

REPO = Path(__file__).resolve().parents[3]
DEFAULT_PROMPTS = {name: f"resources/prompts/{name}.txt" for name in ("answer", "grade", "udcg", "umbrela")}
STAND_INS = (  # (layout, shipped file, level): real samples of the paper's sources
    ("hotpotqa_hf", "resources/data/hotpotqa/hotpot_dev_distractor_sample100.json", "paragraph"),
    ("hotpotqa_hf", "resources/data/hotpotqa/hotpot_dev_distractor_sample100.json", "sentence"),
    ("msmarco", "resources/data/msmarco/ms_marco_v1.1_train_sample200.json", None),
    ("arxiv_parquet", "resources/data/arxiv/arxiv_2023-09_abstracts.parquet", None),
)


def published_counts() -> dict[str, int]:
    """The published set's ``graded_samples``, ``ranked_samples`` and ``embedders`` (``published_set.yaml``)."""
    source = resources.files("retrieval_response.reports").joinpath("published_set.yaml")
    return loads_yaml(source.read_text(encoding="utf-8"), "published_set.yaml")


def shipped_or_local(path: str, base: Path) -> Path:
    """``path`` relative to ``base`` (the working folder), else the copy shipped with the workflow."""
    local = base / path
    return local if local.exists() or Path(path).is_absolute() else REPO / path


def load_prompts(config: dict, base: Path) -> tuple[Prompt, Prompt, dict[str, Prompt]]:
    """The answer and grade prompts of ``config`` and the prompts of its udcg and umbrela judgments."""
    prompts = {**DEFAULT_PROMPTS, **(config.get("llm") or {}).get("prompts", {})}
    kinds = set((config.get("document_judgments") or {}).get("kinds") or [])
    return (load_prompt(shipped_or_local(prompts["answer"], base), PROMPT_FIELDS["answer"]),
            load_prompt(shipped_or_local(prompts["grade"], base), PROMPT_FIELDS["grade"]),
            {kind: load_prompt(shipped_or_local(prompts[kind], base), PROMPT_FIELDS[kind])
             for kind in ("udcg", "umbrela") if kind in kinds})


def traces_dataset_workload(config: dict, name: str, dataset: dict, source: Path, base: Path, counter: Counter,
                            answer_tokens: int, kinds: list[str], queries: int | None = None) -> tuple[Workload, str]:
    """:func:`traces_workload` of the traces dataset ``name`` (its files read as the prepare_traces
    rule reads them, its grading prompts those of its ``trace_grades``) and, in words, what it was
    counted on: the traces of ``queries`` queries (else ``traces.sample``, else all) sampled as the
    workflow samples them (``datasets.traces.sample_queries``, ``traces.seed``); with more
    ``queries`` than the files hold, their workload scaled to ``queries`` (the same calls and
    tokens per query)."""
    files = [source, *(shipped_or_local(p, base) for p in dataset.get("paths") or [])]
    section = config.get("traces") or {}
    wanted = queries or section.get("sample")
    texts, traces, report = read_traces(files, feedback_labels=dataset.get("feedback_labels"),
                                        subset=dataset.get("subset") or name, sample=wanted,
                                        seed=section.get("seed", 0))
    grade_prompts = {prefix: load_prompt(shipped_or_local(path, base), PROMPT_FIELDS[f"grade_{prefix}"], needs_reask=True)
                     for prefix, path in trace_grade_prompts(config, name).items()}
    work = traces_workload(texts, traces, counter, answer_tokens, kinds, grade_prompts)
    held = report["sample"]["of"] if report["sample"] else texts.height
    if queries and queries > texts.height:
        return scaled_workload(work, queries / texts.height), f"{name}: its {held} queries scaled to {queries}"
    if wanted and wanted < held:
        return work, f"{name}: {texts.height} of its {held} queries sampled by system (traces.seed)"
    return work, f"{name}: its {held} queries"


def config_workload(config: dict, base: Path, counter: Counter, answer_tokens: int, kinds: list[str],
                    queries: int | None = None) -> tuple[Workload, str]:
    """The LLM calls of the defaults-filled ``config`` (paths relative to ``base``) and, in words,
    what they were counted on (module docstring), with ``answer_tokens`` completion tokens per
    answer and the judgment ``kinds``. With ``queries``, each dataset's workload is scaled from its
    sampled queries to ``queries`` queries (the same calls and tokens per query); this needs the
    config's data (ValueError without it)."""
    datasets = config.get("datasets") or {}
    sources = {name: shipped_or_local(d["path"], base) for name, d in datasets.items() if "path" in d}
    sources = {name: beir_qrels(path, datasets[name].get("split"))
               if datasets[name]["layout"] == "beir" and path.is_dir() else path for name, path in sources.items()}
    work = Workload()
    if any(is_traces(config, name) for name in datasets):
        missing = [str(path) for path in sources.values() if not path.exists()]
        counted = []
        for name, dataset in datasets.items():
            if sources[name].exists():
                dataset_work, words = traces_dataset_workload(config, name, dataset, sources[name], base, counter,
                                                              answer_tokens, kinds, queries)
                work.merge(dataset_work)
                counted.append(words)
        basis = "counted on the traces files" + (f" ({'; '.join(counted)})" if counted else "") + (
            f"; {', '.join(missing)} not found: build it first (docs/TRACES.md), its calls are not counted"
            if missing else "")
    elif datasets and len(sources) == len(datasets) and all(path.exists() for path in sources.values()):
        for name, dataset in datasets.items():
            if is_corpus_level(config, name):
                texts, _ = prepare_judged_queries(dataset["layout"], sources[name], n_queries=dataset.get("queries"),
                                                  seed=dataset.get("seed", 0))
                corpus = corpus_table(dataset["layout"], sources[name])["text"].to_list()
                dataset_work = corpus_workload(texts, corpus, corpus_cutoffs(config, name),
                                               len(dataset_rankers(config, name)), counter, answer_tokens, kinds)
                work.merge(scaled_workload(dataset_work, queries / texts.height) if queries else dataset_work)
                continue
            designs = designs_with_cutoffs(config, dataset_designs(config, name))
            texts, _ = prepare(dataset["layout"], sources[name], level=dataset.get("level"),
                               subset=dataset.get("subset"), n_queries=dataset.get("queries"),
                               seed=dataset.get("seed", 0), designs=[(nc, np_) for nc, np_, _ in designs])
            dataset_work = texts_workload(texts, designs, len(dataset_rankers(config, name)), counter,
                                          answer_tokens, kinds)
            work.merge(scaled_workload(dataset_work, queries / texts.height) if queries else dataset_work)
        basis = ("counted on the config's data" if not queries else
                 f"counted on the config's data, each dataset scaled from its sampled queries to {queries} queries")
    elif queries:
        raise ValueError("--queries scales the config's own datasets: their files are needed")
    else:
        designs = designs_with_cutoffs(config, config["designs"])
        per_call: dict[str, list[Stage]] = {name: [] for name in work.stages}
        pairs_per_ranked: list[float] = []
        for layout, path, level in STAND_INS:
            texts, _ = prepare(layout, REPO / path, level=level, n_queries=None, seed=0,
                               designs=[(nc, np_) for nc, np_, _ in designs])
            source = texts_workload(texts, designs, 1, counter, answer_tokens, kinds)
            work.judgments_exact = work.judgments_exact and source.judgments_exact
            for name, stage in source.stages.items():
                if stage.calls:
                    per_call[name].append(stage.scaled_to(1))
            ranked = ranked_samples(texts, designs)
            if kinds and ranked:
                pairs_per_ranked.append(source.stages[kinds[0]].calls / ranked)
        # every source that has such calls weighs the same; the published counts
        published = published_counts()
        ranked_per_embedder = published["ranked_samples"] // published["embedders"]
        judgment_calls = round(ranked_per_embedder * sum(pairs_per_ranked) / len(pairs_per_ranked)) \
            if pairs_per_ranked else 0
        counts = {"ideal": ranked_per_embedder, "topk": published["graded_samples"],
                  "grade": published["graded_samples"], **dict.fromkeys(KINDS, judgment_calls)}
        for name, units in per_call.items():
            if not units:
                continue
            prompt = sum(unit.prompt_tokens for unit in units) / len(units)
            completion = sum(unit.completion_tokens for unit in units) / len(units)
            work.stages[name] = Stage(counts[name], prompt * counts[name], completion * counts[name])
        missing = ", ".join(datasets[name]["path"] for name, path in sources.items() if not path.exists()) or "no datasets"
        basis = (f"the published set's counts ({missing} not found), tokens per call from the shipped "
                 "real samples (HotpotQA paragraphs and sentences, MS MARCO, arXiv)")
    return work, basis
