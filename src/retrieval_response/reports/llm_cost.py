"""What a config's LLM stages cost before it runs: calls, prompt and completion tokens, dollars.

    python -m retrieval_response.reports.llm_cost CONFIG [--answer-tokens N] [--price MODEL=PROMPT,COMPLETION ...]
        [--queries N]

Calls, as the workflow makes them: one ideal answer per (query, Np) of a dataset (shared by the
rankers and by the designs with that Np), and per (query, ranker, design, K) one top-K answer
and one grade. With document judgments on (``document_judgments.kinds``), one judgment call per
kind and distinct (query, text) pair that can appear in a top-K of the dataset (any embedder,
design and K). The ranking is not known before the run, so every candidate text of a design
(``p[:Np] + n[:Nc-Np]``) with some K counts: exact when each design's largest K is its Nc (every
candidate is then in a top-K), otherwise an upper bound (the run judges only the texts its
rankings put in a top-K); the output says which. An ``erag`` request of a text ranked first under
K = 1 is the top-1 answer's request, served from the cache; it is counted anyway.

Prompt tokens are counted with litellm's tokenizer for the generator's model on the prompt files
of the config (``llm.prompts``), filled as the workflow fills them:

- ideal answer: the answer prompt with the query and the Np positives as numbered references;
- top-K answer: the answer prompt with the query and K references, each counted as the mean
  reference of that query's Nc candidates (the ranking is not known before the run);
- grade: the grade prompt with the query, the ideal answer and the answer to grade, each of
  ``answer_tokens`` tokens;
- judgments: ``erag`` the answer prompt with the query and the one text as reference; ``udcg``
  the UDCG prompt (``llm.prompts.udcg``) and ``umbrela`` the UMBRELA prompt (``llm.prompts.umbrela``)
  with the query and the text.

Completion tokens: ``answer_tokens`` per answer, by default the generator's ``max_tokens`` of the
config (an upper bound: no answer is longer; ``--answer-tokens`` sets an expected length instead,
and the total at ``max_tokens`` is printed too) and one per grade (a single digit); per judgment
``answer_tokens`` (erag) and the stage's ``max_tokens`` (udcg :data:`UDCG_MAX_TOKENS`, umbrela
:data:`UMBRELA_MAX_TOKENS`: an upper bound). Dollars: each model's price per million prompt and
completion tokens, as given (``--price MODEL=PROMPT,COMPLETION``, any model, a self-hosted one
too) or else from litellm's local price table (``litellm.model_cost``, read from disk: this
module never fetches litellm's remote price map), at list prices; answers and the erag and udcg
judgments at the generator's model, grades and umbrela judgments at the grader's, without the
provider's prompt caching or batch discounts; reasks of unparseable grades and retries are not
counted.

Counts come from the config's datasets when their files are there (read and sampled exactly as
the prepare stage does). When some are missing, as for ``config/paper.yaml`` before its data is
downloaded, or a dataset has no file (the ir_datasets layout), the counts are the published
set's (535,888 graded samples; at most 10,748 ideal answers, one per ranked sample of one
embedder) and the tokens per call are the mean over the
real samples shipped in ``resources/data`` (HotpotQA at paragraph and sentence level, MS MARCO,
arXiv: the paper's sources but Natural Questions), prepared with the config's designs; judgment
pairs are the published ranked samples of one embedder times the stand-ins' pairs per ranked
sample of one embedder.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import polars as pl
import yaml

from retrieval_response.datasets import prepare
from retrieval_response.datasets.judged_corpus import beir_qrels
from retrieval_response.datasets.layouts import corpus_table, prepare_judged_queries
from retrieval_response.datasets.traces import read_traces
from retrieval_response.llm.document_judgments import KINDS, UDCG_MAX_TOKENS, UMBRELA_MAX_TOKENS
from retrieval_response.llm.prompts import (
    ANSWER_FIELDS,
    GRADE_CONTEXT_FIELDS,
    GRADE_FIELDS,
    GRADE_GOLD_FIELDS,
    UDCG_FIELDS,
    UMBRELA_FIELDS,
    Prompt,
    format_references,
    load_prompt,
)
from retrieval_response.llm.retry import litellm_module
from retrieval_response.reports.benchmark_record import write_benchmark_json
from retrieval_response.workflow_config.plan import (
    corpus_cutoffs,
    dataset_designs,
    dataset_rankers,
    design_cutoffs,
    is_corpus_level,
    is_traces,
    judgment_kinds,
    trace_grade_prompts,
)

REPO = Path(__file__).resolve().parents[3]
DEFAULT_PROMPTS = {name: f"resources/prompts/{name}.txt" for name in ("answer", "grade", "udcg", "umbrela")}
SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
GRADE_COMPLETION_TOKENS = 1
STAGES = ("ideal", "topk", "grade", *KINDS)
GENERATOR_STAGES = ("ideal", "topk", "erag", "udcg")
"""Stages priced at the generator's model; the others (grade, umbrela) at the grader's."""

PUBLISHED_GRADED_SAMPLES = 535_888
PUBLISHED_RANKED_PER_EMBEDDER = 10_748
STAND_INS = (  # (layout, shipped file, level): real samples of the paper's sources
    ("hotpotqa_hf", "resources/data/hotpotqa/hotpot_dev_distractor_sample100.json", "paragraph"),
    ("hotpotqa_hf", "resources/data/hotpotqa/hotpot_dev_distractor_sample100.json", "sentence"),
    ("msmarco", "resources/data/msmarco/ms_marco_v1.1_train_sample200.json", None),
    ("arxiv_parquet", "resources/data/arxiv/arxiv_2023-09_abstracts.parquet", None),
)


@dataclass
class Stage:
    """Calls and tokens of one kind of LLM call."""

    calls: int = 0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0

    def add(self, calls: int, prompt_tokens: float, completion_tokens: float) -> None:
        self.calls += calls
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens

    def scaled_to(self, calls: int) -> Stage:
        """The same tokens per call over ``calls`` calls."""
        factor = calls / self.calls if self.calls else 0.0
        return Stage(calls, self.prompt_tokens * factor, self.completion_tokens * factor)


@dataclass
class Workload:
    """The LLM calls of a run by stage (:data:`STAGES`: the answers, the grades, one per judgment
    kind); ``judgments_exact`` is False when a judgment count is an upper bound (a design whose
    largest K is below its Nc)."""

    stages: dict[str, Stage] = field(default_factory=lambda: {k: Stage() for k in STAGES})
    judgments_exact: bool = True

    @property
    def calls(self) -> int:
        return sum(stage.calls for stage in self.stages.values())

    @property
    def prompt_tokens(self) -> float:
        return sum(stage.prompt_tokens for stage in self.stages.values())

    @property
    def completion_tokens(self) -> float:
        return sum(stage.completion_tokens for stage in self.stages.values())

    def merge(self, other: Workload) -> None:
        for name, stage in other.stages.items():
            self.stages[name].add(stage.calls, stage.prompt_tokens, stage.completion_tokens)
        self.judgments_exact = self.judgments_exact and other.judgments_exact


def offline_litellm() -> ModuleType:
    """litellm with its price table read from disk (``LITELLM_LOCAL_MODEL_COST_MAP``, set here
    whatever the environment says: an estimate never waits for, or warns about, the network).
    litellm reads the variable when first imported, which in this process is here."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return litellm_module()


