"""Pick the queries of a texts table that can serve the configured designs, and count the others
(docs/METHODS.md#designs-and-query-selection).

A design is (Nc, Np) with 1 <= Np < Nc; its candidates are the first Np positives and the
first Nc - Np negatives. A query serves a design when its texts are distinct,
len(p) >= Np and len(n) >= Nc - Np. A query is usable when it serves at least one design; a
query serving none is skipped for one reason, the first that applies:

- ``duplicate_text``: the same text twice among the positives, or a text that is both a
  positive and a negative (it would be ranked twice and counted twice in P and R); texts are
  compared exactly, as the LLM and the embedder see them: after a text budget or repair has
  shortened them (``layouts.prepare``), which can make two different texts one. Repeated
  negatives are not a reason: ``layouts`` drops them beforehand;
- ``fewer_positives_than_Np``: len(p) < Np for every design;
- ``too_few_candidates``: some design has Np <= len(p), but each such design lacks negatives
  (len(n) < Nc - Np), i.e. len(p) + len(n) < Nc with the positives capped at Np.

``per_design_usable`` and ``per_design_skipped`` give the same counts for each design alone.

Sampling is bottom-k by hash: each usable query gets the key blake2b("<seed>:<id>") and the
``n_queries`` smallest keys are kept. The choice depends only on the seed and the ids, so it
does not change when other datasets are added, and adding queries to a dataset only swaps in
queries with smaller keys. The output is sorted by id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from pathlib import Path

import polars as pl

from retrieval_response.infra.errors import InputError

DUPLICATE_TEXT = "duplicate_text"
FEWER_POSITIVES = "fewer_positives_than_Np"
TOO_FEW_CANDIDATES = "too_few_candidates"
NO_JUDGED_POSITIVE = "no_judged_positive"


def design_name(nc: int, np_: int) -> str:
    """Report key of one design: ``Nc<Nc>_Np<Np>``."""
    return f"Nc{nc}_Np{np_}"


def check_designs(designs: list[tuple[int, int]]) -> None:
    """ValueError unless there is at least one design and each has 1 <= Np < Nc."""
    if not designs:
        raise ValueError("at least one (Nc, Np) design is required")
    for nc, np_ in designs:
        if not 1 <= np_ < nc:
            raise ValueError(f"design Nc={nc}, Np={np_} breaks 1 <= Np < Nc")


def sample_key(seed: int, query_id: str) -> bytes:
    """The bottom-k sampling key of one query: blake2b-64 of ``"<seed>:<id>"``."""
    return hashlib.blake2b(f"{seed}:{query_id}".encode(), digest_size=8).digest()


def repeated_texts() -> pl.Expr:
    """Per query: a positive occurs twice in ``p``, or a text occurs in both ``p`` and ``n``."""
    positives = pl.col("p")
    return (positives.list.n_unique() < positives.list.len()) | (
        positives.list.set_intersection(pl.col("n")).list.len() > 0
    )


def feasibility(texts: pl.DataFrame, designs: list[tuple[int, int]], repeated: Collection[str] = ()) -> pl.DataFrame:
    """Per query: ``distinct`` (no repeated text, and not among the ids ``repeated``: queries whose
    texts repeat once shortened), ``enough_p_<design>`` (also len(p) >= Np) and ``serves_<design>``
    (also len(n) >= Nc - Np)."""
    distinct, n_pos, n_neg = pl.col("distinct"), pl.col("p").list.len(), pl.col("n").list.len()
    unrepeated = ~repeated_texts() & ~pl.col("id").is_in(pl.Series(list(repeated), dtype=pl.String).implode())
    return texts.select("id", "p", "n", unrepeated.alias("distinct")).select(
        "id",
        "distinct",
        *[(distinct & (n_pos >= np_)).alias(f"enough_p_{design_name(nc, np_)}") for nc, np_ in designs],
        *[
            (distinct & (n_pos >= np_) & (n_neg >= nc - np_)).alias(f"serves_{design_name(nc, np_)}")
            for nc, np_ in designs
        ],
    )


def skip_counts(flags: pl.DataFrame, designs: list[tuple[int, int]]) -> tuple[pl.Series, dict, dict, dict]:
    """(usable mask, skipped by reason, usable per design, skipped per design by reason)."""
    names = [design_name(nc, np_) for nc, np_ in designs]
    rows = flags.select(
        "distinct",
        pl.any_horizontal([pl.col(f"serves_{name}") for name in names]).alias("usable"),
        pl.any_horizontal([pl.col(f"enough_p_{name}") for name in names]).alias("any_enough_p"),
    )
    usable, distinct = rows["usable"], rows["distinct"]
    skipped = {
        DUPLICATE_TEXT: int((~distinct).sum()),
        FEWER_POSITIVES: int((distinct & ~rows["any_enough_p"]).sum()),
        TOO_FEW_CANDIDATES: int((~usable & rows["any_enough_p"]).sum()),
    }
    counts = flags.select(
        *[pl.col(f"serves_{name}").sum().alias(f"usable {name}") for name in names],
        *[(pl.col("distinct") & ~pl.col(f"enough_p_{name}")).sum().alias(f"{FEWER_POSITIVES} {name}") for name in names],
        *[(pl.col(f"enough_p_{name}") & ~pl.col(f"serves_{name}")).sum().alias(f"{TOO_FEW_CANDIDATES} {name}") for name in names],
    ).row(0, named=True)
    per_design_usable = {name: counts[f"usable {name}"] for name in names}
    per_design_skipped = {
        name: {DUPLICATE_TEXT: skipped[DUPLICATE_TEXT]}
        | {reason: counts[f"{reason} {name}"] for reason in (FEWER_POSITIVES, TOO_FEW_CANDIDATES)}
        for name in names
    }
    return usable, skipped, per_design_usable, per_design_skipped


def bottom_k(ids: pl.Series, n_queries: int | None, seed: int) -> pl.Series:
    """The ``n_queries`` ids with the smallest sampling keys (all ids when None), sorted."""
    if n_queries is None or n_queries >= ids.len():
        return ids.sort()
    keys = pl.Series("key", [sample_key(seed, query_id) for query_id in ids], dtype=pl.Binary)
    return pl.DataFrame({"id": ids, "key": keys}).sort("key").head(n_queries)["id"].sort()


def sample_queries(
    texts: pl.DataFrame, *, n_queries: int | None, seed: int, designs: list[tuple[int, int]],
    repeated: Collection[str] = (),
) -> tuple[pl.DataFrame, dict]:
    """Usable queries of ``texts`` (serving at least one design), ``n_queries`` of them sampled by seed.
    The ids ``repeated`` count as ``duplicate_text`` whatever their texts here (their texts repeat
    once shortened: ``layouts.prepare``).

    Returns the sampled rows sorted by id and a report: ``read``, ``usable``, ``sampled``,
    ``skipped`` {reason: count}, ``designs`` [[Nc, Np]], ``per_design_usable`` and
    ``per_design_skipped`` {Nc<Nc>_Np<Np>: ...} (over the queries read), ``per_design_sampled``
    {Nc<Nc>_Np<Np>: {"serves": n, reason: n}} (the sampled queries each design uses, and those it
    leaves out by reason: a sampled query serves at least one design, not necessarily every one),
    ``n_queries``, ``seed`` and, when fewer queries are usable than asked for, a ``note`` (all
    usable queries are then kept).
    """
    designs = list(dict.fromkeys((int(nc), int(np_)) for nc, np_ in designs))
    check_designs(designs)
    usable, skipped, per_design_usable, per_design_skipped = skip_counts(feasibility(texts, designs, repeated), designs)
    candidates = texts.filter(usable)
    sampled = sample_usable(candidates, n_queries, seed)
    report = {
        "read": texts.height,
        "usable": candidates.height,
        "sampled": sampled.height,
        "skipped": skipped,
        "designs": [[nc, np_] for nc, np_ in designs],
        "per_design_usable": per_design_usable,
        "per_design_skipped": per_design_skipped,
        "per_design_sampled": design_coverage(sampled, designs),
        "n_queries": n_queries,
        "seed": seed,
    }
    return sampled, report | too_few_note(candidates, n_queries)


def sample_judged_queries(texts: pl.DataFrame, *, n_queries: int | None, seed: int) -> tuple[pl.DataFrame, dict]:
    """The queries of a judged corpus's texts table that have a judged positive, ``n_queries`` of
    them sampled by seed (bottom-k, as :func:`sample_queries`), for corpus-level retrieval.

    Report: ``read``, ``usable``, ``sampled``, ``skipped`` {``no_judged_positive``: n},
    ``n_queries``, ``seed``, and a ``note`` when fewer queries are usable than asked for."""
    usable = texts.filter(pl.col("p").list.len() > 0)
    sampled = sample_usable(usable, n_queries, seed)
    report = {"read": texts.height, "usable": usable.height, "sampled": sampled.height,
              "skipped": {NO_JUDGED_POSITIVE: texts.height - usable.height}, "n_queries": n_queries, "seed": seed}
    return sampled, report | too_few_note(usable, n_queries)


def sample_usable(usable: pl.DataFrame, n_queries: int | None, seed: int) -> pl.DataFrame:
    """The rows of ``usable`` whose ids ``bottom_k`` keeps, sorted by id; ValueError for
    ``n_queries`` < 1 (None keeps all)."""
    if n_queries is not None and n_queries < 1:
        raise ValueError(f"n_queries must be >= 1 or None, got {n_queries}")
    chosen = bottom_k(usable["id"], n_queries, seed)
    return usable.filter(pl.col("id").is_in(chosen.implode())).sort("id")


def too_few_note(usable: pl.DataFrame, n_queries: int | None) -> dict:
    """``{"note": ...}`` when fewer queries are usable than ``n_queries`` asks for (all are kept), else {}."""
    if n_queries is not None and usable.height < n_queries:
        return {"note": f"only {usable.height} usable queries for {n_queries} requested: all kept"}
    return {}


def design_coverage(sampled: pl.DataFrame, designs: list[tuple[int, int]]) -> dict:
    """Per design ``Nc<Nc>_Np<Np>``: ``serves`` (queries of ``sampled`` it uses) and the others by
    reason (``fewer_positives_than_Np``, ``too_few_candidates``; ``duplicate_text`` cannot occur
    among sampled queries)."""
    _, _, usable, skipped = skip_counts(feasibility(sampled, designs), designs)
    return {name: {"serves": usable[name], FEWER_POSITIVES: skipped[name][FEWER_POSITIVES],
                   TOO_FEW_CANDIDATES: skipped[name][TOO_FEW_CANDIDATES]} for name in usable}


def skip_summary(dataset: str, report: dict) -> tuple[str, bool]:
    """One line for the terminal about the queries of ``dataset`` (a ``sample_queries`` report):
    read, sampled, the read queries no design can use by reason, and what each design does with
    the sampled ones (``Nc8_Np2 uses 40, skips 60 with fewer positives than Np``); and whether a
    design leaves sampled queries out or read queries were left out for too few positives (a
    line to warn with)."""
    read = [f"{count} {reason}" for reason, count in report["skipped"].items() if count]
    designs = []
    for name, counts in report.get("per_design_sampled", {}).items():
        skips = [f"{counts[reason]} with {what}" for reason, what in
                 ((FEWER_POSITIVES, "fewer positives than Np"), (TOO_FEW_CANDIDATES, "too few candidates"))
                 if counts[reason]]
        designs.append(f"{name} uses {counts['serves']}" + (f", skips {' and '.join(skips)}" if skips else ""))
    line = (f"prepare_dataset {dataset}: {report['read']} queries read, {report['sampled']} sampled"
            + (f" (left out: {', '.join(read)})" if read else "") + (f"; per design: {'; '.join(designs)}" if designs else ""))
    loses = report["skipped"].get(FEWER_POSITIVES, 0) > 0 or any(
        counts[FEWER_POSITIVES] + counts[TOO_FEW_CANDIDATES] for counts in report.get("per_design_sampled", {}).values())
    return line, loses


def no_usable_query(path: str | Path, texts: pl.DataFrame, report: dict, repeated: Collection[str] = ()) -> InputError:
    """The InputError for a file none of whose queries serves a design, naming its first query and
    why (``repeated``: the ids whose texts repeat once shortened, as in :func:`sample_queries`)."""
    skipped = ", ".join(f"{reason} {count}" for reason, count in report["skipped"].items())
    if texts.height == 0:
        return InputError(path, "file", "no query could be built from the file")
    first = texts.row(0, named=True)
    n_pos, n_neg = len(first["p"]), len(first["n"])
    min_np = min(np_ for _, np_ in report["designs"])
    designs = ", ".join(design_name(nc, np_) for nc, np_ in report["designs"])
    if first["id"] in repeated:
        why = ("two of its texts become one within the text budget (or repair): a text occurs twice among the "
               "positives or as both a positive and a negative")
    elif texts.head(1).select(repeated_texts()).item():
        why = "a text occurs twice among the positives or as both a positive and a negative"
    elif n_pos < min_np:
        why = f"{n_pos} positives, fewer than Np={min_np} for every design ({designs})"
    else:
        why = f"{n_pos} positives and {n_neg} negatives, too few candidates for every design ({designs})"
    return InputError(path, f"id {first['id']}", f"{why}; no query of the file is usable ({skipped})")
