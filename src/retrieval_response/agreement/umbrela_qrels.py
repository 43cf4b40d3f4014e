"""UMBRELA's labels against the qrels: Cohen's kappa on relevant / not, the confusion counts, an interval over queries.

A judged (query, text) pair has the qrel 1 when the text is one of the query's positives (``p`` of
its texts table) and 0 when it is one of its negatives (``n``); UMBRELA calls it relevant when its
label is >= :data:`~retrieval_response.measures.judgments.UMBRELA_RELEVANT` (2). Pairs without a
label (a failed or unparseable judgment) are left out and counted in ``n_unlabelled``.

One row per subset (the texts table's ``subset`` column, else ``id.split('-')[0]``) and one for
``subset = "all"``, each with ``reference``, what UMBRELA is compared with (``qrels``, or
``labelled sheet``: a person's marks, ``tables.labelling_sheet``): ``n`` labelled pairs,
``n_queries``, ``n_unlabelled``, the binary confusion counts ``tp`` (relevant by both), ``fp``
(UMBRELA only), ``fn`` (qrels only), ``tn``, the counts per label and qrel
``n_label<l>_qrel<r>`` (l = 0..3, r = 0, 1), ``agreement`` = (tp + tn) / n and ``kappa`` =
(p_o - p_e) / (1 - p_e) with p_o = (tp + tn) / n and p_e = ((tp + fp)(tp + fn) + (fn + tn)(fp + tn)) / n^2
(null when p_e = 1: one class only), with ``kappa_ci_low, kappa_ci_high``: the 95% percentile
bootstrap interval over query ids resampled within subsets (null without resamples).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from retrieval_response.analysis.bootstrap import percentile_interval, resample_weights
from retrieval_response.measures.judgments import UMBRELA_RELEVANT

LABELS = (0, 1, 2, 3)
COUNT_COLUMNS = ("tp", "fp", "fn", "tn")


def labelled_pairs(tables: Sequence[tuple[pl.DataFrame, pl.DataFrame]]) -> pl.DataFrame:
    """``dataset`` (index), id, subset, umbrela_label (null if none), qrel (0/1) of every judged pair
    of the (judgments, texts) tables whose text is a positive or negative of its query; the subset
    is the texts' ``subset`` column, else ``id.split('-')[0]``."""
    parts = []
    for index, (judgments, texts) in enumerate(tables):
        if "subset" not in texts.columns:
            texts = texts.with_columns(subset=pl.col("id").str.split("-").list.first())
        qrels = pl.concat([texts.select("id", "subset", text=pl.col("p"), qrel=pl.lit(1, pl.Int8)).explode("text"),
                           texts.select("id", "subset", text=pl.col("n"), qrel=pl.lit(0, pl.Int8)).explode("text")])
        parts.append(judgments.select("id", "text", "umbrela_label")
                     .join(qrels.drop_nulls("text"), on=["id", "text"], how="inner")
                     .with_columns(dataset=pl.lit(index, pl.Int32)))
    schema = {"id": pl.String, "text": pl.String, "umbrela_label": pl.Int8, "subset": pl.String, "qrel": pl.Int8,
              "dataset": pl.Int32}
    frame = pl.concat([pl.DataFrame(schema=schema), *(p.select(list(schema)).cast(schema) for p in parts)])
    return frame.drop("text")


def kappa(counts: np.ndarray) -> np.ndarray:
    """Cohen's kappa of (..., 4) counts (tp, fp, fn, tn): (p_o - p_e) / (1 - p_e); NaN when n = 0 or p_e = 1."""
    tp, fp, fn, tn = np.moveaxis(np.asarray(counts, np.float64), -1, 0)
    n = tp + fp + fn + tn
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = (tp + tn) / n
        expected = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / n**2
        value = (observed - expected) / (1.0 - expected)
    return np.where((n > 0) & (expected < 1.0), value, np.nan)


def umbrela_agreement(tables: Sequence[tuple[pl.DataFrame, pl.DataFrame]], resamples: int = 1000,
                      seed: int = 0, level: float = 0.95, reference: str = "qrels") -> pl.DataFrame:
    """The agreement table of the module docstring, from (judgments, texts) tables of each dataset;
    ``reference`` names what the texts' positives and negatives come from."""
    pairs = labelled_pairs(tables)
    unlabelled = pairs.filter(pl.col("umbrela_label").is_null())
    pairs = pairs.drop_nulls("umbrela_label").with_columns(umbrela=(pl.col("umbrela_label") >= UMBRELA_RELEVANT))
    cells = {"tp": pl.col("umbrela") & (pl.col("qrel") == 1), "fp": pl.col("umbrela") & (pl.col("qrel") == 0),
             "fn": ~pl.col("umbrela") & (pl.col("qrel") == 1), "tn": ~pl.col("umbrela") & (pl.col("qrel") == 0)}
    per_query = (pairs.group_by("dataset", "id", "subset")
                 .agg(*(e.sum().cast(pl.Int64).alias(c) for c, e in cells.items()),
                      *(((pl.col("umbrela_label") == label) & (pl.col("qrel") == qrel)).sum().cast(pl.Int64)
                        .alias(f"n_label{label}_qrel{qrel}") for label in LABELS for qrel in (0, 1)))
                 .sort("subset", "dataset", "id"))
    strata = per_query["subset"].to_numpy()
    weights = resample_weights(strata, resamples, seed) if resamples and per_query.height else None
    counts = per_query.select(COUNT_COLUMNS).to_numpy().astype(np.float64)
    rows = []
    for subset in [*sorted(set(strata)), "all"]:
        member = np.ones(len(strata), bool) if subset == "all" else strata == subset
        total = counts[member].sum(axis=0)
        low = high = np.nan
        if weights is not None:
            low, high = percentile_interval(kappa(weights[:, member] @ counts[member])[None, :], level)
            low, high = float(low[0]), float(high[0])
        labels = per_query.filter(pl.lit(pl.Series(member))).select(pl.col("^n_label.*$").sum()).row(0, named=True)
        n = int(total.sum())
        missing = unlabelled if subset == "all" else unlabelled.filter(pl.col("subset") == subset)
        rows.append({"subset": subset, "reference": reference, "n": n, "n_queries": int(member.sum()),
                     "n_unlabelled": missing.height,
                     **{c: int(v) for c, v in zip(COUNT_COLUMNS, total, strict=True)}, **labels,
                     "agreement": (total[0] + total[3]) / n if n else None, "kappa": float(kappa(total)),
                     "kappa_ci_low": low, "kappa_ci_high": high})
    return pl.DataFrame(rows, schema=SCHEMA).with_columns(pl.col(pl.Float64).fill_nan(None))


SCHEMA = {"subset": pl.String, "reference": pl.String, "n": pl.Int64, "n_queries": pl.Int64, "n_unlabelled": pl.Int64,
          **{c: pl.Int64 for c in COUNT_COLUMNS},
          **{f"n_label{label}_qrel{qrel}": pl.Int64 for label in LABELS for qrel in (0, 1)},
          "agreement": pl.Float64, "kappa": pl.Float64, "kappa_ci_low": pl.Float64, "kappa_ci_high": pl.Float64}
"""Columns of the UMBRELA agreement table (``results/analysis/umbrela_agreement.parquet``)."""
