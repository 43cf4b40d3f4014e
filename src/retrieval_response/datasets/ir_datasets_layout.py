"""ir_datasets: a judged corpus read by its id through the ``ir_datasets`` package -> the texts table.

A dataset of layout ``ir_datasets`` is named by its ir_datasets id (``datasets.<name>.ir_datasets_id``,
e.g. ``beir/scifact/test``) instead of a file. Its documents, queries and qrels come from the
package's ``docs_iter``, ``queries_iter`` and ``qrels_iter`` and then follow the beir and trec
layouts' code path (``judged_corpus``): ids as strings (an integer id converted), a document's
text its ``title`` and ``text`` joined by a newline (the ``text`` alone without a title), a query's
its ``text``; a record type without a ``text`` field gives its ``default_text()``. Grades are kept,
the rows get the subset ``I``. Every bad record is one InputError naming ``ir_datasets <id> <docs |
queries | qrels>``, the record (``record N``, 1-based in the package's order) and the rule: a
blank or non-string text, a blank id, a repeated id, a grade that is not an integer within +-100
(``judged_corpus.grade``), a repeated (query, document) judgement, a judged id absent from the
corpus or the queries, or a record the package itself fails to read.

The package downloads a dataset's files on first use into its cache (``IR_DATASETS_HOME``,
default ``~/.ir_datasets``). Without permission to download, reading runs inside
``local_files_only``: a file that is neither in the cache nor at a local source is refused before
any network access, and the read fails with one line saying how to allow or make the download.
``check_available`` makes that check at start-up by reading the first record of each kind.
The package is imported only here, and only when a dataset of this layout is read or checked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext

import polars as pl

from retrieval_response.datasets.judged_corpus import Judgement, grade, joined_text, texts_table, unique_texts
from retrieval_response.infra.errors import InputError

SUBSET = "I"
KINDS = ("docs", "queries", "qrels")
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(?:/[A-Za-z0-9][A-Za-z0-9._-]*)*")
ID_MAX_LENGTH = 200
DOWNLOADS_KEY = "models.allow_downloads"


class DownloadRefused(Exception):
    """ir_datasets asked for a file that is not on disk while downloads are not allowed."""


def source_name(dataset_id: str, kind: str | None = None) -> str:
    """The name bad records of ``dataset_id`` are reported under: ``ir_datasets <id>`` (``<kind>``)."""
    return f"ir_datasets {dataset_id}" + (f" {kind}" if kind else "")


def check_id(dataset_id: object, path: object, record: str) -> None:
    """InputError(``path``, ``record``) unless ``dataset_id`` is a safe ir_datasets id: 1 to
    ID_MAX_LENGTH characters, '/'-separated segments of ASCII letters, digits and ``. _ -``, each
    starting with a letter or digit."""
    if not isinstance(dataset_id, str) or len(dataset_id) > ID_MAX_LENGTH or not ID_PATTERN.fullmatch(dataset_id):
        rule = (f"ir_datasets id {dataset_id!r} is not a safe id (1 to {ID_MAX_LENGTH} characters: '/'-separated "
                "segments of ASCII letters, digits and . _ -, each starting with a letter or digit)")
        raise InputError(path, record, rule)


def not_cached_rule(dataset_id: str) -> str:
    """The rule of a dataset whose files are not in the local cache while downloads are off."""
    import ir_datasets

    return (f"ir_datasets {dataset_id!r} is not in the ir_datasets cache ({ir_datasets.util.home_path()}) and downloads "
            f"are off: set '{DOWNLOADS_KEY}: true' in the config, or fetch it once with "
            f"`ir_datasets export {dataset_id} docs >/dev/null` (likewise queries and qrels)")


def on_disk(download) -> bool:
    """Whether the ir_datasets ``Download`` ``download`` can deliver its file without the network:
    fetched already, in the cache, or at a local source (a file the user placed or linked). Reads
    the attributes ``Download.path`` itself consults (ir_datasets 0.5.11, pinned): the package has
    no public test of a file being cached."""
    from ir_datasets.util import LocalDownload

    if download._path is not None:
        return True
    cache = download._cache_path
    if cache is not None and cache != os.devnull and os.path.exists(cache):
        return True
    return any(isinstance(mirror, LocalDownload) and mirror.path(force=False).exists() for mirror in download.mirrors)


@contextmanager
def local_files_only() -> Iterator[None]:
    """Within the block, every ir_datasets ``Download`` (the one class through which the package
    fetches remote files) whose file is not ``on_disk`` raises DownloadRefused instead of
    touching the network, before it logs anything; files on disk are read as usual."""
    from ir_datasets.util import Download, LocalDownload

    path, stream = Download.path, Download.stream

    def local_path(self, force=True):
        if force and not on_disk(self):
            raise DownloadRefused(self.mirrors)
        return path(self, force)

    def local_stream(self):
        if self._stream and not isinstance(self.mirrors[0], LocalDownload):
            raise DownloadRefused(self.mirrors)
        return stream(self)

    Download.path, Download.stream = local_path, local_stream
    try:
        yield
    finally:
        Download.path, Download.stream = path, stream


def load(dataset_id: str, path: object, record: str):
    """The ir_datasets dataset ``dataset_id``; InputError(``path``, ``record``) when the id is unsafe,
    the package is missing, the id is not registered or the dataset lacks docs, queries or qrels."""
    check_id(dataset_id, path, record)
    try:
        import ir_datasets
    except ImportError:
        raise InputError(path, record, "the ir_datasets package is not installed (pip install -r requirements.txt)") from None
    try:
        dataset = ir_datasets.load(dataset_id)
    except KeyError:
        rule = f"ir_datasets has no dataset {dataset_id!r} (`ir_datasets list` shows the registered ids)"
        raise InputError(path, record, rule) from None
    missing = [kind for kind in KINDS if not getattr(dataset, f"has_{kind}")()]
    if missing:
        rule = f"ir_datasets {dataset_id!r} has no {' and no '.join(missing)}; the layout needs docs, queries and qrels"
        raise InputError(path, record, rule)
    return dataset


def records(source: str, read: Callable[[], Iterable]) -> Iterator[tuple[str, object]]:
    """(``record N`` label, record) of each record of ``read()`` (an ir_datasets ``*_iter``). An error
    the package raises while reading record N becomes InputError(``source``, ``record N``), one line;
    DownloadRefused passes through."""
    number, iterator = 1, None
    while True:
        try:
            iterator = iter(read()) if iterator is None else iterator
            record = next(iterator)
        except StopIteration:
            return
        except DownloadRefused:
            raise
        except Exception as error:  # the package's parsers raise RuntimeError, ValueError, KeyError ...
            detail = (str(error).strip().splitlines() or [""])[0]
            rule = f"ir_datasets could not read it: {type(error).__name__}: {detail}"
            raise InputError(source, f"record {number}", rule) from None
        yield f"record {number}", record
        number += 1


def record_id(source: str, label: str, record, field: str) -> str:
    """``record.<field>`` as an id string: a non-blank string or an integer (converted)."""
    value = getattr(record, field)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise InputError(source, label, f"{field!r} must be a non-blank string or an integer, found {value!r}")
    return value


def record_text(source: str, label: str, record, with_title: bool) -> str:
    """The text of a document (``with_title``) or query record, as the beir layout builds it."""
    fields = getattr(record, "_fields", ())
    key = "text" if "text" in fields else "default_text()"
    text = record.text if key == "text" else record.default_text()
    if not isinstance(text, str):
        raise InputError(source, label, f"{key!r} must be a string, found {type(text).__name__}")
    if not text.strip():
        raise InputError(source, label, f"{key!r} is empty (a non-blank string is required)")
    title = record.title if with_title and key == "text" and "title" in fields else None
    if title is not None and not isinstance(title, str):
        raise InputError(source, label, "'title' must be a string")
    return joined_text(title, text)


def texts_of(dataset_id: str, kind: str, read: Callable[[], Iterable], id_field: str) -> dict[str, str]:
    """{id: text} of the ``kind`` (docs or queries) records of ``read()``; InputError at a bad record,
    a repeated id, or no record."""
    source = source_name(dataset_id, kind)
    ids, labels, texts = [], [], []
    for label, record in records(source, read):
        ids.append(record_id(source, label, record, id_field))
        labels.append(label)
        texts.append(record_text(source, label, record, with_title=kind == "docs"))
    return unique_texts(source, ids, labels, texts)


def judgements_of(dataset_id: str, read: Callable[[], Iterable]) -> list[Judgement]:
    """Judgements of the qrels records of ``read()``; InputError for a blank id or a grade that
    :func:`~.judged_corpus.grade` refuses."""
    source = source_name(dataset_id, "qrels")
    judgements = []
    for label, record in records(source, read):
        query_id = record_id(source, label, record, "query_id")
        document_id = record_id(source, label, record, "doc_id")
        judgements.append((query_id, document_id, grade(source, label, record.relevance), label))
    return judgements


def check_available(dataset_id: str, *, allow_downloads: bool, path: object, record: str) -> None:
    """InputError(``path``, ``record``) unless ``dataset_id`` can be read: a safe id of a registered
    dataset with docs, queries and qrels (``load``) that either may download or has the first record
    of each kind on disk (read under ``local_files_only``, never touching the network). A bad first
    record is its own InputError, as ``read`` reports it."""
    dataset = load(dataset_id, path, record)
    if allow_downloads:
        return
    try:
        with local_files_only():
            for kind in KINDS:
                next(records(source_name(dataset_id, kind), getattr(dataset, f"{kind}_iter")), None)
    except DownloadRefused:
        raise InputError(path, record, not_cached_rule(dataset_id)) from None


def corpus_texts(dataset_id: str, kind: str, *, allow_downloads: bool = False) -> dict[str, str]:
    """{id: text} of the ``documents`` or the ``queries`` (``kind``) of the ir_datasets dataset
    ``dataset_id``, as :func:`read` builds them (files on disk only, unless ``allow_downloads``)."""
    source = source_name(dataset_id)
    dataset = load(dataset_id, source, "dataset")
    read_kind, id_field = ("docs", "doc_id") if kind == "documents" else ("queries", "query_id")
    try:
        with nullcontext() if allow_downloads else local_files_only():
            return texts_of(dataset_id, read_kind, getattr(dataset, f"{read_kind}_iter"), id_field)
    except DownloadRefused:
        raise InputError(source, "dataset", not_cached_rule(dataset_id)) from None


def read(dataset_id: str, level: str | None = None, *, allow_downloads: bool = False,
         subset: str | None = None) -> tuple[pl.DataFrame, dict]:
    """Texts table (subset ``subset``, default I) of the ir_datasets dataset ``dataset_id`` and its
    notes (queries without judgements), as the beir layout gives them; ``level`` is unused. Without ``allow_downloads``
    only files on disk are read (``local_files_only``): a missing one is InputError, with no network
    access. InputError for a bad id, dataset or record (module docstring)."""
    source = source_name(dataset_id)
    dataset = load(dataset_id, source, "dataset")
    try:
        with nullcontext() if allow_downloads else local_files_only():
            documents = texts_of(dataset_id, "docs", dataset.docs_iter, "doc_id")
            queries = texts_of(dataset_id, "queries", dataset.queries_iter, "query_id")
            judgements = judgements_of(dataset_id, dataset.qrels_iter)
    except DownloadRefused:
        raise InputError(source, "dataset", not_cached_rule(dataset_id)) from None
    return texts_table(source_name(dataset_id, "qrels"), subset or SUBSET, judgements, queries, documents)
