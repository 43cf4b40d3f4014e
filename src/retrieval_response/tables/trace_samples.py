"""A deployed system's traces -> the one table the analysis reads, one sample per trace
(docs/TRACES.md), and the traces report of what the analysis can compute on them.

The samples gain the judgment lists and answer scores as the workflow's graded samples do
(:mod:`.collect`); their relevance comes from the UMBRELA labels or from qrels (:data:`TRACE_RELEVANCE`).
"""

from __future__ import annotations

import polars as pl

from retrieval_response.agreement.umbrela_qrels import umbrela_agreement
from retrieval_response.analysis.samples import default_measures
from retrieval_response.infra.errors import JobFailure
from retrieval_response.measures.judgments import UMBRELA_RELEVANT
from retrieval_response.measures.registry import MEASURES, NOT_COMPUTABLE
from retrieval_response.tables.collect import judgment_utilities, with_answer_scores, with_document_judgments

TRACE_RELEVANCE = ("umbrela", "qrels")
"""Where the relevance of a trace's documents comes from (``datasets.<name>.relevance``)."""


def collect_traces(traces: pl.DataFrame, texts: pl.DataFrame, grades: pl.DataFrame,
                   judgments: pl.DataFrame | None, *, relevance: str = "umbrela",
                   erag_metric: str = "answer_contains", resamples: int = 1000,
                   seed: int = 0) -> tuple[pl.DataFrame, dict]:
    """(analysis table, report) of a traces dataset: one sample per trace (``datasets.traces``),
    at K = its number of documents, ``E`` = its system.

    ``inK`` (the relevance of the top K) comes from ``relevance``: ``umbrela``, the UMBRELA label of
    each (query, document) >= 2 (a trace with an unlabelled document is left out, counted as
    ``unlabelled``), with ``Np`` null (unknown: the measures that need it are not computable); or
    ``qrels``, the qrels' grade > 0 (an unjudged document counts as not relevant; ``judged`` is
    the judged share of the top K), with ``Np`` = the query's relevant documents in the qrels (a
    query the qrels do not judge is left out, ``not_in_qrels``). The samples carry the judgment
    lists (:func:`.collect.with_document_judgments`; eRAG answers scored with ``erag_metric``), the
    trace's ``answer`` as ``answer_topK`` with its scores against the gold answers
    (:func:`.collect.with_answer_scores`), ``feedback``, ``time`` (null when the trace has none, or
    the traces table predates the field) and the grades of ``grades``
    (``llm.pipeline.grade_traces``). The report counts traces kept and left out by reason, and,
    with qrels and UMBRELA labels both (either ``relevance``), their agreement on the qrels-judged
    pairs as ``umbrela_vs_qrels`` (``agreement.umbrela_qrels``: rows of subset ``Tr`` and
    ``all``, a bootstrap interval over queries from ``resamples`` and ``seed``). JobFailure, one
    line with the counts by reason (and the UMBRELA statuses), when every trace is left out."""
    if relevance not in TRACE_RELEVANCE:
        raise ValueError(f"relevance {relevance!r}: expected one of {TRACE_RELEVANCE}")
    samples = traces.select("id", "subset", "E", "Nc", "Np", pl.col("K").list.first().alias("K"), "rank",
                            answer_topK="answer", feedback="feedback", record=pl.format("{} {}", "file", "record"),
                            time=pl.col("time") if "time" in traces.columns else pl.lit(None, pl.Datetime("us", "UTC")))
    if judgments is not None:
        utilities = judgment_utilities(judgments, texts.select("id", "answers"), erag_metric)
        samples = with_document_judgments(samples, texts, utilities)
    reasons: dict[str, int] = {}
    if relevance == "umbrela":
        if "umbrela_label" not in samples.columns:
            raise ValueError("relevance umbrela needs the UMBRELA labels (document_judgments.kinds: [umbrela])")
        labelled = samples["umbrela_label"].list.eval(pl.element().is_null().any()).list.first().not_()
        reasons["unlabelled"] = int((~labelled).sum())
        samples = samples.filter(labelled).with_columns(
            inK=pl.col("umbrela_label").list.eval((pl.element() >= UMBRELA_RELEVANT).cast(pl.Int8)),
            Np=pl.lit(None, pl.Int32), judged=pl.lit(1.0))
    else:
        judged_flags = texts.select("id", flags=pl.concat_list(pl.col("p").list.eval(pl.lit(True)), "n_judged"),
                                    Np_qrels="Np_qrels")
        samples = samples.join(judged_flags, on="id", how="left", maintain_order="left")
        reasons["not_in_qrels"] = int(samples["Np_qrels"].is_null().sum())
        samples = samples.filter(pl.col("Np_qrels").is_not_null())
        positive = (samples.select("rank", "Np").with_row_index("_row").explode("rank")
                    .group_by("_row", maintain_order=True).agg(inK=(pl.col("rank") < pl.col("Np")).cast(pl.Int8)))
        samples = samples.with_columns(
            inK=positive["inK"],
            judged=pl.col("flags").list.gather(pl.col("rank")).list.eval(pl.element().cast(pl.Float64)).list.mean(),
        ).with_columns(Np=pl.col("Np_qrels")).drop("flags", "Np_qrels")
    if samples.height == 0:
        raise JobFailure(_none_left(traces, judgments, reasons))
    graded = samples.join(grades, on=["id", "E"], how="left", maintain_order="left")
    graded = graded.join(texts.select("id", "answers"), on="id", how="left", maintain_order="left")
    table = with_answer_scores(graded).with_columns(pl.col("K").cast(pl.Int32), pl.col("Np").cast(pl.Int32))
    report = {"relevance": relevance, "traces": traces.height, "samples": table.height,
              "left_out": reasons, "systems": sorted(set(table["E"]))}
    if (judgments is not None and "umbrela_status" in judgments.columns
            and judgments["umbrela_status"].is_not_null().any() and texts["Np_qrels"].is_not_null().any()):
        agreement = umbrela_agreement([(judgments, qrels_judged_texts(texts))], resamples, seed)
        report["umbrela_vs_qrels"] = agreement.to_dicts()
    return table, report