def parse_price(text: str) -> tuple[str, tuple[float, float]]:
    """``MODEL=PROMPT,COMPLETION`` (dollars per million prompt and completion tokens) as
    (model, (prompt, completion)); the model name may hold ``=``, the last one separates."""
    model, sep, prices = text.rpartition("=")
    parts = prices.split(",")
    try:
        prompt, completion = (float(part) for part in parts)
    except ValueError:
        prompt = completion = -1.0
    if not sep or not model or len(parts) != 2 or min(prompt, completion) < 0:
        raise ValueError(f"price {text!r}: expected MODEL=PROMPT,COMPLETION in dollars per million tokens, "
                         "e.g. openai/gpt-4o-mini=0.15,0.60")
    return model, (prompt, completion)


class Counter:
    """Token counts of prompts and texts with litellm's tokenizer for ``model``."""

    def __init__(self, model: str, answer_prompt: Prompt, grade_prompt: Prompt,
                 judgment_prompts: dict[str, Prompt] | None = None):
        self.litellm, self.model = offline_litellm(), model
        self.answer_prompt, self.grade_prompt = answer_prompt, grade_prompt
        self.judgment_prompts = judgment_prompts or {}
        self._texts: dict[str, int] = {}
        # what one numbered reference adds beyond its text: "[i] " and the blank line between references
        self.reference_overhead = self.tokens_of(format_references(["x", "x"])) - 2 * self.tokens_of("x")

    def tokens_of(self, text: str) -> int:
        if text not in self._texts:
            self._texts[text] = self.litellm.token_counter(model=self.model, text=text)
        return self._texts[text]

    def messages(self, messages: list[dict]) -> int:
        return self.litellm.token_counter(model=self.model, messages=messages)

    def reference(self, text: str) -> int:
        return self.tokens_of(text) + self.reference_overhead

    def answer_base(self, query: str) -> int:
        return self.messages(self.answer_prompt.messages(query=query, references=""))

    def grade_base(self, query: str) -> int:
        return self.messages(self.grade_prompt.messages(query=query, ideal_answer="", answer=""))

    def judgment(self, kind: str, query: str, text: str) -> int:
        """Prompt tokens of the ``kind`` judgment of ``text`` for ``query``, as the stage fills the prompt."""
        if kind == "erag":
            return self.messages(self.answer_prompt.messages(query=query, references=format_references([text])))
        field_name = {"udcg": "document", "umbrela": "passage"}[kind]
        return self.messages(self.judgment_prompts[kind].messages(query=query, **{field_name: text}))


