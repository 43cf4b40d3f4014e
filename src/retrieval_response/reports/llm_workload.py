"""The LLM calls and tokens of samples, as the workflow's LLM stages make them, before they run.

Calls: the ideal answers the answer_ideal rule asks for, one per (query, Np) of a dataset, shared
by the rankers and by the designs with that Np (the fan-out of
:func:`~retrieval_response.workflow_config.llm_requests.ideal_answer_requests`, or
``corpus_ideal_answer_requests`` for a corpus-level dataset); and per (query, ranker, design, K)
one top-K answer and one grade
(:func:`~retrieval_response.workflow_config.plan.designs_with_cutoffs`). With document judgments
on, one judgment call per kind and distinct (query, text) pair that can appear in a top-K of the
dataset (any ranker, design and K). The ranking is not known before the run, so every candidate
text of a design (``p[:Np] + n[:Nc-Np]``) with some K counts: exact when each design's largest K
is its Nc (every candidate is then in a top-K), otherwise an upper bound (the run judges only the
texts its rankings put in a top-K); :attr:`Workload.judgments_exact` says which. An ``erag``
request of a text ranked first under K = 1 is the top-1 answer's request, served from the cache;
it is counted anyway.

Prompt tokens are counted with litellm's tokenizer for the generator's model (:class:`Counter`),
on the prompts filled as the workflow fills them:

- ideal answer: the answer prompt with the query and the Np positives as numbered references;
- top-K answer: the answer prompt with the query and K references, each counted as the mean
  reference of that query's Nc candidates (the ranking is not known before the run);
- grade: the grade prompt with the query, the ideal answer and the answer to grade, each of
  ``answer_tokens`` tokens;
- judgments: ``erag`` the answer prompt with the query and the one text as reference; ``udcg``
  the UDCG prompt and ``umbrela`` the UMBRELA prompt with the query and the text.

Completion tokens: ``answer_tokens`` per answer and per erag judgment, one per grade (a single
digit), and the stage's ``max_tokens`` per udcg and umbrela judgment (an upper bound). Reasks of
unparseable grades and retries are not counted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from types import ModuleType

import polars as pl

from retrieval_response.llm.document_judgments import KINDS, UDCG_MAX_TOKENS, UMBRELA_MAX_TOKENS
from retrieval_response.llm.prompts import Prompt, format_references
from retrieval_response.llm.retry import litellm_module
from retrieval_response.workflow_config.llm_requests import corpus_ideal_answer_requests, ideal_answer_requests

GRADE_COMPLETION_TOKENS = 1
"""Completion tokens counted per grade: one digit."""
STAGES = ("ideal", "topk", "grade", *KINDS)
"""The kinds of LLM call: the answers, the grades, one per judgment kind."""


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


class Counter:
    """Token counts of prompts and texts with litellm's tokenizer for ``model``."""

    def __init__(self, model: str, answer_prompt: Prompt, grade_prompt: Prompt,
                 judgment_prompts: dict[str, Prompt] | None = None):
        self.litellm, self.model = offline_litellm(), model
        self.answer_prompt, self.grade_prompt = answer_prompt, grade_prompt
        self.judgment_prompts = judgment_prompts or {}
        self._texts: dict[str, int] = {}
        self._answer_bases: dict[str, int] = {}
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
        if query not in self._answer_bases:
            self._answer_bases[query] = self.messages(self.answer_prompt.messages(query=query, references=""))
        return self._answer_bases[query]

    def grade_base(self, query: str) -> int:
        return self.messages(self.grade_prompt.messages(query=query, ideal_answer="", answer=""))

    def judgment(self, kind: str, query: str, text: str) -> int:
        """Prompt tokens of the ``kind`` judgment of ``text`` for ``query``, as the stage fills the prompt."""
        if kind == "erag":
            return self.messages(self.answer_prompt.messages(query=query, references=format_references([text])))
        field_name = {"udcg": "document", "umbrela": "passage"}[kind]
        return self.messages(self.judgment_prompts[kind].messages(query=query, **{field_name: text}))


JUDGMENT_COMPLETION_TOKENS = {"udcg": UDCG_MAX_TOKENS, "umbrela": UMBRELA_MAX_TOKENS}
"""Completion tokens counted per udcg and umbrela judgment: the stage's ``max_tokens`` (an upper bound)."""


def _add_ideal_answers(stage: Stage, requests: pl.DataFrame, counter: Counter, answer_tokens: int) -> None:
    """Add to ``stage`` one call per ideal-answer request (columns q, refs) with its prompt tokens."""
    for q, refs in requests.select("q", "refs").iter_rows():
        stage.add(1, counter.answer_base(q) + sum(counter.reference(t) for t in refs), answer_tokens)


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
    requests = ideal_answer_requests(texts.select("q", "p").with_row_index("id"), [np_ for _, np_, _ in designs])
    _add_ideal_answers(work.stages["ideal"], requests, counter, answer_tokens)
    topk, grade = work.stages["topk"], work.stages["grade"]
    for q, p, n in texts.select("q", "p", "n").iter_rows():
        serving = [(nc, np_, ks) for nc, np_, ks in designs if len(p) >= np_ and len(n) >= nc - np_]
        if not serving:
            continue
        answer_base, grade_base = counter.answer_base(q), counter.grade_base(q)
        positives = [counter.reference(t) for t in p[: max(np_ for _, np_, _ in serving)]]
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
    with a positive, from all of them; per ranker and K one top-K answer and one grade, the top-K texts
    estimated at the corpus's mean reference length (which documents a ranker retrieves is not
    known before it runs); per judgment kind and ranker, an upper bound of max(K) texts per query."""
    work = Workload()
    requests = corpus_ideal_answer_requests(texts.select("q", "p").with_row_index("id"))
    _add_ideal_answers(work.stages["ideal"], requests, counter, answer_tokens)
    topk, grade = work.stages["topk"], work.stages["grade"]
    sample = corpus_texts[:: max(1, len(corpus_texts) // 2000)]
    mean_reference = sum(counter.reference(t) for t in sample) / max(1, len(sample))
    calls = len(Ks) * n_rankers
    for q in texts["q"].to_list():
        answer_base, grade_base = counter.answer_base(q), counter.grade_base(q)
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


def ranked_samples(texts: pl.DataFrame, designs: list[tuple[int, int, list[int]]]) -> int:
    """Ranked samples of one embedder: the (query, design) pairs of ``texts`` where the query serves the design."""
    return sum(len(p) >= np_ and len(n) >= nc - np_ for p, n in texts.select("p", "n").iter_rows()
               for nc, np_, _ in designs)


def scaled_workload(work: Workload, factor: float) -> Workload:
    """``work`` with every stage's calls multiplied by ``factor`` (rounded) at the same tokens per call."""
    scaled = Workload(judgments_exact=work.judgments_exact)
    for name, stage in work.stages.items():
        scaled.stages[name] = stage.scaled_to(round(stage.calls * factor))
    return scaled
