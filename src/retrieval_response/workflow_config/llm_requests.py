"""The requests the workflow's LLM stages make, decided once: the rules' jobs ask them and the
cost estimate (:mod:`retrieval_response.reports.llm_workload`) prices the same rows.

This module imports nothing of the library, so that an LLM job (``envs/llm.yaml``) can read it
without the dataset and ranking code :mod:`.plan` reaches.
"""

from __future__ import annotations

import polars as pl


def ideal_answer_requests(texts: pl.DataFrame, nps: list[int]) -> pl.DataFrame:
    """The ideal answers the answer_ideal rule asks for a dataset's query texts (columns id, q, p)
    under the Np values ``nps`` (:func:`.plan.dataset_nps`): one per (id, Np) whose query has at least Np
    positives, written from its first Np positives; columns id, q, Np (Int32), refs, sorted by id
    and Np (a query's prompts grow by whole references, a shared prefix)."""
    return (texts.select("id", "q", "p")
            .join(pl.DataFrame({"Np": sorted(set(nps))}, schema={"Np": pl.Int32}), how="cross")
            .filter(pl.col("p").list.len() >= pl.col("Np"))
            .select("id", "q", "Np", refs=pl.col("p").list.head(pl.col("Np")))
            .sort("id", "Np"))


def corpus_ideal_answer_requests(texts: pl.DataFrame) -> pl.DataFrame:
    """The ideal answers the answer_ideal rule asks for a corpus-level dataset's queries (columns
    id, q, p): one per query with a judged positive, written from all of them (Np = len(p), as in
    its ranked samples); the columns of :func:`ideal_answer_requests`, sorted by id."""
    return (texts.select("id", "q", Np=pl.col("p").list.len().cast(pl.Int32), refs=pl.col("p"))
            .filter(pl.col("Np") > 0).sort("id"))
