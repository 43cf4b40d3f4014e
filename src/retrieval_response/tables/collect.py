"""Gather graded samples into the one table the analysis reads (workflow or published files).

The table gains the answers' scores against the gold answers of the texts tables
(:mod:`retrieval_response.analysis.answer_scores`): ``answer_f1, answer_em, answer_recall,
answer_contains`` (top-K answer) and ``ideal_f1, ideal_em, ideal_recall, ideal_contains`` (ideal
answer), null when the query has no gold answer, the answer is
missing, or (published files) no texts table (``samples_texts.json``) is given. With document judgments
(``results/judgments/<dataset>.parquet``) it also gains the per-sample lists of
:data:`~retrieval_response.measures.judgments.JUDGMENT_COLUMNS`, one value per top-K text in rank
order (:func:`with_document_judgments`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import polars as pl

from retrieval_response.analysis.answer_scores import SCORES, best_scores
from retrieval_response.infra.errors import InputError
from retrieval_response.measures.counts import positives_in_top_2k
from retrieval_response.measures.judgments import JUDGMENT_COLUMNS
from retrieval_response.tables.published import read_published
from retrieval_response.tables.sample_rules import check_rules, duplicate_rule
from retrieval_response.tables.workflow_tables import (
    gold_answers,
    read_graded_table,
    read_judgments_table,
    read_ranked_table,
)


def with_top_2k_positives(graded: pl.DataFrame, ranked: pl.DataFrame | None) -> pl.DataFrame:
    """``graded`` plus ``np_2K`` (positives in ranked.rank[:min(2K, Nc)]) when rankings are given."""
    if ranked is None:
        return graded
    return graded.with_columns(np_2K=positives_in_top_2k(graded, ranked))


SCORED_ANSWERS = (("answer_topK", "answer"), ("answer_ideal", "ideal"))
"""(answer column, prefix of its score columns)."""


def column_or_nulls(frame: pl.DataFrame, name: str, dtype: pl.DataType) -> pl.Series:
    """``frame[name]``, or a null Series of ``dtype`` as long as ``frame`` when there is no such column."""
    return frame[name] if name in frame.columns else pl.Series(name, [None] * frame.height, dtype=dtype)


def with_answer_scores(graded: pl.DataFrame) -> pl.DataFrame:
    """``graded`` (with a gold ``answers: list[str]`` column, or without: no gold) with the answer scores instead.

    ``answer_f1, answer_em, answer_recall, answer_contains`` score ``answer_topK``, and
    ``ideal_f1, ideal_em, ideal_recall, ideal_contains`` score ``answer_ideal``, against the row's
    gold answers (token F1, exact match, token recall, containment; maxima over the gold answers).
    """
    gold = column_or_nulls(graded, "answers", pl.List(pl.String))
    scored = [
        best_scores(column_or_nulls(graded, column, pl.String), gold).rename({score: f"{prefix}_{score}" for score in SCORES})
        for column, prefix in SCORED_ANSWERS
    ]
    return pl.concat([graded.drop("answers", strict=False), *scored], how="horizontal")


def analysis_subsets(graded: pl.DataFrame, subset: str | None) -> pl.DataFrame:
    """``graded`` with the analysis' ``subset``: the configured ``subset`` of its dataset when
    there is one (it wins over the ids), else the paper's ``id.split('-')[0]`` (``Hp-e``, ``Hp-m``
    and ``Hp-h`` fall into ``Hp``; the full id prefix stays available as the finer key ``level``)."""
    return graded.with_columns(
        subset=pl.lit(subset, pl.String) if subset is not None else pl.col("id").str.split("-").list.first())


ERAG_METRICS = ("answer_contains", "answer_recall", "answer_f1")
"""Judge-free scores an eRAG answer can be scored with (``document_judgments.erag_metric``)."""


def judgment_utilities(judgments: pl.DataFrame, gold: pl.DataFrame, erag_metric: str = "answer_contains") -> pl.DataFrame:
    """Per judged (id, text) pair: ``erag_utility`` = ``erag_metric`` of its eRAG answer against the
    query's gold answers (answer_contains read as 0/1; null without an answer or a gold answer),
    ``udcg_utility`` = 1 - no_response_p, ``umbrela_label`` (i8). ``judgments`` is a judgments
    table (``llm.document_judgments.JUDGMENT_SCHEMA``), ``gold`` holds id, answers."""
    if erag_metric not in ERAG_METRICS:
        raise ValueError(f"erag_metric {erag_metric!r}: expected one of {ERAG_METRICS}")
    joined = judgments.join(gold, on="id", how="left", maintain_order="left")
    erag = best_scores(joined["erag_answer"], column_or_nulls(joined, "answers", pl.List(pl.String)))
    return joined.select(
        "id", "text",
        erag_utility=erag[erag_metric.removeprefix("answer_")].cast(pl.Float64),
        udcg_utility=1.0 - pl.col("no_response_p"),
        umbrela_label=pl.col("umbrela_label").cast(pl.Int8),
    )


def with_relevance_grades(graded: pl.DataFrame, texts: pl.DataFrame) -> pl.DataFrame:
    """``graded`` (id, Np, rank, inK) plus ``grades``, the relevance grade of each top-K text (its
    ``p_grade`` for a positive, 0 otherwise), and ``ideal_grades``, the grades of the query's Np
    candidate positives; 0/1 from ``inK`` and Np ones when ``texts`` has no ``p_grade``."""
    if "p_grade" not in texts.columns:
        return graded.with_columns(grades=pl.col("inK").cast(pl.List(pl.Int64)),
                                   ideal_grades=pl.lit(1, pl.Int64).repeat_by(pl.col("Np")))
    positives = graded.select("id", "Np").join(texts.select("id", "p_grade"), on="id", how="left", maintain_order="left")
    ideal = positives.select(pl.col("p_grade").list.head(pl.col("Np")))["p_grade"]
    grades = (pl.DataFrame({"rank": graded["rank"], "ideal": ideal, "Np": graded["Np"]}).with_row_index("_row")
              .explode("rank")
              .with_columns(grade=pl.when(pl.col("rank") < pl.col("Np"))
                            .then(pl.col("ideal").list.get(pl.col("rank").cast(pl.Int64), null_on_oob=True))
                            .otherwise(0))
              .group_by("_row", maintain_order=True).agg("grade"))["grade"]
    return graded.with_columns(grades=grades.cast(pl.List(pl.Int64)), ideal_grades=ideal.cast(pl.List(pl.Int64)))


def with_document_judgments(graded: pl.DataFrame, texts: pl.DataFrame, utilities: pl.DataFrame) -> pl.DataFrame:
    """``graded`` (id, Nc, Np, rank) plus the lists of :data:`JUDGMENT_COLUMNS`: element i is the
    judgment of the i-th text of the sample's top K (candidates p[:Np] + n[:Nc-Np] of ``texts``,
    gathered by ``rank``), from ``utilities`` (:func:`judgment_utilities`), null where that pair
    was not judged."""
    candidates = pl.concat_list(pl.col("p").list.head(pl.col("Np")), pl.col("n").list.head(pl.col("Nc") - pl.col("Np")))
    items = (graded.select("id", "Nc", "Np", "rank").with_row_index("_row")
             .join(texts.select("id", "p", "n"), on="id", how="left")
             .select("_row", "id", text=candidates.list.gather(pl.col("rank")))
             .with_columns(_position=pl.int_ranges(pl.col("text").list.len()))
             .explode("text", "_position")
             .join(utilities, on=["id", "text"], how="left")
             .sort("_row", "_position")
             .group_by("_row", maintain_order=True)
             .agg(pl.col(list(JUDGMENT_COLUMNS))))
    lists = graded.with_row_index("_row").select("_row").join(items, on="_row", how="left", maintain_order="left")
    return graded.with_columns(lists[name].cast(dtype) for name, dtype in JUDGMENT_COLUMNS.items())


def collect_workflow(
    graded_paths: Sequence[str | os.PathLike],
    ranked_paths: Sequence[str | os.PathLike],
    texts_paths: Sequence[str | os.PathLike] | None = None,
    subsets: Sequence[str | None] | None = None,
    judgments_paths: Sequence[str | os.PathLike | None] | None = None,
    erag_metric: str = "answer_contains",
) -> pl.DataFrame:
    """The workflow's graded Parquet files as one table, with ``np_2K`` from its ranked files.

    ``subsets[i]`` is the configured ``subset`` of ``graded_paths[i]``'s dataset (None: none), the
    ``subset`` of its rows in the analysis (``analysis_subsets``).

    ``texts_paths[i]`` is the texts table of ``graded_paths[i]``'s dataset (ids are unique
    only within a dataset); its gold answers give the answer scores (``with_answer_scores``),
    all null when ``texts_paths`` is None. ``judgments_paths[i]``, when given (with its texts
    table), is that dataset's judgments table: the samples gain the judgment lists
    (:func:`with_document_judgments`, eRAG answers scored with ``erag_metric``).
    """
    texts_paths = texts_paths if texts_paths is not None else [None] * len(graded_paths)
    subsets = subsets if subsets is not None else [None] * len(graded_paths)
    judgments_paths = judgments_paths if judgments_paths is not None else [None] * len(graded_paths)
    if not len(texts_paths) == len(subsets) == len(judgments_paths) == len(graded_paths):
        raise ValueError(f"{len(texts_paths)} texts tables, {len(subsets)} subsets and {len(judgments_paths)} judgments "
                         f"tables for {len(graded_paths)} graded files: expected one per graded file")
    gold = {path: gold_answers(path) for path in dict.fromkeys(texts_paths) if path is not None}
    utilities = {(j, t): judgment_utilities(read_judgments_table(j), gold[t], erag_metric)
                 for j, t in dict.fromkeys(zip(judgments_paths, texts_paths, strict=True)) if j is not None and t is not None}
    texts = {t: pl.read_parquet(t, columns=["id", "p", "n"]) for _, t in utilities}
    grades = {t: pl.read_parquet(t, columns=["id", *(["p_grade"] if "p_grade" in pl.read_parquet_schema(t) else [])])
              for t in dict.fromkeys(texts_paths) if t is not None}
    parts = []
    for g, t, s, j in zip(graded_paths, texts_paths, subsets, judgments_paths, strict=True):
        part = read_graded_table(g)
        if t is not None:
            part = with_relevance_grades(part, grades[t])
        if (j, t) in utilities:
            part = with_document_judgments(part, texts[t], utilities[j, t])
        parts.append(analysis_subsets(part if t is None else part.join(gold[t], on="id", how="left", maintain_order="left"), s))
    graded = pl.concat(parts, how="diagonal_relaxed")
    check_unique_samples(graded, graded_paths)
    ranked = pl.concat([read_ranked_table(p, ["id", "E", "Nc", "Np", "rank"]) for p in ranked_paths])
    return with_answer_scores(with_judged_share(with_top_2k_positives(graded, ranked), ranked_paths))


def judged_shares(ranked_path: str | os.PathLike) -> pl.DataFrame:
    """``id, E, Nc, Np, K, judged`` of one ranked file: the judged share of each top-K, from its
    ``judged`` column (corpus-level retrieval), else 1 (a pool's candidates are all judged)."""
    columns = pl.read_parquet_schema(ranked_path)
    shares = pl.col("judged") if "judged" in columns else pl.col("P").list.eval(pl.lit(1.0))
    return (pl.read_parquet(ranked_path, columns=["id", "E", "Nc", "Np", "K", "P", *(["judged"] if "judged" in columns else [])])
            .select("id", "E", "Nc", "Np", "K", judged=shares).explode("K", "judged")
            .cast({"Nc": pl.Int32, "Np": pl.Int32, "K": pl.Int32, "judged": pl.Float64}))


def fully_judged(graded: pl.DataFrame) -> pl.DataFrame:
    """The samples of ``graded`` whose top-K is fully judged (``judged`` = 1)."""
    return graded.filter(pl.col("judged") == 1.0)


def check_samples_to_analyse(ranked_paths: Sequence[str | os.PathLike], *, judged_only: bool,
                             config_file: str) -> dict:
    """Before any LLM call: the ranked files ``ranked_paths`` (every unit of the config) hold a
    sample the analysis can use, so that no answer is paid for an analysis that would end in "no
    target column has a value". InputError naming the ranked files when none holds a sample
    (every query skipped: see each file's ``.report.json``), or ``config_file`` and
    ``config key analysis.judged_only`` when ``judged_only`` is set and no sample has a fully
    judged top-K (``judged`` = 1 at some K: :func:`fully_judged`). Returns ``{"samples": n,
    "fully_judged": m}`` over all files (sample = one ranked row)."""
    shares = [judged_shares(path) for path in ranked_paths]
    samples = sum(share.select("id", "E", "Nc", "Np").n_unique() if share.height else 0 for share in shares)
    judged = sum(fully_judged(share).select("id", "E", "Nc", "Np").n_unique() if share.height else 0
                 for share in shares)
    if samples == 0:
        names = ", ".join(map(str, ranked_paths)) or "no ranked file"
        raise InputError(names, "file", "no ranked sample in any ranked file: every query was skipped (the "
                         "reasons are counted in each file's .report.json), so the analysis would have no sample; "
                         "nothing is sent to an LLM")
    if judged_only and judged == 0:
        raise InputError(config_file, "config key analysis.judged_only",
                         f"none of the {samples} ranked samples has a fully judged top-K (judged = 1 at some K), so "
                         "judged_only would leave the analysis no sample; nothing is sent to an LLM: set it to false, "
                         "or judge the retrieved documents (a deeper qrels pool)")
    return {"samples": samples, "fully_judged": judged}


def with_judged_share(graded: pl.DataFrame, ranked_paths: Sequence[str | os.PathLike]) -> pl.DataFrame:
    """``graded`` plus ``judged``: the judged share of each sample's top-K (``judged_shares``)."""
    shares = pl.concat([judged_shares(path) for path in ranked_paths]).unique(["id", "E", "Nc", "Np", "K"])
    keys = graded.select(pl.col("id"), pl.col("E"), *(pl.col(c).cast(pl.Int32) for c in ("Nc", "Np", "K")))
    judged = keys.join(shares, on=["id", "E", "Nc", "Np", "K"], how="left", maintain_order="left")["judged"]
    return graded.with_columns(judged=judged)


def check_unique_samples(graded: pl.DataFrame, graded_paths: Sequence[str | os.PathLike]) -> None:
    """InputError when two rows share (id, E, Nc, Np, K): ids are unique within a dataset only,
    so two datasets whose ids overlap (two files of one layout) cannot be analysed together."""
    repeated = graded.filter(pl.struct("id", "E", "Nc", "Np", "K").is_duplicated())
    if repeated.height:
        first = repeated.row(0, named=True)
        raise InputError(", ".join(map(str, graded_paths)), f"id {first['id']}",
                         "the same query id in two datasets (ids are unique within a dataset only): "
                         "give one of them ids of its own")


def published_texts_table(texts_path: str | os.PathLike, texts: pl.DataFrame, graded: pl.DataFrame) -> pl.DataFrame:
    """``id, p, n, answers`` of the published texts table ``texts`` (``samples_texts.json`` read as
    the ``published_texts`` layout, ``datasets.published_texts.read``). InputError naming the texts
    file ``texts_path`` and the first graded id it lacks: every query of ``graded`` must be in it."""
    missing = graded.select("id").unique(maintain_order=True).join(texts.select("id"), on="id", how="anti")
    if missing.height:
        raise InputError(texts_path, f"id {missing['id'][0]}", "a graded query id is missing from the texts file")
    return texts.select("id", "p", "n", "answers")


def collect_published(
    graded_path: str | os.PathLike,
    ranked_path: str | os.PathLike | None,
    *,
    texts: tuple[str | os.PathLike, pl.DataFrame] | None = None,
    judgments_paths: Sequence[str | os.PathLike] = (),
    erag_metric: str = "answer_contains",
) -> pl.DataFrame:
    """A published ``samples_graded.json`` as the analysis table (``np_2K`` if ``samples_ranked.json`` is given).

    Each file is checked record by record and each graded sample against its ranked sample
    (``tables.published.read_published``). The optional fields ``grade_expected`` and ``status``
    are kept when the file has them. The answer scores use the gold answers of ``texts``: a
    published ``samples_texts.json`` and its table as ``datasets.published_texts.read`` reads it,
    joined by id (:func:`published_texts_table`); without it they are null. ``judgments_paths``:
    judgments tables (:func:`read_judgments_table`) of those texts, which it needs; the samples
    gain the judgment lists as in the workflow (:func:`with_document_judgments`, eRAG answers
    scored with ``erag_metric``), a text judged in no table null.
    """
    graded, ranked = read_published(graded_path, ranked_path or None)
    if judgments_paths and texts is None:
        raise InputError(judgments_paths[0], "published.judgments", "judgments need published.texts (the texts they judge)")
    if texts is not None:
        texts = published_texts_table(*texts, graded)
        if judgments_paths:
            judgments = pl.concat([read_judgments_table(p) for p in judgments_paths])
            check_rules(judgments, ", ".join(map(str, judgments_paths)),
                        {"the same (id, text) judged in two judgments tables": duplicate_rule(["id", "text"], judgments.columns)})
            utilities = judgment_utilities(judgments, texts.select("id", "answers"), erag_metric)
            graded = with_document_judgments(graded, texts, utilities)
        graded = graded.join(texts.select("id", "answers"), on="id", how="left", maintain_order="left")
    return with_answer_scores(with_top_2k_positives(graded, ranked))