def with_defaults(config: dict) -> dict:
    """A copy of ``config`` with the config schema's defaults filled in, as the workflow fills them."""
    from snakemake.utils import validate

    filled = copy.deepcopy(config)
    validate(filled, schema=str(SCHEMA))
    return filled


def design_cutoff_lists(config: dict, designs: list[dict]) -> list[tuple[int, int, list[int]]]:
    """(Nc, Np, sorted K list) of each of ``designs`` of a defaults-filled ``config``."""
    return [(d["Nc"], d["Np"], design_cutoffs(config, d)) for d in designs]


JUDGMENT_COMPLETION_TOKENS = {"udcg": UDCG_MAX_TOKENS, "umbrela": UMBRELA_MAX_TOKENS}
"""Completion tokens counted per udcg and umbrela judgment: the stage's ``max_tokens`` (an upper bound)."""


def judgeable_texts(p: list[str], n: list[str], serving: list[tuple[int, int, list[int]]]) -> tuple[list[str], bool]:
    """The distinct texts that can appear in a top-K of one query under its ``serving`` designs
    (Nc, Np, K list), in first-seen order: every candidate ``p[:Np] + n[:Nc-Np]`` of a design with
    some K, since any candidate may be ranked first; and True when the list is exact (every such
    design's largest K is at least its Nc, so each candidate is in some top-K), False when it is
    an upper bound."""
    texts: dict[str, None] = {}
    exact = True
    for nc, np_, ks in serving:
        if not ks:
            continue
        texts.update(dict.fromkeys([*p[:np_], *n[: nc - np_]]))
        exact = exact and max(ks) >= nc
    return list(texts), exact


