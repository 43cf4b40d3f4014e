"""What a config's LLM stages cost before it runs: calls, prompt and completion tokens, dollars.

    python -m retrieval_response.reports.llm_cost CONFIG [--answer-tokens N] [--price MODEL=PROMPT,COMPLETION ...]
        [--queries N]

The calls and tokens are counted as :mod:`.llm_workload` describes, on the config's data or the
published set's counts (:mod:`.config_workload`). Completion tokens per answer are, by default,
the generator's ``max_tokens`` of the config (an upper bound: no answer is longer;
``--answer-tokens`` sets an expected length instead, and the total at ``max_tokens`` is printed
too).

Dollars: each model's price per million prompt and completion tokens, as given on the command
line (``--price MODEL=PROMPT,COMPLETION``), else in the config (``llm.<role>.price_per_million:
{input, output}``: any model, a self-hosted one too), else from litellm's local price table
(``litellm.model_cost``, read from disk: this module never fetches litellm's remote price map),
at list prices; answers and the erag and udcg judgments at the generator's model, grades and
umbrela judgments at the grader's, without the provider's prompt caching or batch discounts.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from retrieval_response.infra.yaml_files import load_yaml
from retrieval_response.llm.config import ModelConfig
from retrieval_response.llm.document_judgments import UDCG_MAX_TOKENS, UMBRELA_MAX_TOKENS
from retrieval_response.reports.benchmark_record import write_benchmark_json
from retrieval_response.reports.config_workload import config_workload, load_prompts
from retrieval_response.reports.llm_workload import (
    GRADE_COMPLETION_TOKENS,
    STAGES,
    Counter,
    Workload,
    offline_litellm,
)
from retrieval_response.workflow_config.checks import LLM_ROLES, check_secrets
from retrieval_response.workflow_config.defaults import with_defaults
from retrieval_response.workflow_config.plan import judgment_kinds

UNCONFIGURED_GENERATOR = "openai/gpt-4o-mini"
"""The model a config without ``llm.generator`` (published mode: no LLM runs) is priced at: the paper's."""
GENERATOR_STAGES = ("ideal", "topk", "erag", "udcg")
"""Stages priced at the generator's model; the others (grade, umbrela) at the grader's."""


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


def config_prices(llm: Mapping) -> dict[str, tuple[float, float]]:
    """Model -> dollars per million (prompt, completion) tokens of each role of the config's ``llm``
    section that sets ``price_per_million: {input, output}``."""
    return {section["model"]: (section["price_per_million"]["input"], section["price_per_million"]["output"])
            for role in LLM_ROLES if (section := llm.get(role)) and section.get("price_per_million")}


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


def estimate(config: dict, base: Path, answer_tokens: int | None = None,
             prices: dict[str, tuple[float, float]] | None = None, queries: int | None = None) -> Estimate:
    """The LLM workload of ``config`` (paths relative to ``base``), as described in the module
    docstring: ``answer_tokens`` completion tokens per answer (default: the generator's
    ``max_tokens``), priced at ``prices`` (model -> dollars per million prompt and completion
    tokens, the command line's), else the config's ``price_per_million`` (:func:`config_prices`),
    else litellm's table. With ``queries``, each dataset's workload is scaled from its
    sampled queries to ``queries`` queries (the same calls and tokens per query: what a verdict's
    ``queries_for_0.10`` would cost); this needs the config's data (ValueError without it). A
    traces config is counted on its traces files only; one not yet built is named and not counted."""
    config = with_defaults(config)
    llm = config.get("llm") or {}
    generator = ModelConfig.from_mapping(llm.get("generator") or {"model": UNCONFIGURED_GENERATOR})
    model, max_answer_tokens = generator.model, generator.max_tokens
    answer_tokens = max_answer_tokens if answer_tokens is None else answer_tokens
    kinds = judgment_kinds(config)
    counter = Counter(model, *load_prompts(config, base))
    work, basis = config_workload(config, base, counter, answer_tokens, kinds, queries)
    grader_model = (llm.get("grader") or {}).get("model", model)
    return Estimate(work, basis, model, grader_model, answer_tokens, max_answer_tokens, tuple(kinds),
                    config_prices(llm) | dict(prices or {}))


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
                        help="price each dataset at N queries (its workload per sampled query times N; a traces "
                             "dataset: the traces of N queries sampled by system as traces.sample samples them, scaled "
                             "beyond its queries): e.g. the queries_for_0.10 of a verdict")
    parser.add_argument("--directory", default=".", help="the working folder the config's paths are relative to")
    parser.add_argument("--json", metavar="PATH",
                        help="also write the estimate, with its command and its seconds, to this JSON file")
    args = parser.parse_args(argv)
    try:
        prices = dict(parse_price(text) for text in args.price)
    except ValueError as e:
        parser.error(str(e))
    if args.queries is not None and args.queries < 1:
        parser.error("--queries: at least 1")
    try:
        config = load_yaml(args.config)
        check_secrets(config, args.config)
        start = time.perf_counter()
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
