"""The judge beside the answer: how well each LLM-made input of the verdict was checked, per family.

An LLM makes two inputs of the verdict: the grade of an answer (the targets ``grade``,
``grade_expected`` ...) and, for the judgment measures, the relevance labels of retrieved texts
(UMBRELA). Where the run can check them, the check travels with the verdict's answer:

- UMBRELA labels against the qrels or a person's marks (``reference``: the traces' labelling
  sheet, preferred where both exist): Cohen's kappa of label >= 2 against relevant, with its
  bootstrap interval over queries (``results/analysis/umbrela_agreement.parquet``, per subset);
- a judge grade against a judge-free target: the AUC of the grade for ``answer_contains``
  (``results/analysis/judge_agreement.parquet``, per subset, columns ``auc_<grade>``);
- LLM grades against human grades: Krippendorff's alpha (ordinal) of the LLM with all humans
  (``results/analysis/agreement.parquet``, row ``llm-all-humans``, else ``llm-human_1``).

A check is *weak* when its interval reaches below :data:`WEAK_BELOW` (kappa or alpha 0.4, AUC
0.6): the verdict then rests on a weak judge, and says so.
"""

from __future__ import annotations

import polars as pl

from retrieval_response.measures.registry import MEASURES

WEAK_BELOW = {"kappa": 0.4, "AUC": 0.6, "alpha": 0.4}
"""The value below which a check's interval makes the judge weak, by statistic."""
CHECK_COLUMNS = {"subset": pl.String, "checked": pl.String, "statistic": pl.String, "against": pl.String,
                 "value": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64}
"""Columns of :func:`judge_checks`: ``checked`` is a target name or ``umbrela_label``; ``subset``
null for a check over every subset."""


def judge_checks(umbrela: pl.DataFrame | None = None, judge: pl.DataFrame | None = None,
                 human: pl.DataFrame | None = None) -> pl.DataFrame:
    """The checks of the run's agreement tables (module docstring), one row per (subset, checked
    input), :data:`CHECK_COLUMNS`; rows without a value are left out."""
    rows = []
    if umbrela is not None:
        # a person's marks (the labelling sheet) after the qrels: the check kept for a subset is the last
        for r in umbrela.sort(pl.col("reference") == "labelled sheet" if "reference" in umbrela.columns
                              else pl.lit(0)).iter_rows(named=True):
            rows.append({"subset": r["subset"], "checked": "umbrela_label", "statistic": "kappa",
                         "against": r.get("reference") or "qrels", "value": r["kappa"], "ci_low": r["kappa_ci_low"],
                         "ci_high": r["kappa_ci_high"]})
    if judge is not None:
        for r in judge.iter_rows(named=True):
            for column in judge.columns:
                if column.startswith("auc_") and not column.endswith(("_ci_low", "_ci_high")):
                    rows.append({"subset": r["subset"], "checked": column.removeprefix("auc_"), "statistic": "AUC",
                                 "against": "answer_contains", "value": r[column], "ci_low": r[f"{column}_ci_low"],
                                 "ci_high": r[f"{column}_ci_high"]})
    if human is not None and human.height:
        pairs = dict(zip(human["pair"], range(human.height), strict=True))
        pick = next((pairs[p] for p in ("llm-all-humans", "llm-human_1") if p in pairs), None)
        if pick is not None:
            r = human.row(pick, named=True)
            rows.append({"subset": None, "checked": "grade", "statistic": "alpha", "against": "human grades",
                         "value": r["alpha"], "ci_low": r["alpha_ci_low"], "ci_high": r["alpha_ci_high"]})
    checks = pl.DataFrame(rows, schema=CHECK_COLUMNS).with_columns(pl.col(pl.Float64).fill_nan(None))
    return checks.filter(pl.col("value").is_not_null())


def check_words(check: dict) -> str:
    """One check in words: "UMBRELA kappa 0.54 [0.40, 0.68] vs qrels"."""
    what = "UMBRELA" if check["checked"] == "umbrela_label" else check["checked"]
    interval = (f" [{check['ci_low']:.2f}, {check['ci_high']:.2f}]"
                if check["ci_low"] is not None and check["ci_high"] is not None else "")
    return f"{what} {check['statistic']} {check['value']:.2f}{interval} vs {check['against']}"


def is_weak(check: dict) -> bool:
    """The check's interval (its value when it has none) reaches below :data:`WEAK_BELOW`."""
    low = check["ci_low"] if check["ci_low"] is not None else check["value"]
    return low < WEAK_BELOW[check["statistic"]]


def with_judge_checks(verdict: pl.DataFrame, checks: pl.DataFrame) -> pl.DataFrame:
    """``verdict`` with ``judge_check`` (the family's checks in words, joined by "; ", null when
    none) and ``judge_weak`` (some check of it is weak) on every row of a family: the checks of its
    target (of its subset, else over every subset) and, when its recommended measure is built from
    UMBRELA labels, the UMBRELA check of its subset."""
    by = {(c["subset"], c["checked"]): c for c in checks.iter_rows(named=True)}
    keys = ["target", "subset", "E", "segment"]
    families = verdict.group_by(keys, maintain_order=True).agg(
        pl.col("measure").filter(pl.col("recommended")).first().alias("recommended_measure"))
    words, weak = [], []
    for target, subset, recommended in families.select("target", "subset", "recommended_measure").iter_rows():
        found = [by.get((subset, target)) or by.get((None, target))]
        if recommended is not None and MEASURES[recommended].needs == "umbrela_label":
            found.append(by.get((subset, "umbrela_label")))
        found = [c for c in found if c is not None]
        words.append("; ".join(check_words(c) for c in found) or None)
        weak.append(any(is_weak(c) for c in found))
    families = families.select(keys).with_columns(judge_check=pl.Series(words, dtype=pl.String),
                                                   judge_weak=pl.Series(weak, dtype=pl.Boolean))
    columns = verdict.columns
    return verdict.drop("judge_check", "judge_weak").join(families, on=keys, how="left", maintain_order="left",
                                                          nulls_equal=True).select(columns)
