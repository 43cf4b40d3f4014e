"""Source layouts by name: read any of them into the texts table, then sample queries.

The texts table (docs/DESIGN.md): ``id`` (unique, ``<subset>-<n>``), ``subset``, ``q``,
``p: list[str]``, ``n: list[str]``, then the layout's extras (``level``, ``c1``, ``c2``,
``q2``, ``source_id``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import polars as pl

from retrieval_response.datasets import (
    arxiv_parquet,
    arxiv_snapshot,
    generic,
    hotpotqa_hf,
    hotpotqa_ircot,
    ir_datasets_layout,
    judged_corpus,
    msmarco,
    natural_questions,
    published_texts,
)
from retrieval_response.datasets.sampling import no_usable_query, repeated_texts, sample_judged_queries, sample_queries
from retrieval_response.datasets.text_budget import apply_text_budget
from retrieval_response.datasets.validation import drop_repeated_negatives
from retrieval_response.infra.errors import InputError

Reader = Callable[[str | Path, str | None], tuple[pl.DataFrame, dict]]

READERS: dict[str, Reader] = {
    "hotpotqa_hf": hotpotqa_hf.read,
    "hotpotqa_ircot": hotpotqa_ircot.read,
    "arxiv_parquet": arxiv_parquet.read,
    "arxiv_snapshot": arxiv_snapshot.read,
    "msmarco": msmarco.read,
    "natural_questions": natural_questions.read,
    "published_texts": published_texts.read,
    "generic": generic.read,
    "beir": judged_corpus.read_beir,
    "trec": judged_corpus.read_trec,
    "ir_datasets": ir_datasets_layout.read,
}
TRACES_LAYOUT = "traces"
"""A deployed system's logs (``datasets.traces``): read into texts and traces tables by the
``prepare_traces`` rule, analysed without Np (docs/TRACES.md); not a reader of this registry."""
LAYOUTS = (*READERS, TRACES_LAYOUT)
LAYOUTS_WITHOUT_GOLD = ("arxiv_parquet", "arxiv_snapshot", "trec", "ir_datasets")
"""Layouts whose texts tables never carry gold answers (the others may)."""
ARXIV_LAYOUTS = ("arxiv_parquet", "arxiv_snapshot")
"""Layouts of arXiv abstracts, whose lost line breaks ``split_joined_words`` repairs."""
CORPUS_LAYOUTS = ("beir", "trec", "ir_datasets")
"""Layouts with a corpus of documents by id: the ones a run file can rank and a dataset can
retrieve from (``retrieval: corpus``)."""
NUMBERED_SUBSETS = {"beir": judged_corpus.BEIR_SUBSET, "trec": judged_corpus.TREC_SUBSET,
                    "ir_datasets": ir_datasets_layout.SUBSET}
"""The default subset of each layout that numbers its rows ``<subset>-<n>`` (n the query's
position), so that two datasets of such layouts share ids unless their subsets differ."""


def row_subset(layout: str, subset: str | None) -> str | None:
    """The subset that prefixes the ids of a ``layout`` dataset's rows: ``subset``, else the
    layout's default (:data:`NUMBERED_SUBSETS`); None for a layout whose ids come from its file."""
    if layout not in NUMBERED_SUBSETS:
        return None
    return subset or NUMBERED_SUBSETS[layout]