def texts_workload(
    texts: pl.DataFrame, designs: list[tuple[int, int, list[int]]], n_rankers: int, counter: Counter,
    answer_tokens: int, kinds: list[str] | tuple[str, ...] = (),
) -> Workload:
    """The LLM calls of the query-texts samples ``texts`` (columns q, p, n) under ``designs``, each
    top-K answer and grade once per ranker of the ``n_rankers`` (``plan.dataset_rankers``, the
    workflow's units), with one call per judgment kind of ``kinds`` and judgeable text of a query
    (:func:`judgeable_texts`)."""
    work = Workload()
    ideal, topk, grade = work.stages["ideal"], work.stages["topk"], work.stages["grade"]
    for q, p, n in texts.select("q", "p", "n").iter_rows():
        serving = [(nc, np_, ks) for nc, np_, ks in designs if len(p) >= np_ and len(n) >= nc - np_]
        if not serving:
            continue
        answer_base, grade_base = counter.answer_base(q), counter.grade_base(q)
        positives = [counter.reference(t) for t in p[: max(np_ for _, np_, _ in serving)]]
        for np_ in sorted({np_ for _, np_, _ in serving}):
            ideal.add(1, answer_base + sum(positives[:np_]), answer_tokens)
        for nc, np_, ks in serving:
            mean_reference = (sum(positives[:np_]) + sum(counter.reference(t) for t in n[: nc - np_])) / nc
            calls = len(ks) * n_rankers
            topk.add(calls, n_rankers * sum(answer_base + k * mean_reference for k in ks), calls * answer_tokens)
            grade.add(calls, calls * (grade_base + 2 * answer_tokens), calls * GRADE_COMPLETION_TOKENS)
        if kinds and n_rankers:
            judgeable, exact = judgeable_texts(p, n, serving)
            work.judgments_exact = work.judgments_exact and exact
            for kind in kinds:
                completion = answer_tokens if kind == "erag" else JUDGMENT_COMPLETION_TOKENS[kind]
                work.stages[kind].add(len(judgeable), sum(counter.judgment(kind, q, t) for t in judgeable),
                                      len(judgeable) * completion)
    return work


