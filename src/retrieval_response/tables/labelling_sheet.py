"""Check the judge in ten minutes (docs/TRACES.md): a labelling sheet of (query, document) pairs of
the traces for a person to mark relevant or not, and UMBRELA's agreement with what they marked.

The sheet (:func:`labelling_sheet`, rule ``labelling_sheet``) is a CSV file with the columns
:data:`SHEET_COLUMNS`, one row per pair, in a random order and without UMBRELA's label or the rank
(the person judges blind): a sample of the distinct (query, document) pairs of the traces,
stratified by UMBRELA label (0..3) and rank (the best rank at which a system retrieved the
document), so that every label and rank is represented however rare. The person fills in
``relevant``: ``1``/``0`` (or ``yes``/``no``, ``y``/``n``, ``true``/``false``); a blank cell is a
pair left unlabelled. Read back (:func:`read_labelled_sheet`, config key
``traces.labelled_sheet``), the marks are qrels of the pairs, and
:func:`sheet_agreement` gives UMBRELA's agreement with them
(:func:`~retrieval_response.agreement.umbrela_qrels.umbrela_agreement`: Cohen's kappa
with its bootstrap interval over queries, the confusion counts).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from retrieval_response.infra.errors import InputError, raise_all
from retrieval_response.infra.json_records import existing_file

SHEET_COLUMNS = ("dataset", "query_id", "query", "document_id", "document", "relevant")
"""Columns of the labelling sheet; ``relevant`` is left empty for the person."""
SHEET_REFERENCE = "labelled sheet"
"""The ``reference`` of UMBRELA's agreement with a labelling sheet's marks."""
RELEVANT_VALUES = {"1": 1, "0": 0, "yes": 1, "no": 0, "y": 1, "n": 0, "true": 1, "false": 0}
"""What a ``relevant`` cell may hold (case and surrounding spaces ignored), and its qrel."""


def sheet_pairs(dataset: str, texts: pl.DataFrame, traces: pl.DataFrame, judgments: pl.DataFrame) -> pl.DataFrame:
    """Every distinct (query, document) of a traces dataset's tables (``datasets.traces.read_traces``)
    with its UMBRELA label (``judgments``; null when it failed) and ``rank``, the best 1-based
    rank at which a trace retrieved it: columns dataset, query_id, query, document_id, document,
    umbrela_label, rank."""
    candidates = texts.select("id", "q", doc=pl.concat_list("p_doc", "n_doc"), text=pl.concat_list("p", "n"))
    ranked = (traces.select("id", index=pl.col("rank"), rank=pl.int_ranges(1, pl.col("rank").list.len() + 1))
              .explode("index", "rank").group_by("id", "index").agg(pl.col("rank").min()))
    pairs = (candidates.with_columns(index=pl.int_ranges(pl.col("doc").list.len())).explode("doc", "text", "index")
             .join(ranked.with_columns(pl.col("index").cast(pl.Int64)), on=["id", "index"], how="inner"))
    labels = judgments.select("id", "text", "umbrela_label")
    return (pairs.join(labels, on=["id", "text"], how="left")
            .select(dataset=pl.lit(dataset), query_id="id", query="q", document_id="doc", document="text",
                    umbrela_label=pl.col("umbrela_label").cast(pl.Int8), rank=pl.col("rank").cast(pl.Int32))
            .sort("query_id", "rank"))


def stratified_sample(pairs: pl.DataFrame, n: int, seed: int = 0) -> pl.DataFrame:
    """``n`` rows of ``pairs`` (all when fewer), stratified by (``umbrela_label``, ``rank``): the
    strata are visited in turn, each giving its next row in a random order drawn with ``seed``,
    until ``n`` are taken (so a rare label or rank is represented as well as a common one); rows
    without a label are not sampled. The sample comes in a random order."""
    labelled = pairs.drop_nulls("umbrela_label")
    rng = np.random.default_rng(seed)
    shuffled = labelled[rng.permutation(labelled.height).tolist()] if labelled.height else labelled
    order = (shuffled.with_row_index("_draw")
             .with_columns(_turn=pl.col("_draw").rank("ordinal").over("umbrela_label", "rank"))
             .sort("_turn", "umbrela_label", "rank").head(n))
    picked = order.drop("_draw", "_turn")
    return picked[rng.permutation(picked.height).tolist()] if picked.height else picked


def labelling_sheet(pairs: pl.DataFrame, n: int, seed: int = 0) -> pl.DataFrame:
    """The labelling sheet (:data:`SHEET_COLUMNS`) of :func:`stratified_sample` of ``pairs``
    (:func:`sheet_pairs`), ``relevant`` empty."""
    return stratified_sample(pairs, n, seed).select(*SHEET_COLUMNS[:-1], relevant=pl.lit("", pl.String))


def read_labelled_sheet(path: str | Path) -> pl.DataFrame:
    """The marks of a filled-in labelling sheet: ``dataset, query_id, document_id, relevant`` (0/1) of
    every row whose ``relevant`` cell is not blank. InputError for a missing column (one line) and
    for every cell that is not one of :data:`RELEVANT_VALUES` (one line each, by CSV line)."""
    source = existing_file(path)
    with source.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in ("dataset", "query_id", "document_id", "relevant") if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(path, "line 1", f"the labelling sheet has no column {', '.join(missing)} (expected the "
                                             f"columns {', '.join(SHEET_COLUMNS)} of the sheet the workflow wrote)")
        rows, errors = [], []
        for row in reader:
            cell = (row["relevant"] or "").strip().lower()
            if not cell:
                continue
            if cell not in RELEVANT_VALUES:
                errors.append(InputError(path, f"line {reader.line_num}", f"relevant {row['relevant']!r}: write 1 "
                                         "(relevant) or 0 (not relevant), or leave it blank"))
                continue
            rows.append({"dataset": row["dataset"], "query_id": row["query_id"], "document_id": row["document_id"],
                         "relevant": RELEVANT_VALUES[cell]})
    raise_all(errors)
    return pl.DataFrame(rows, schema={"dataset": pl.String, "query_id": pl.String, "document_id": pl.String,
                                      "relevant": pl.Int8})


def marked_texts(marks: pl.DataFrame, dataset: str, texts: pl.DataFrame) -> pl.DataFrame:
    """``id, subset, p, n`` of a traces dataset's texts table with ``p`` the texts marked relevant and
    ``n`` those marked not relevant in ``marks`` (:func:`read_labelled_sheet`, rows of ``dataset``),
    queries without a mark left out: the qrels that
    :func:`~retrieval_response.agreement.umbrela_qrels.umbrela_agreement` reads."""
    documents = (texts.select("id", "subset", doc=pl.concat_list("p_doc", "n_doc"), text=pl.concat_list("p", "n"))
                 .explode("doc", "text"))
    marked = (marks.filter(pl.col("dataset") == dataset)
              .join(documents, left_on=["query_id", "document_id"], right_on=["id", "doc"], how="inner"))
    return (marked.group_by("query_id", "subset", maintain_order=True)
            .agg(p=pl.col("text").filter(pl.col("relevant") == 1), n=pl.col("text").filter(pl.col("relevant") == 0))
            .rename({"query_id": "id"}))


def sheet_agreement(marks: pl.DataFrame, tables: Sequence[tuple[str, pl.DataFrame, pl.DataFrame]],
                    resamples: int = 1000, seed: int = 0) -> pl.DataFrame:
    """UMBRELA's agreement with the marks of a labelling sheet: the agreement table of
    :func:`~retrieval_response.agreement.umbrela_qrels.umbrela_agreement` over the
    (dataset name, texts table, judgments table) ``tables``, the marks as qrels
    (:func:`marked_texts`). InputError when no mark names a pair of the datasets."""
    # imported here: the start-up checks read the sheet in Snakemake's environment, without the analysis's
    from retrieval_response.agreement.umbrela_qrels import umbrela_agreement

    pairs = [(judgments, marked_texts(marks, name, texts)) for name, texts, judgments in tables]
    if marks.height and not sum(frame.select(pl.col("p").list.len() + pl.col("n").list.len()).sum().item() or 0
                                for _, frame in pairs):
        first = marks.row(0, named=True)
        raise InputError("labelling sheet", f"query {first['query_id']!r}", "no marked pair is a (query, document) "
                         f"of the traces datasets ({', '.join(n for n, _, _ in tables)}): a sheet of another run?")
    return umbrela_agreement(pairs, resamples, seed, reference=SHEET_REFERENCE)