def check_options(
    path: str | Path, layout: str, *, level: str | None, subset: str | None, key: str = "config key ",
    split_joined_words: bool = False,
) -> None:
    """InputError (record ``<key>subset`` / ``<key>level`` / ``<key>split_joined_words``) when an
    option does not apply to ``layout``.

    ``subset`` applies to ``generic`` (the subset of its rows) and to the ``CORPUS_LAYOUTS`` (the
    subset and id prefix of their rows, ``<subset>-<n>``); other layouts take their subsets from
    the data;
    ``level: sentence`` needs sentence labels, which ``hotpotqa_ircot`` lacks;
    ``split_joined_words`` applies to the arXiv layouts only. ValueError for an
    unknown layout. Called when a file is read and, at start-up, with the config file as ``path``
    and ``key`` = ``config key datasets.<name>.``.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}")
    if subset is not None and layout not in ("generic", *CORPUS_LAYOUTS, TRACES_LAYOUT):
        rule = (f"layout {layout!r} takes its subsets from the data; 'subset' applies to "
                f"{', '.join(('generic', *CORPUS_LAYOUTS, TRACES_LAYOUT))} only")
        raise InputError(path, f"{key}subset", rule)
    if level == "sentence" and layout == "hotpotqa_ircot":
        rule = "the IRCoT layout has no sentence labels; use level: paragraph"
        raise InputError(path, f"{key}level", rule)
    if split_joined_words and layout not in ARXIV_LAYOUTS:
        rule = f"repairs the arXiv abstracts' lost line breaks; applies to {' and '.join(ARXIV_LAYOUTS)} only"
        raise InputError(path, f"{key}split_joined_words", rule)


def read_with_notes(
    layout: str, path: str | Path, *, level: str | None = None, subset: str | None = None, allow_downloads: bool = False
) -> tuple[pl.DataFrame, dict]:
    """The texts table of ``path`` in ``layout`` and the adapter's notes (texts dropped, categories left out ...).

    ``path`` is the source file, or the dataset id of the ``ir_datasets`` layout, which reads only
    the package's local cache unless ``allow_downloads`` (other layouts read local files only).
    ``subset`` names the subset of a ``generic`` file (default: the id prefix) or the subset and
    id prefix of a ``beir``, ``trec`` or ``ir_datasets`` dataset's rows (default B, T, I); other
    layouts take their subsets from the data and reject it (``check_options``). ValueError for an unknown layout.
    Repeated negatives of a query are dropped, counted as ``duplicate_negatives_dropped``.
    """
    check_options(path, layout, level=level, subset=subset)
    if layout == "generic":
        texts, notes = generic.read(path, level, subset)
    elif layout == "ir_datasets":
        texts, notes = ir_datasets_layout.read(str(path), level, allow_downloads=allow_downloads, subset=subset)
    elif layout in CORPUS_LAYOUTS:
        texts, notes = READERS[layout](path, level, subset)
    else:
        texts, notes = READERS[layout](path, level)
    texts, dropped = drop_repeated_negatives(texts)
    return texts, {**notes, "duplicate_negatives_dropped": dropped}


def read_texts(layout: str, path: str | Path, *, level: str | None = None, subset: str | None = None) -> pl.DataFrame:
    """The texts table of ``path`` read with ``layout`` (one of LAYOUTS); InputError on bad input.

    ``level`` is the HotpotQA granularity (``paragraph``, the default, or ``sentence``).
    """
    return read_with_notes(layout, path, level=level, subset=subset)[0]


def prepare(
    layout: str,
    path: str | Path,
    *,
    level: str | None = None,
    subset: str | None = None,
    n_queries: int | None,
    seed: int,
    designs: list[tuple[int, int]],
    text_words: int | None = None,
    repair_texts: Callable[[pl.DataFrame], tuple[pl.DataFrame, dict]] | None = None,
    allow_downloads: bool = False,
) -> tuple[pl.DataFrame, dict]:
    """``read_texts``, ``sample_queries``, ``repair_texts`` (a repair of the sampled candidate texts
    returning the table and its report, report key ``text_repair``, null without one: the arXiv
    layouts' :func:`~.arxiv_words.split_joined_words_table`, passed by the caller so that only the
    prepare job imports its word counts), then the text budget: the sampled texts table and its report.

    ``allow_downloads`` lets the ``ir_datasets`` layout download a dataset missing from its cache.
    The report is sample_queries' report plus ``source`` (path, or ir_datasets id), ``layout``, ``level``,
    ``source_notes`` (what the adapter dropped or left out, by reason) and ``text_budget``
    (:func:`~.text_budget.apply_text_budget`: the sampled queries' candidate texts cut to their
    first sentences within ``text_words`` words; None keeps them whole). Duplicates are judged on
    the texts as written out: a sampled query two of whose texts become one after the repair or
    the budget is skipped as ``duplicate_text`` and the sampling is redone without it (by seed,
    so its place goes to the next query). Skipped queries are only counted, but a file none of
    whose queries is usable raises InputError.
    """
    texts, notes = read_with_notes(layout, path, level=level, subset=subset, allow_downloads=allow_downloads)
    repeated: set[str] = set()
    while True:  # a query whose texts repeat once shortened is a duplicate_text: sample again without it
        sampled, report = sample_queries(texts, n_queries=n_queries, seed=seed, designs=designs, repeated=repeated)
        if report["usable"] == 0:
            raise no_usable_query(path, texts, report, repeated)
        repaired = None
        if repair_texts is not None:
            sampled, repaired = repair_texts(sampled)
        sampled, budget = apply_text_budget(sampled, text_words)
        newly = set(sampled.filter(repeated_texts())["id"].to_list())
        if not newly:
            break
        repeated |= newly
    return sampled, {"source": str(path), "layout": layout, "level": level, **report, "source_notes": notes,
                     "text_repair": repaired, "text_budget": budget}


def prepare_judged_queries(
    layout: str, path: str | Path, *, n_queries: int | None, seed: int, allow_downloads: bool = False,
    subset: str | None = None,
) -> tuple[pl.DataFrame, dict]:
    """The texts table of a judged corpus (:data:`CORPUS_LAYOUTS`) for corpus-level retrieval: the
    queries with a judged positive, ``n_queries`` of them sampled by seed
    (``sampling.sample_judged_queries``), and the report (as :func:`prepare`'s, without designs or
    text budget). ``allow_downloads`` and ``subset`` as for :func:`prepare`. InputError when no
    query has a judged positive."""
    texts, notes = read_with_notes(layout, path, subset=subset, allow_downloads=allow_downloads)
    sampled, report = sample_judged_queries(texts, n_queries=n_queries, seed=seed)
    if report["usable"] == 0:
        raise InputError(path, "file", "no query has a judged positive (grade > 0)")
    return sampled, {"source": str(path), "layout": layout, "retrieval": "corpus", **report, "source_notes": notes}


def corpus_texts(layout: str, source: str | Path, kind: str, *, allow_downloads: bool = False) -> dict[str, str]:
    """{id: text} of the ``documents`` or the ``queries`` (``kind``) of a dataset of a
    :data:`CORPUS_LAYOUTS` layout: ``source`` is the qrels file (``beir``, ``trec``) or the
    ir_datasets id (read from the package's cache unless ``allow_downloads``). ValueError for
    another layout."""
    if layout == "ir_datasets":
        return ir_datasets_layout.corpus_texts(str(source), kind, allow_downloads=allow_downloads)
    return judged_corpus.judged_texts(layout, source, kind)


def query_ids(layout: str, source: str | Path, *, allow_downloads: bool = False) -> pl.Series:
    """The query ids of the queries of ``source`` (:func:`corpus_texts`): the qids a run file may name."""
    return pl.Series("qid", list(corpus_texts(layout, source, "queries", allow_downloads=allow_downloads)),
                     dtype=pl.String)


def corpus_ids(layout: str, source: str | Path, *, allow_downloads: bool = False) -> tuple[pl.Series, pl.Series]:
    """(document ids, query ids) of the corpus and queries of ``source`` (:func:`corpus_texts`,
    :func:`query_ids`): the ids a run file may name."""
    return (pl.Series("docid", list(corpus_texts(layout, source, "documents", allow_downloads=allow_downloads)),
                      dtype=pl.String),
            query_ids(layout, source, allow_downloads=allow_downloads))


def corpus_table(layout: str, source: str | Path, *, allow_downloads: bool = False) -> pl.DataFrame:
    """The corpus of ``source`` (:func:`corpus_texts`): ``doc_id, text``, one row per document in
    the source's order."""
    documents = corpus_texts(layout, source, "documents", allow_downloads=allow_downloads)
    return pl.DataFrame({"doc_id": list(documents), "text": list(documents.values())},
                        schema={"doc_id": pl.String, "text": pl.String})