def corpus_workload(
    texts: pl.DataFrame, corpus_texts: list[str], Ks: list[int], n_rankers: int, counter: Counter,
    answer_tokens: int, kinds: list[str] | tuple[str, ...] = (),
) -> Workload:
    """The LLM calls of a corpus-level dataset's queries ``texts`` (q, p): one ideal answer per query
    from all its positives; per ranker and K one top-K answer and one grade, the top-K texts
    estimated at the corpus's mean reference length (which documents a ranker retrieves is not
    known before it runs); per judgment kind and ranker, an upper bound of max(K) texts per query."""
    work = Workload()
    ideal, topk, grade = work.stages["ideal"], work.stages["topk"], work.stages["grade"]
    sample = corpus_texts[:: max(1, len(corpus_texts) // 2000)]
    mean_reference = sum(counter.reference(t) for t in sample) / max(1, len(sample))
    calls = len(Ks) * n_rankers
    for q, p in texts.select("q", "p").iter_rows():
        answer_base, grade_base = counter.answer_base(q), counter.grade_base(q)
        ideal.add(1, answer_base + sum(counter.reference(t) for t in p), answer_tokens)
        topk.add(calls, n_rankers * sum(answer_base + k * mean_reference for k in Ks), calls * answer_tokens)
        grade.add(calls, calls * (grade_base + 2 * answer_tokens), calls * GRADE_COMPLETION_TOKENS)
        for kind in kinds:
            judged = n_rankers * max(Ks)
            completion = answer_tokens if kind == "erag" else JUDGMENT_COMPLETION_TOKENS[kind]
            work.stages[kind].add(judged, judged * (counter.judgment(kind, q, "") + mean_reference), judged * completion)
    work.judgments_exact = not kinds
    return work


def traces_workload(texts: pl.DataFrame, traces: pl.DataFrame, counter: Counter, answer_tokens: int,
                    kinds: list[str] | tuple[str, ...], grade_prompts: dict[str, Prompt]) -> Workload:
    """The LLM calls of a traces dataset (``datasets.traces.read_traces``' tables), exactly: one
    judgment per kind and distinct (query, text) of its traces (``llm.document_judgments.judged_pairs``,
    as the judge_documents rule reads them), and per trace one grade per prompt of ``grade_prompts``
    (``context``: the grade_context prompt with the trace's texts and answer; ``gold``: the
    grade_gold prompt with the gold answers, for a query that has some)."""
    from retrieval_response.llm.document_judgments import judged_pairs
    from retrieval_response.llm.prompts import format_gold_answers

    work = Workload()
    pairs = judged_pairs([(traces, texts)])
    for kind in kinds:
        completion = answer_tokens if kind == "erag" else JUDGMENT_COMPLETION_TOKENS[kind]
        work.stages[kind].add(pairs.height, sum(counter.judgment(kind, q, t) for q, t in pairs.select("q", "text")
                                                .iter_rows()), pairs.height * completion)
    rows = (traces.select("id", "rank", "answer").join(texts.select("id", "q", "p", "n", "answers"), on="id")
            .with_columns(refs=pl.concat_list("p", "n").list.gather(pl.col("rank"))))
    for q, answer, refs, gold in rows.select("q", "answer", "refs", "answers").iter_rows():
        if "context" in grade_prompts:
            messages = grade_prompts["context"].messages(query=q, references=format_references(refs), answer=answer)
            work.stages["grade"].add(1, counter.messages(messages), GRADE_COMPLETION_TOKENS)
        if "gold" in grade_prompts and gold:
            messages = grade_prompts["gold"].messages(query=q, gold_answers=format_gold_answers(gold), answer=answer)
            work.stages["grade"].add(1, counter.messages(messages), GRADE_COMPLETION_TOKENS)
    return work


def traces_dataset_workload(config: dict, name: str, dataset: dict, source: Path, base: Path, counter: Counter,
                            answer_tokens: int, kinds: list[str]) -> Workload:
    """:func:`traces_workload` of the traces dataset ``name`` (its files read as the prepare_traces
    rule reads them, its grading prompts those of its ``trace_grades``)."""
    files = [source, *(shipped_or_local(p, base) for p in dataset.get("paths") or [])]
    texts, traces, _ = read_traces(files, feedback_labels=dataset.get("feedback_labels"), subset=dataset.get("subset"))
    fields = {"context": GRADE_CONTEXT_FIELDS, "gold": GRADE_GOLD_FIELDS}
    grade_prompts = {prefix: load_prompt(shipped_or_local(path, base), fields[prefix], needs_reask=True)
                     for prefix, path in trace_grade_prompts(config, name).items()}
    return traces_workload(texts, traces, counter, answer_tokens, kinds, grade_prompts)


def ranked_samples(texts: pl.DataFrame, designs: list[tuple[int, int, list[int]]]) -> int:
    """Ranked samples of one embedder: the (query, design) pairs of ``texts`` where the query serves the design."""
    return sum(len(p) >= np_ and len(n) >= nc - np_ for p, n in texts.select("p", "n").iter_rows()
               for nc, np_, _ in designs)


def shipped_or_local(path: str, base: Path) -> Path:
    """``path`` relative to ``base`` (the working folder), else the copy shipped with the workflow."""
    local = base / path
    return local if local.exists() or Path(path).is_absolute() else REPO / path


def load_prompts(config: dict, base: Path) -> tuple[Prompt, Prompt, dict[str, Prompt]]:
    """The answer and grade prompts of ``config`` and the prompts of its udcg and umbrela judgments."""
    prompts = {**DEFAULT_PROMPTS, **(config.get("llm") or {}).get("prompts", {})}
    kinds = set((config.get("document_judgments") or {}).get("kinds") or [])
    judgment_fields = {"udcg": UDCG_FIELDS, "umbrela": UMBRELA_FIELDS}
    return (load_prompt(shipped_or_local(prompts["answer"], base), ANSWER_FIELDS),
            load_prompt(shipped_or_local(prompts["grade"], base), GRADE_FIELDS),
            {kind: load_prompt(shipped_or_local(prompts[kind], base), fields)
             for kind, fields in judgment_fields.items() if kind in kinds})


@dataclass
class Estimate:
    """A workload, where its counts came from, and its price."""

    workload: Workload
    basis: str
    model: str
    grader_model: str
    answer_tokens: int
    max_answer_tokens: int
    kinds: tuple[str, ...] = ()
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Dollars per million (prompt, completion) tokens given per model; litellm's table for the others."""

    def price_per_million(self, model: str) -> tuple[float, float] | None:
        """Dollars per million (prompt, completion) tokens of ``model``: as given in ``prices``, else
        litellm's local table; None when neither has it (a local or self-hosted model)."""
        if model in self.prices:
            return self.prices[model]
        try:
            info = offline_litellm().get_model_info(model)
            return info["input_cost_per_token"] * 1e6, info["output_cost_per_token"] * 1e6
        except Exception:  # litellm raises several classes for a model without a price
            return None

    def dollars(self, answer_tokens: float | None = None) -> tuple[float, float] | None:
        """(prompt, completion) dollars at :meth:`price_per_million`: the :data:`GENERATOR_STAGES`
        (answers, erag and udcg judgments) at the generator's model, answers and erag judgments
        with ``answer_tokens`` completion tokens each if given; grades and umbrela judgments at the
        grader's; None when either model has no price."""
        stages = self.workload.stages

        def completion(name: str) -> float:
            answers = name in ("ideal", "topk", "erag")
            return stages[name].calls * answer_tokens if answers and answer_tokens is not None \
                else stages[name].completion_tokens

        priced = []
        for model, names in ((self.model, GENERATOR_STAGES),
                             (self.grader_model, tuple(n for n in STAGES if n not in GENERATOR_STAGES))):
            price = self.price_per_million(model)
            if price is None:
                return None
            prompt = round(sum(stages[n].prompt_tokens for n in names))
            completion_tokens = round(sum(completion(n) for n in names))
            priced.append((prompt * price[0] / 1e6, completion_tokens * price[1] / 1e6))
        return sum(p for p, _ in priced), sum(c for _, c in priced)


def scaled_workload(work: Workload, factor: float) -> Workload:
    """``work`` with every stage's calls multiplied by ``factor`` (rounded) at the same tokens per call."""
    scaled = Workload(judgments_exact=work.judgments_exact)
    for name, stage in work.stages.items():
        scaled.stages[name] = stage.scaled_to(round(stage.calls * factor))
    return scaled


def estimate(config: dict, base: Path, answer_tokens: int | None = None,
             prices: dict[str, tuple[float, float]] | None = None, queries: int | None = None) -> Estimate:
    """The LLM workload of ``config`` (paths relative to ``base``), as described in the module
    docstring: ``answer_tokens`` completion tokens per answer (default: the generator's
    ``max_tokens``), priced at ``prices`` (model -> dollars per million prompt and completion
    tokens) or litellm's table. With ``queries``, each dataset's workload is scaled from its
    sampled queries to ``queries`` queries (the same calls and tokens per query: what a verdict's
    ``queries_for_0.10`` would cost); this needs the config's data (ValueError without it). A
    traces config is counted on its traces files only; one not yet built is named and not counted."""
    config = with_defaults(config)
    llm = config.get("llm") or {}
    generator = llm.get("generator") or {}
    model = generator.get("model", "openai/gpt-4o-mini")
    max_answer_tokens = generator.get("max_tokens", 200)
    answer_tokens = max_answer_tokens if answer_tokens is None else answer_tokens
    kinds = judgment_kinds(config)
    counter = Counter(model, *load_prompts(config, base))
    datasets = config.get("datasets") or {}
    sources = {name: shipped_or_local(d["path"], base) for name, d in datasets.items() if "path" in d}
    sources = {name: beir_qrels(path, datasets[name].get("split"))
               if datasets[name]["layout"] == "beir" and path.is_dir() else path for name, path in sources.items()}
    work = Workload()
    if any(is_traces(config, name) for name in datasets):
        missing = [str(path) for path in sources.values() if not path.exists()]
        for name, dataset in datasets.items():
            if sources[name].exists():
                work.merge(traces_dataset_workload(config, name, dataset, sources[name], base, counter, answer_tokens,
                                                   kinds))
        basis = "counted on the traces files" + (
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
            designs = design_cutoff_lists(config, dataset_designs(config, name))
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
        designs = design_cutoff_lists(config, config["designs"])
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
        judgment_calls = round(PUBLISHED_RANKED_PER_EMBEDDER * sum(pairs_per_ranked) / len(pairs_per_ranked)) \
            if pairs_per_ranked else 0
        counts = {"ideal": PUBLISHED_RANKED_PER_EMBEDDER, "topk": PUBLISHED_GRADED_SAMPLES,
                  "grade": PUBLISHED_GRADED_SAMPLES, **dict.fromkeys(KINDS, judgment_calls)}
        for name, units in per_call.items():
            if not units:
                continue
            prompt = sum(unit.prompt_tokens for unit in units) / len(units)
            completion = sum(unit.completion_tokens for unit in units) / len(units)
            work.stages[name] = Stage(counts[name], prompt * counts[name], completion * counts[name])
        missing = ", ".join(datasets[name]["path"] for name, path in sources.items() if not path.exists()) or "no datasets"
        basis = (f"the published set's counts ({missing} not found), tokens per call from the shipped "
                 "real samples (HotpotQA paragraphs and sentences, MS MARCO, arXiv)")
    grader_model = (llm.get("grader") or {}).get("model", model)
    return Estimate(work, basis, model, grader_model, answer_tokens, max_answer_tokens, tuple(kinds), dict(prices or {}))


def report(est: Estimate, config_path: str) -> str:
    """The estimate as printed by the command line; the last line is ``calls=... dollars=...``."""
    work = est.workload
    priced = est.dollars()
    rows = [f"{config_path}: LLM workload ({est.basis})",
            f"{'stage':<22}{'calls':>12}{'prompt tokens':>18}{'completion tokens':>20}{'per call (prompt)':>20}"]
    labels = {"ideal": "ideal answers", "topk": "top-K answers", "grade": "grades", "erag": "erag judgments",
              "udcg": "udcg judgments", "umbrela": "umbrela judgments"}
    for name in ("ideal", "topk", "grade", *est.kinds):
        stage, label = work.stages[name], labels[name]
        per_call = stage.prompt_tokens / stage.calls if stage.calls else 0.0
        rows.append(f"{label:<22}{stage.calls:>12,}{stage.prompt_tokens:>18,.0f}{stage.completion_tokens:>20,.0f}{per_call:>20,.0f}")
    rows.append(f"{'total':<22}{work.calls:>12,}{work.prompt_tokens:>18,.0f}{work.completion_tokens:>20,.0f}")
    counts = (f"calls={work.calls} prompt_tokens={work.prompt_tokens:.0f} "
              f"completion_tokens={work.completion_tokens:.0f}")
    if est.kinds:
        pairs = work.stages[est.kinds[0]].calls
        rows.append(f"judgments: {pairs:,} distinct (query, text) pairs per kind, "
                    + ("exact (every candidate is in some top-K)" if work.judgments_exact else
                       "an upper bound (every candidate that could be ranked into a top-K; the run "
                       "judges only those its rankings put there)")
                    + f"; completion tokens: erag as an answer, udcg {UDCG_MAX_TOKENS} and umbrela "
                      f"{UMBRELA_MAX_TOKENS} at most; erag and udcg at the generator's price, umbrela at the grader's")
    answers = (f"answers counted at the generator's max_tokens={est.max_answer_tokens} tokens each (an upper bound)"
               if est.answer_tokens == est.max_answer_tokens else f"answers assumed {est.answer_tokens} tokens each")
    sources = {model: "given" if model in est.prices else "litellm's table" for model in (est.model, est.grader_model)}
    if priced is None:
        rows.append(f"{answers}, grades {GRADE_COMPLETION_TOKENS}")
        rows.append(f"price: none for {est.model} (answers) or {est.grader_model} (grades) in litellm's table; "
                    "--price MODEL=PROMPT,COMPLETION gives one (dollars per million tokens)")
        rows.append(f"{counts} dollars=unknown")
        return "\n".join(rows)
    prompt_dollars, completion_dollars = priced
    total = prompt_dollars + completion_dollars
    high = sum(est.dollars(answer_tokens=est.max_answer_tokens))
    rows.append(f"{answers}, grades {GRADE_COMPLETION_TOKENS}"
                + ("" if est.answer_tokens == est.max_answer_tokens else
                   f"; at max_tokens={est.max_answer_tokens} per answer the total would be ${high:,.2f}"))
    rows.append(f"price: {est.model} (answers, {sources[est.model]}), {est.grader_model} (grades, "
                f"{sources[est.grader_model]}): prompt ${prompt_dollars:,.2f} + completion "
                f"${completion_dollars:,.2f} = ${total:,.2f} (no caching or batch discount)")
    rows.append(f"{counts} dollars={total:.2f}")
    return "\n".join(rows)


def estimate_record(est: Estimate, config: dict) -> dict:
    """The estimate as data (``--json``): per stage and in total the calls, prompt and completion
    tokens and prompt tokens per call; each role's list price in dollars per million prompt and
    completion tokens (``dollars_per_million``); the dollars (null without a price) and the dollars at the
    generator's ``max_tokens`` per answer; and, when ``config`` sets ``llm.pacing.tokens_per_minute``,
    ``hours_at_token_limit`` = all tokens / that rate / 60."""
    work = est.workload
    stages = {name: {"calls": stage.calls, "prompt_tokens": stage.prompt_tokens,
                     "completion_tokens": stage.completion_tokens,
                     "prompt_tokens_per_call": stage.prompt_tokens / stage.calls if stage.calls else None}
              for name, stage in work.stages.items() if name in ("ideal", "topk", "grade", *est.kinds)}
    priced = est.dollars()
    dollars = None if priced is None else {
        "prompt": priced[0], "completion": priced[1], "total": sum(priced),
        "at_max_tokens": sum(est.dollars(answer_tokens=est.max_answer_tokens))}
    tokens_per_minute = ((config.get("llm") or {}).get("pacing") or {}).get("tokens_per_minute")
    tokens = work.prompt_tokens + work.completion_tokens
    prices = {role: {"prompt": price[0], "completion": price[1]}
              for role, model in (("generator", est.model), ("grader", est.grader_model))
              if (price := est.price_per_million(model)) is not None}
    return {"basis": est.basis, "model": est.model, "grader_model": est.grader_model, "dollars_per_million": prices,
            "answer_tokens": est.answer_tokens, "max_answer_tokens": est.max_answer_tokens,
            "stages": stages, "total": {"calls": work.calls, "prompt_tokens": work.prompt_tokens,
                                        "completion_tokens": work.completion_tokens, "tokens": tokens},
            "judgments": {"pairs": stages[est.kinds[0]]["calls"], "exact": work.judgments_exact} if est.kinds else None,
            "dollars": dollars,
            "hours_at_token_limit": tokens / tokens_per_minute / 60 if tokens_per_minute else None}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", help="a workflow config file, e.g. config/paper.yaml")
    parser.add_argument("--answer-tokens", type=int,
                        help="expected completion tokens per answer (default: the generator's max_tokens, an upper bound)")
    parser.add_argument("--price", action="append", default=[], metavar="MODEL=PROMPT,COMPLETION",
                        help="dollars per million prompt and completion tokens of MODEL (any model, a self-hosted "
                             "one too; repeatable); other models are priced from litellm's local table")
    parser.add_argument("--queries", type=int, metavar="N",
                        help="price each dataset at N queries (its workload per sampled query times N): e.g. the "
                             "queries_for_0.10 of a verdict")
    parser.add_argument("--directory", default=".", help="the working folder the config's paths are relative to")
    parser.add_argument("--json", metavar="PATH",
                        help="also write the estimate, with its command and its seconds, to this JSON file")
    args = parser.parse_args(argv)
    try:
        prices = dict(parse_price(text) for text in args.price)
    except ValueError as e:
        parser.error(str(e))
    config = yaml.safe_load(Path(args.config).read_text())
    start = time.perf_counter()
    if args.queries is not None and args.queries < 1:
        parser.error("--queries: at least 1")
    try:
        est = estimate(config, Path(args.directory), args.answer_tokens, prices, args.queries)
    except ValueError as e:
        parser.error(str(e))
    seconds = time.perf_counter() - start
    print(report(est, args.config))
    if args.json:
        command = ["-m", "retrieval_response.reports.llm_cost", *(sys.argv[1:] if argv is None else argv)]
        write_benchmark_json(args.json, {**estimate_record(est, config), "seconds": seconds}, command)


if __name__ == "__main__":
    main()