def _none_left(traces: pl.DataFrame, judgments: pl.DataFrame | None, reasons: dict[str, int]) -> str:
    """The failure line of traces that all left the analysis: the counts by reason and, for
    ``unlabelled``, the UMBRELA statuses of the judgments (``unparseable_label`` ...)."""
    said = []
    for reason, count in reasons.items():
        if count and reason == "unlabelled" and judgments is not None and "umbrela_status" in judgments.columns:
            statuses = judgments["umbrela_status"].fill_null("not asked").value_counts(sort=True)
            said.append(f"{count} unlabelled (a document without an UMBRELA label; UMBRELA statuses of the "
                        f"{judgments.height} judgments: " + ", ".join(f"{s} {n}" for s, n in statuses.iter_rows()) + ")")
        elif count:
            said.append(f"{count} {reason}")
    files = ", ".join(sorted(set(traces["file"])))
    return (f"none of the {traces.height} traces of {files} is left for the analysis: {'; '.join(said)}. The LLM's "
            "replies are in the judgments table (umbrela_raw): a model that does not answer as the prompt "
            "(llm.prompts.umbrela) asks labels nothing")


def traces_report(graded: pl.DataFrame, datasets: dict[str, dict]) -> dict:
    """The traces report: per dataset its :func:`collect_traces` report, which measures of the
    registry are not computable on these samples with the reason (those that need Np, where no
    sample has one), and which are computed: the analysis's default measures
    (:func:`~retrieval_response.analysis.samples.default_measures`: a judgment measure only when
    its judgments were made) that are computable."""
    without_np = graded["Np"].is_null().all()
    not_computable = {name: NOT_COMPUTABLE for name, m in MEASURES.items() if m.needs_Np and without_np}
    computed = [name for name in default_measures(graded) if name not in not_computable]
    return {"datasets": datasets, "samples": graded.height, "not_computable": not_computable,
            "computed": computed}


def qrels_judged_texts(texts: pl.DataFrame) -> pl.DataFrame:
    """``id, subset, p, n`` of a traces texts table with ``n`` cut to the documents the qrels judge (not
    relevant), so that UMBRELA's agreement with the qrels (``agreement.umbrela_qrels``) counts
    judged pairs only; queries the qrels do not judge are left out."""
    return (texts.filter(pl.col("Np_qrels").is_not_null())
            .select("id", "subset", "p", n=pl.col("n").list.gather(pl.col("n_judged").list.eval(pl.element().arg_true()))))
