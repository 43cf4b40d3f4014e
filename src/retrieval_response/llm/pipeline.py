"""Ranked samples -> ideal answers, top-K answers, grades (tables of docs/DESIGN.md).

Every input row comes out: a sample whose LLM call failed keeps its row with ``status`` set to
the reason (``empty_answer``, ``api_error:<Class>``, ``retries_exhausted:<why>``,
``bad_response:<what>``, ``prompt_exceeds_context``, ``unparseable_grade``, or, in the graded table, ``ideal_answer:<reason>`` /
``topk_answer:<reason>`` when an input answer was missing) and null answer or grade. The grade
against the gold answers has a status of its own (``status_gold``), which is also
``no_gold_answer`` for a query without gold answers.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from retrieval_response.llm.client import Completion, LLMClient
from retrieval_response.llm.grading import expected_grade, parse_grade
from retrieval_response.llm.prompts import Prompt, format_gold_answers, format_references

ANSWERED = "ok"
GRADED = "graded"
NO_GOLD_ANSWER = "no_gold_answer"
REASK_SEPARATOR = "\n--- re-ask ---\n"


def _answer_status(completion: Completion, client: LLMClient) -> str:
    if not completion.ok:
        return completion.status
    if not (completion.content or "").strip():
        client.stats.failures_by_reason["empty_answer"] += 1
        return "empty_answer"
    return ANSWERED


def _answer_all(client: LLMClient, prompt: Prompt, rows: pl.DataFrame, desc: str) -> tuple[list[str | None], list[str]]:
    """Answers to the rows' (``q``, ``refs``), one query's rows back to back in row order (the
    rows are sorted so that a query's prompts grow by one reference at a time: shared prefix)."""
    messages = [prompt.messages(query=q, references=format_references(refs))
                for q, refs in rows.select("q", "refs").iter_rows()]
    completions = client.run_all([client.complete(m) for m in messages], desc, groups=rows["id"].to_list())
    statuses = [_answer_status(c, client) for c in completions]
    answers = [c.content if s == ANSWERED else None for c, s in zip(completions, statuses, strict=True)]
    return answers, statuses


def ideal_answers(requests: pl.DataFrame, client: LLMClient, prompt: Prompt) -> pl.DataFrame:
    """One ideal answer per row of ``requests`` (columns id, q, Np, refs: the fan-out of
    ``workflow_config.llm_requests.ideal_answer_requests`` or ``corpus_ideal_answer_requests``), written
    from its references in row order; columns id, Np, answer_ideal, status."""
    answers, statuses = _answer_all(client, prompt, requests, "ideal answers")
    return requests.select("id", "Np").with_columns(
        answer_ideal=pl.Series(answers, dtype=pl.String), status=pl.Series(statuses, dtype=pl.String))


def topk_selections(ranked: pl.DataFrame, texts: pl.DataFrame) -> pl.DataFrame:
    """One row per (id, E, Nc, Np, K) of the ranked table: rank = rank[:K], inK (1 where the
    ranked candidate is a positive, i.e. index < Np), P and R at that K, q, and refs = the top-K
    candidate texts in rank order (candidates = p[:Np] + n[:Nc-Np])."""
    positives = pl.lit(1, pl.Int8).repeat_by(pl.col("Np"))
    negatives = pl.lit(0, pl.Int8).repeat_by(pl.col("Nc") - pl.col("Np"))
    candidates = pl.concat_list(pl.col("p").list.head(pl.col("Np")),
                                pl.col("n").list.head(pl.col("Nc") - pl.col("Np")))
    return (ranked.join(texts.select("id", "q", "p", "n"), on="id", how="inner")
            .explode("K", "P", "R")
            .with_columns(rank=pl.col("rank").list.head(pl.col("K")))
            .with_columns(inK=pl.concat_list(positives, negatives).list.gather(pl.col("rank")),
                          refs=candidates.list.gather(pl.col("rank")))
            .select("id", "subset", "E", "Nc", "Np", pl.col("K").cast(pl.Int32), "rank", "inK",
                    "P", "R", "q", "refs")
            .sort("id", "E", "Nc", "Np", "K"))


def topk_answers(ranked: pl.DataFrame, texts: pl.DataFrame, client: LLMClient, prompt: Prompt) -> pl.DataFrame:
    """One top-K answer per (id, E, Nc, Np, K), from the top-K texts in rank order; columns
    id, subset, E, Nc, Np, K, rank, inK, P, R, answer_topK, status. Ranked ids missing from
    ``texts`` are an error of the caller (checked by the workflow script)."""
    rows = topk_selections(ranked, texts)
    answers, statuses = _answer_all(client, prompt, rows, "top-K answers")
    return rows.drop("q", "refs").with_columns(
        answer_topK=pl.Series(answers, dtype=pl.String), status=pl.Series(statuses, dtype=pl.String))


@dataclass(frozen=True)
class GradeOutcome:
    """Result of grading one sample (``status`` = ``graded`` or the reason it is not)."""

    grade: int | None
    grade_expected: float | None
    status: str
    grade_raw: str | None


async def grade_one(client: LLMClient, prompt: Prompt, messages: list[dict]) -> GradeOutcome:
    """Ask for a grade; if the reply is not a strict grade 1..5, ask once more with the prompt's
    [reask] message; after that the sample is ``unparseable_grade`` with the raw replies kept."""
    first = await client.complete(messages)
    if not first.ok:
        return GradeOutcome(None, None, first.status, None)
    grade = parse_grade(first.content)
    if grade is not None:
        return GradeOutcome(grade, expected_grade(first.logprobs), GRADED, first.content)
    second = await client.complete(prompt.reask_messages(messages, first.content or ""))
    if not second.ok:
        return GradeOutcome(None, None, second.status, first.content)
    raw = f"{first.content or ''}{REASK_SEPARATOR}{second.content or ''}"
    grade = parse_grade(second.content)
    if grade is None:
        client.stats.failures_by_reason["unparseable_grade"] += 1
        return GradeOutcome(None, None, "unparseable_grade", raw)
    return GradeOutcome(grade, expected_grade(second.logprobs), GRADED, raw)


async def _skipped(status: str) -> GradeOutcome:
    return GradeOutcome(None, None, status, None)


def grade_answers(topk: pl.DataFrame, ideal: pl.DataFrame, texts: pl.DataFrame, client: LLMClient,
                  prompt: Prompt, gold_prompt: Prompt | None = None) -> pl.DataFrame:
    """The graded table of docs/DESIGN.md: each top-K answer graded against the ideal answer of
    its (id, Np), given the query; a query's grades run back to back, ordered by (Np, E, Nc, K),
    so prompts sharing the question and ideal answer follow each other. Samples with a missing answer are kept
    ungraded with status ``topk_answer:<reason>`` or ``ideal_answer:<reason>`` (``ideal_answer:missing`` when no
    ideal row exists).

    With ``gold_prompt``, each top-K answer is also graded against its query's gold answers
    (``texts.answers``; a table without that column has none), in the same order and by the same
    rule (:func:`grade_one`): columns ``grade_gold, grade_gold_expected, status_gold,
    grade_gold_raw``; ``status_gold`` is ``no_gold_answer`` for a query without gold answers and
    ``topk_answer:<reason>`` for a missing answer, with a null grade."""
    rows = (topk.rename({"status": "topk_status"})
            .join(ideal.rename({"status": "ideal_status"}), on=["id", "Np"], how="left")
            .join(texts.select("id", "q"), on="id", how="left")
            .with_columns(pl.col("ideal_status").fill_null("missing"))
            .sort("id", "Np", "E", "Nc", "K"))
    tasks = []
    for q, ideal_answer, answer, topk_status, ideal_status in rows.select(
            "q", "answer_ideal", "answer_topK", "topk_status", "ideal_status").iter_rows():
        if topk_status != ANSWERED:
            tasks.append(_skipped(f"topk_answer:{topk_status}"))
        elif ideal_status != ANSWERED:
            tasks.append(_skipped(f"ideal_answer:{ideal_status}"))
        else:
            tasks.append(grade_one(client, prompt, prompt.messages(
                query=q, ideal_answer=ideal_answer, answer=answer)))
    outcomes = client.run_all(tasks, "grades", groups=rows["id"].to_list())
    graded = rows.select(
        "id", "subset", "E", "Nc", "Np", "K", "rank", "inK", "answer_ideal", "answer_topK",
    ).with_columns(
        grade=pl.Series([o.grade for o in outcomes], dtype=pl.Int8),
        grade_expected=pl.Series([o.grade_expected for o in outcomes], dtype=pl.Float64),
        P=rows["P"].cast(pl.Float64), R=rows["R"].cast(pl.Float64),
        status=pl.Series([o.status for o in outcomes], dtype=pl.String),
        grade_raw=pl.Series([o.grade_raw for o in outcomes], dtype=pl.String),
    )
    if gold_prompt is None:
        return graded
    gold = _grade_against_gold(rows, texts, client, gold_prompt)
    return graded.with_columns(
        grade_gold=pl.Series([o.grade for o in gold], dtype=pl.Int8),
        grade_gold_expected=pl.Series([o.grade_expected for o in gold], dtype=pl.Float64),
        status_gold=pl.Series([o.status for o in gold], dtype=pl.String),
        grade_gold_raw=pl.Series([o.grade_raw for o in gold], dtype=pl.String),
    )


def _grade_against_gold(rows: pl.DataFrame, texts: pl.DataFrame, client: LLMClient, prompt: Prompt) -> list[GradeOutcome]:
    """The gold-reference grade of each of ``rows`` (id, q, answer_topK, topk_status), in row order."""
    answers = (texts.select("id", "answers") if "answers" in texts.columns
               else texts.select("id", answers=pl.lit([], dtype=pl.List(pl.String))))
    gold = rows.select("id").join(answers, on="id", how="left", maintain_order="left")["answers"]
    tasks = []
    for (q, answer, topk_status), gold_answers in zip(
            rows.select("q", "answer_topK", "topk_status").iter_rows(), gold.to_list(), strict=True):
        gold_answers = [a for a in gold_answers or [] if a and a.strip()]
        if topk_status != ANSWERED:
            tasks.append(_skipped(f"topk_answer:{topk_status}"))
        elif not gold_answers:
            tasks.append(_skipped(NO_GOLD_ANSWER))
        else:
            tasks.append(grade_one(client, prompt, prompt.messages(
                query=q, gold_answers=format_gold_answers(gold_answers), answer=answer)))
    return client.run_all(tasks, "gold grades", groups=rows["id"].to_list())


TRACE_GRADES = ("retrieved", "gold")
"""What a trace's answer can be graded against (``datasets.<name>.trace_grades``): the texts the
system retrieved (column ``grade_context``) or the query's gold answers (``grade_gold``)."""


def grade_traces(traces: pl.DataFrame, texts: pl.DataFrame, client: LLMClient, *,
                 context_prompt: Prompt | None = None, gold_prompt: Prompt | None = None) -> pl.DataFrame:
    """The grades of each trace's own answer (``traces``: id, E, rank, answer; ``texts``: id, q, p,
    n, answers), by the rule of :func:`grade_one`, with no ideal answer: with ``context_prompt``
    against the trace's retrieved texts in rank order (candidates p + n gathered by ``rank``):
    ``grade_context, grade_context_expected, status_context, grade_context_raw``; with
    ``gold_prompt`` against the query's gold answers: ``grade_gold, grade_gold_expected,
    status_gold, grade_gold_raw`` (status ``no_gold_answer`` and null grade without one). One row
    per trace: id, E, then those columns; a query's grades run back to back."""
    rows = (traces.select("id", "E", "rank", "answer")
            .join(texts.select("id", "q", "p", "n", "answers"), on="id", how="left", maintain_order="left")
            .with_columns(refs=pl.concat_list("p", "n").list.gather(pl.col("rank")))
            .sort("id", "E"))
    out = rows.select("id", "E")
    for prefix, prompt in (("context", context_prompt), ("gold", gold_prompt)):
        if prompt is None:
            continue
        tasks = []
        for q, answer, refs, gold in rows.select("q", "answer", "refs", "answers").iter_rows():
            gold = [a for a in gold or [] if a and a.strip()]
            if prefix == "context":
                tasks.append(grade_one(client, prompt, prompt.messages(
                    query=q, references=format_references(refs), answer=answer)))
            elif not gold:
                tasks.append(_skipped(NO_GOLD_ANSWER))
            else:
                tasks.append(grade_one(client, prompt, prompt.messages(
                    query=q, gold_answers=format_gold_answers(gold), answer=answer)))
        outcomes = client.run_all(tasks, f"{prefix} grades", groups=rows["id"].to_list())
        out = out.with_columns(
            pl.Series(f"grade_{prefix}", [o.grade for o in outcomes], dtype=pl.Int8),
            pl.Series(f"grade_{prefix}_expected", [o.grade_expected for o in outcomes], dtype=pl.Float64),
            pl.Series(f"status_{prefix}", [o.status for o in outcomes], dtype=pl.String),
            pl.Series(f"grade_{prefix}_raw", [o.grade_raw for o in outcomes], dtype=pl.String),
        )
    return out
